package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.linecorp.armeria.client.WebClient;
import io.datcp.proto.v1.FlowKey;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.QuenchOutcome;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.scheduler.MutableClock;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.config.SchedulerConf;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Collections;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 5, the honest hosts' latency under attack: a node with a valid token of its own
 * that sends the largest valid messages as fast as it can is refused at call start once it has
 * sent more bytes than reports.maxBytesPerSecondPerHost and reports.burstBytesPerHost allow, at
 * the defaults, so the scheduler no longer reads (parses, allocates for) what it then refuses;
 * an honest host sending at that documented maximum is never refused. The budgets' clock is
 * stepped by the test, so nothing here depends on the machine's speed.
 */
class ByteBudgetTest {
  private static final long SECOND = 1_000_000_000L;
  private static final long RATE = 8L << 20;
  private static final long BURST = 32L << 20;

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private final AtomicLong nanos = new AtomicLong(1);
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private SchedulerServer server;

  private void start() throws Exception {
    server = servers.start(dir, clock, SchedulerConf.fromMap(Map.of("tls.plaintext", "true")),
        nanos::get);
  }

  private ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub plugin(String host) {
    return servers.asNode(server, host,
        ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
  }

  private FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub agent(String host) {
    return servers.asNode(server, host,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
  }

  private ShuffleEvent reduceStarted(String job, String host) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(clock.nanos()).setReduceStarted(
        ReduceStarted.newBuilder().setJobId(job).setReduceId(0).setHost(host).setTotalMaps(10)
            .setTotalReduces(1)).build();
  }

  /** The attacker's message: 30 map outputs of 10,000 partition sizes, about 1 MB. */
  private ShuffleReport largestReport(long n) {
    ShuffleReport.Builder b = ShuffleReport.newBuilder().setReporterId("evil-r").setBatchId(n + 1);
    for (int m = 0; m < 30; m++) {
      b.addEvents(ShuffleEvent.newBuilder().setTimeUnixNanos(clock.nanos()).setMapOutputIndexed(
          MapOutputIndexed.newBuilder().setJobId("job_666_1").setMapId((int) (n * 30 + m))
              .setHost("evil").addAllPartitionBytes(Collections.nCopies(10_000, 1_000_000L))));
    }
    return b.build();
  }

  private static void assertOverBudget(Runnable call) {
    assertThatThrownBy(call::run).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(e.getStatus().getDescription()).contains("reports.maxBytesPerSecondPerHost");
    });
  }

  private long refusedForBytes() {
    String metrics = WebClient.of("http://127.0.0.1:" + server.httpPort()).blocking()
        .get("/metrics").contentUtf8();
    return metrics.lines().filter(l -> l.startsWith("datcp_report_rejected_total")
        && l.contains("reason=\"bytes\"")).mapToLong(l -> (long) Double.parseDouble(
            l.substring(l.lastIndexOf(' ') + 1))).sum();
  }

  @Test
  void aHostSendingTheLargestMessagesAsFastAsItCanIsRefusedUnreadBeyondItsBudget()
      throws Exception {
    start();
    var evil = plugin("evil");
    // Calls start while the bucket holds bytes: the burst, overdrawn by the last message.
    long sent = 0;
    int answered = 0;
    while (sent < BURST) {
      ShuffleReport r = largestReport(answered);
      evil.report(r);
      sent += r.getSerializedSize();
      answered++;
    }
    assertThat(answered).isBetween(30, 40);

    // Every later call, large or small, is refused before the service sees it: a new job
    // would be running if it had been read.
    assertOverBudget(() -> evil.report(largestReport(1_000)));
    assertOverBudget(() -> evil.report(ShuffleReport.newBuilder()
        .addEvents(reduceStarted("job_666_2", "evil")).build()));
    assertThat(server.service().runningJobCount()).isZero();
    assertThat(refusedForBytes()).isEqualTo(2);

    // Its lookups and outcomes share the budget; another host is not affected.
    assertOverBudget(() -> agent("evil").reportOutcomes(FlowOutcomes.newBuilder().build()));
    assertThat(plugin("node1").report(ShuffleReport.newBuilder()
        .addEvents(reduceStarted("job_1_1", "node1")).build()).getAccepted()).isEqualTo(1);

    // The rate pays the overdraft back, then the host is read again.
    long debt = sent - BURST;
    nanos.addAndGet(debt * SECOND / RATE + SECOND / 1000);
    assertThat(evil.report(ShuffleReport.newBuilder()
        .addEvents(reduceStarted("job_666_2", "evil")).build()).getAccepted()).isEqualTo(1);
  }

  @Test
  void aRefusalIsAnsweredWhenTheHostsBudgetHoldsBytesAgainSoALoopWaitsForIt() throws Exception {
    server = servers.start(dir, clock, SchedulerConf.fromMap(Map.of("tls.plaintext", "true",
        "reports.maxBytesPerSecondPerHost", "1048576", "reports.burstBytesPerHost", "1048576")),
        nanos::get);
    var evil = plugin("evil");
    ShuffleReport large = largestReport(0);
    evil.report(large);
    evil.report(largestReport(1));
    // two messages of about 0.9 MB overdrew the 1 MiB bucket by about 0.75 MB: 0.7 s of its rate
    double debtSeconds = (2.0 * large.getSerializedSize() - (1 << 20)) / (1 << 20);
    assertThat(debtSeconds).isGreaterThan(0.5);

    long start = System.nanoTime();
    assertOverBudget(() -> evil.report(largestReport(2)));
    assertThat((System.nanoTime() - start) / 1e9).isGreaterThanOrEqualTo(debtSeconds);
    // still unread: the budget's clock has not moved, so the host is still in debt
    assertThat(refusedForBytes()).isEqualTo(1);
  }

  /** One of an agent's outcome batches: 1,000 flows of a Hadoop fetch's 20 maps each. */
  private static FlowOutcomes outcomeBatch(long n) {
    FlowOutcomes.Builder b = FlowOutcomes.newBuilder().setReporterId("node1-o").setBatchId(n + 1);
    for (int i = 0; i < 1000; i++) {
      b.addOutcomes(FlowOutcome.newBuilder().setJobId("job_1_1").setReduceId(0)
          .setSourceHost("node2").setDestinationHost("node1").setBytes(1_000_000L)
          .setStartUnixNanos(1).setFinishUnixNanos(2).setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE)
          .setFlow(FlowKey.newBuilder().setJobId("job_1_1").setReduceId(0).setSourceHost("node2")
              .addAllMapIds(IntStream.range(0, 20).boxed().toList())
              .setSourceAddress("10.0.0.2").setDestinationAddress("10.0.0.1")
              .setSourcePort((int) (n * 1000 + i) % 60_000 + 1).setDestinationPort(13562)));
    }
    return b.build();
  }

  @Test
  void aHostSendingAtItsDocumentedMaximumIsNeverRefused() throws Exception {
    start();
    var node1 = agent("node1");
    // The burst at once, then the rate each second for five seconds: never refused.
    long allowed = BURST;
    long sent = 0;
    long n = 0;
    for (int second = 0; second <= 5; second++) {
      if (second > 0) {
        nanos.addAndGet(SECOND);
        allowed += RATE;
      }
      FlowOutcomes next = outcomeBatch(n);
      while (sent + next.getSerializedSize() <= allowed) {
        node1.reportOutcomes(next);
        sent += next.getSerializedSize();
        next = outcomeBatch(++n);
      }
    }
    assertThat(sent).isGreaterThan(allowed - outcomeBatch(0).getSerializedSize());
    assertThat(refusedForBytes()).isZero();

    // At that maximum: what fits in the bucket is read, the call after that is refused.
    node1.reportOutcomes(outcomeBatch(n));
    FlowOutcomes over = outcomeBatch(n + 1);
    assertOverBudget(() -> node1.reportOutcomes(over));
  }
}
