package io.datcp.scheduler.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.config.SchedulerConf;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The attacker in a JVM of its own (run-hostile.sh ATTACKER_JVM): warm-up, then the attack. */
class HostileAttackerTest {
  /** HostileClient's summary, as the in-process attacker prints it. */
  private static final String SUMMARY_LINE = "attacker +\\d+ calls/s answered \\(\\d+ MB/s"
      + " sent\\), \\d+ calls refused whole, \\d+ events/outcomes refused one by one";
  /** What the attack cost the attacker's JVM. */
  private static final String JVM_COST =
      "its JVM \\d+\\.\\d% of one core, JIT \\d+ ms compiling, elapsed";

  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  @TempDir Path dir;

  @Test
  void warmsUpOnTheThrowawaySchedulerThenAttacksTheMeasuredOneWhenTold() throws Exception {
    SchedulerConf conf = SchedulerConf.fromMap(Map.of("tls.plaintext", "true",
        "jobs.attributesFrom", "reports"));
    SchedulerServer throwaway = servers.start(dir.resolve("throwaway"), Clock.systemUTC(), conf);
    SchedulerServer measured = servers.start(dir.resolve("measured"), Clock.systemUTC(), conf);
    AttackSignals signals = new AttackSignals(dir.resolve("signals"));
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    CompletableFuture<Void> attacker = CompletableFuture.runAsync(() -> {
      try {
        HostileClient.attackFromOwnJvm("http://127.0.0.1:" + throwaway.grpcPort(),
            throwaway.nodes().mint("evil"), 1, "http://127.0.0.1:" + measured.grpcPort(),
            measured.nodes().mint("evil"), 1, 1, 1, 1, 0, signals,
            new PrintStream(printed, true, StandardCharsets.UTF_8));
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!dir.resolve("signals/ready").toFile().exists() && System.nanoTime() < deadline) {
      TimeUnit.MILLISECONDS.sleep(20);
    }
    assertThat(printed.toString(StandardCharsets.UTF_8)).matches(SUMMARY_LINE
        + " \\(warm-up, throwaway scheduler; " + JVM_COST + "\\)\\R");
    assertThat(attackersJobs(throwaway)).as("the warm-up attacked the throwaway").isPositive();
    assertThat(attackersJobs(measured)).as("and not yet the measured one").isZero();
    signals.startAttack(1);
    String summary = signals.awaitSummary(1, Duration.ofSeconds(60));
    attacker.get(60, TimeUnit.SECONDS);
    assertThat(summary).matches(SUMMARY_LINE + " \\(own JVM, 1 s warm-up; " + JVM_COST + "\\)");
    assertThat(attackersJobs(measured)).as("the attack went to the measured one").isPositive();
  }

  @Test
  void attackerWithoutSignalDirectoryIsRefusedNamingTheOption() {
    assertThat(refusal("--hostile-attacker", "--hostile-token", "t"))
        .contains("--hostile-signal-dir");
  }

  @Test
  void warmUpWithoutItsTargetIsRefusedNamingTheOptions() {
    assertThat(refusal("--hostile-attacker", "--hostile-token", "t", "--hostile-signal-dir",
        dir.toString(), "--hostile-warmup-seconds", "5")).contains("--hostile-warmup-target");
  }

  @Test
  void negativeSettleIsRefusedNamingTheOption() {
    assertThat(refusal("--hostile-settle-seconds", "-1"))
        .contains("--hostile-settle-seconds must be 0 or more");
  }

  /** What LoadBenchmark prints when it refuses {@code args} as a usage error (exit code 2). */
  private static String refusal(String... args) {
    StringWriter err = new StringWriter();
    int code = new CommandLine(new LoadBenchmark()).setErr(new PrintWriter(err)).execute(args);
    assertThat(code).isEqualTo(2);
    return err.toString();
  }

  /** Jobs the attacker (job ids job_666_...) has started on {@code server}. */
  private static long attackersJobs(SchedulerServer server) {
    return server.service().jobs().stream().filter(j -> j.id().startsWith("job_666_")).count();
  }
}
