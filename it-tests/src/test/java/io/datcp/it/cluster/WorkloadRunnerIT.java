package io.datcp.it.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.it.jobs.WorkloadSpec;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * docker/run-workload.sh end to end: the CI spec (about 6 jobs of a trace slice) with the system
 * off and on, one round each, on the shared cluster. Loose bounds only: every job succeeds and
 * its reduces count exactly the spec's bytes (the job client fails the run otherwise), the
 * kernel's shuffle connections are what each mode defines (the runner's mode check: cubic
 * without ECN off, datcp on), and on's mean completion time is not above 2x off's. The
 * images are those the pre-integration-test phase built; like the other ITs it runs under the
 * kernel lock that scripts/test.sh holds.
 */
class WorkloadRunnerIT {
  /** The spec run: the converter's CI slice of the Facebook trace (docker/workloads/). */
  static final String SPEC = System.getProperty("datcp.workload.ci-spec",
      "docker/workloads/fb-ci.json");
  /**
   * A guard against gross failures (a stalled shuffle waits out Hadoop's 180 s timeouts), not
   * a target: on this spec on is slower than off today, 1.16, 1.42, 1.50 and 1.51x in four
   * runs of 2026-11-25, its map tasks taking 11-18 s against 2-6 s off in the one examined
   * (cause not found yet: bench/results/workload/README.md). The comparison proper is the
   * benchmark's (docker/run-workload.sh).
   */
  static final double MAX_ON_OVER_OFF = 2.0;

  @Test
  void ciSpecOffAndOnSucceedWithTheirModesVerified() throws Exception {
    Path root = Path.of(System.getProperty("datcp.repo.root", "..")).toRealPath();
    Path spec = root.resolve(SPEC);
    WorkloadSpec parsed = WorkloadSpec.read(spec.toFile());
    Path out = Path.of("target", "workload-ci").toAbsolutePath();
    Files.createDirectories(out);
    // what a cluster run that died left behind: a network holding one of the compose file's
    // subnets (a fresh CI run of 2026-11-26 failed on it); the runner must remove it
    String stale = "datcp-stale-" + ProcessHandle.current().pid();
    assertThat(docker("network", "create", "--internal", "--label", "io.datcp.cluster=" + stale,
        "--subnet", DatcpCluster.FABRIC + ".1.0/24", stale)).as("docker network create").isZero();
    try {
      runWorkload(root, spec, parsed, out);
    } finally {
      docker("network", "rm", stale);
    }
  }

  private static void runWorkload(Path root, Path spec, WorkloadSpec parsed, Path out)
      throws Exception {
    Path log = Path.of("target", "workload-ci.log").toAbsolutePath();
    ProcessBuilder runner = new ProcessBuilder("bash",
        root.resolve("docker/run-workload.sh").toString(), "--spec", spec.toString(), "--modes",
        "off,on", "--rounds", "1", "--out", out.toString(), "--skip-build")
        .redirectErrorStream(true).redirectOutput(log.toFile());
    runner.environment().put("DATCP_KERNEL_LOCK_HELD", "1");
    Process p = runner.start();
    assertThat(p.waitFor(25, TimeUnit.MINUTES)).as("the runner finished in 25 min").isTrue();
    String output = Files.readString(log);
    System.out.println(output);
    assertThat(p.exitValue()).as("run-workload.sh's exit (output above)").isZero();

    JsonNode results = new ObjectMapper().readTree(out.resolve("results.json").toFile());
    assertThat(results.get("spec").asText()).isEqualTo(parsed.name());
    double[] mean = new double[2];
    List<String> modes = List.of("off", "on");
    for (int m = 0; m < 2; m++) {
      JsonNode mode = results.get("modes").get(modes.get(m));
      assertThat(mode.get("cc_seen").toString()).as(modes.get(m) + " cc_seen")
          .isEqualTo(m == 0 ? "[\"cubic\"]" : "[\"datcp\"]");
      for (WorkloadSpec.JobSpec j : parsed.jobs()) {
        JsonNode job = mode.get("jobs").get(j.name());
        assertThat(job.get("bytes").asLong()).as(modes.get(m) + " " + j.name() + " bytes")
            .isEqualTo(j.shuffleBytes());
        mean[m] += job.get("jct_s").asDouble() / parsed.jobs().size();
      }
    }
    System.out.printf("workload %s: mean JCT off %.1f s, on %.1f s, on/off %.2f%n",
        parsed.name(), mean[0], mean[1], mean[1] / mean[0]);
    assertThat(mean[1]).as("on's mean JCT vs off's").isLessThanOrEqualTo(mean[0] * MAX_ON_OVER_OFF);
    assertThat(new File(out.toFile(), "raw/off/round-1.json")).exists();
  }

  /** Runs the docker CLI; its exit status (output discarded). */
  private static int docker(String... args) throws Exception {
    String[] command = new String[args.length + 1];
    command[0] = "docker";
    System.arraycopy(args, 0, command, 1, args.length);
    return new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
  }
}
