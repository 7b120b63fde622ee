package io.datcp.it.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.datcp.it.cluster.DatcpCluster.Mode;
import io.datcp.it.jobs.WordCount;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.testcontainers.DockerClientFactory;

/**
 * Real MapReduce jobs on the Docker cluster, first with the system off (Hadoop's
 * ShuffleHandler, cubic, the ToR's RED/ECN ports), then on (the DATCP plugin, agent and
 * scheduler) when the node image carries the plugin and the agent. One cluster per mode.
 * The fault tests (issue 19 item 7) run last on the on cluster, each on the same word count:
 * the fault lands mid-shuffle, the job succeeds with the off run's output word by word, and
 * the time it lost against an undisturbed on run is printed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(OrderAnnotation.class)
class DockerClusterIT {
  static final long MAP_OUTPUT_BYTES = 10_000_000; // DATCP §4.4's 100 MB scaled by 1/10
  /**
   * A/B pairs per mode. Off, job B's copy varies 2.3-3.4 s from round to round (cubic's shares of
   * the port among four flows, the reduces' 1 s polls), so a median of five varied 2.5-3.2 s
   * and in 1 of 17 runs put the on/off ratio over its 0.75 target; nine narrow it by a quarter.
   */
  static final int AB_ROUNDS = 9;
  /** DATCP's job A/B as a workload spec, the demo's (docker/demo-ab.sh). */
  static final String AB_SPEC = "ab.json";
  static final long LINK_BITS_PER_SECOND = 100_000_000;
  static final ObjectMapper JSON = new ObjectMapper();
  /** Input of the fault tests' word count (see {@link #writeFaultJobInput}). */
  static final String FAULT_INPUT = "fault-in";
  /**
   * A fault is injected once this much has crossed the reducer's ToR port since the job began,
   * and proven to have landed mid-shuffle when as much crosses it after the fault: the job
   * shuffles ~66 MB, at most 12.5 MB/s through that port.
   */
  static final long FAULT_SHUFFLED_BYTES = 10_000_000;

  private Path data;
  private DatcpCluster cluster;
  private Map<String, Integer> expectedWords;
  private Map<String, String> wordCountOff;
  private JsonNode abOff;
  private Map<String, Integer> faultWords;
  /** The fault job's output with the system off: what every faulted run must produce. */
  private Map<String, Integer> faultJobOff;
  /** The fault job's time on the on-mode cluster, undisturbed: what a fault costs is against it. */
  private long faultJobUndisturbedMillis;

  @BeforeAll
  void createInput() throws IOException {
    data = Files.createTempDirectory("datcp-it-");
    expectedWords = writeWordCountInput(data.resolve("wc-in"));
    faultWords = writeFaultJobInput(data.resolve(FAULT_INPUT));
    Path root = Path.of(System.getProperty("datcp.repo.root", "..")).toRealPath();
    Files.copy(root.resolve("docker/workloads").resolve(AB_SPEC), data.resolve(AB_SPEC));
  }

  @AfterAll
  void removeEverything() throws IOException {
    DatcpCluster.stopAndDelete(cluster, data);
  }

  private DatcpCluster cluster(Mode mode) {
    if (cluster != null && cluster.mode() != mode) {
      cluster.stop();
      cluster = null;
    }
    if (cluster == null) {
      cluster = new DatcpCluster(mode, 3, data);
      cluster.start();
    }
    return cluster;
  }

  @Test
  @Order(1)
  void wordCountOffCountsEveryWordExactly() throws Exception {
    wordCountOff = runWordCount(cluster(Mode.OFF), "wc-off");
    Map<String, Integer> counted = new TreeMap<>();
    wordCountOff.values().forEach(text -> text.lines().forEach(line -> {
      String[] kv = line.split("\t");
      counted.put(kv[0], Integer.parseInt(kv[1]));
    }));
    assertThat(counted).isEqualTo(expectedWords);
  }

  @Test
  @Order(2)
  void faultJobOffIsTheReference() throws Exception {
    long start = System.nanoTime();
    faultJobOff = wordsOf(runFaultJob(cluster(Mode.OFF), data, "fault-off"));
    System.out.printf("fault job off: %d ms%n", (System.nanoTime() - start) / 1_000_000);
    assertThat(faultJobOff).isEqualTo(faultWords);
  }

  @Test
  @Order(3)
  void abScenarioOffShufflesThroughTheTorBottleneck() throws Exception {
    DatcpCluster c = cluster(Mode.OFF);
    abOff = runAb(c, "off", AB_ROUNDS, false);
    for (JsonNode round : abOff.get("rounds")) {
      assertCompleteShuffle(round);
      for (String job : List.of("jobA", "jobB")) {
        JsonNode j = round.get(job);
        j.get("reduces").forEach(r -> assertThat(r.get("host").asText()).isEqualTo(DatcpCluster.REDUCER));
        j.get("maps").forEach(m -> assertThat(m.get("host").asText()).isNotEqualTo(DatcpCluster.REDUCER));
      }
      // job B's 20 MB cannot cross a 100 Mbit/s port in less than 1.6 s: the ToR is the bottleneck
      long floorMillis = 2 * MAP_OUTPUT_BYTES * 8 * 1000 / LINK_BITS_PER_SECOND;
      JsonNode b = round.get("jobB");
      assertThat(b.get("copyMillis").asLong()).isGreaterThanOrEqualTo(floorMillis);
      // the copy begins with a fetch of a finished map: not before B's first map ended (its
      // maps end up to ~200 ms apart, so the copy may begin before the last one did)
      long copyEnd = b.get("lastMapFinishMillis").asLong() + b.get("shuffleMillis").asLong();
      long firstMapEnd = Long.MAX_VALUE;
      for (JsonNode m : b.get("maps")) {
        firstMapEnd = Math.min(firstMapEnd, m.get("finishMillis").asLong());
      }
      assertThat(b.get("copyMillis").asLong()).isLessThanOrEqualTo(copyEnd - firstMapEnd);
    }
    // and the reducer's port saw every shuffled byte, all in the standard band: with the system
    // off no socket carries a precedence class, so the ToR's priority bands change nothing
    long[] bands = bandBytes(torPort(c, DatcpCluster.REDUCER));
    assertThat(bands[0] + bands[1] + bands[2]).isGreaterThanOrEqualTo(6 * MAP_OUTPUT_BYTES);
    assertThat(bands[0]).as("bytes in the high band, system off").isZero();
    assertThat(bands[2]).as("bytes in the low band, system off").isZero();
  }

  @Test
  @Order(4)
  void onModeAgentsPutShuffleSocketsOnDatcp() throws Exception {
    requireDatcpImage();
    DatcpCluster c = cluster(Mode.ON);
    // the ToR loaded datcp without sockops before the agents started: they must attach it
    Awaitility.await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500))
        .untilAsserted(() -> {
          for (String nm : c.nodeManagers()) {
            JsonNode status = JSON.readTree(c.exec(nm, "/opt/datcp/kmod/datcpctl", "status",
                "--json").getStdout());
            assertThat(status.get("sockops_attached").asBoolean()).as(nm + " " + status).isTrue();
            assertThat(status.toString()).as(nm).contains("13562");
          }
        });
    // a reducer's connection to a shuffle port runs datcp from its SYN on (ECN negotiated): a
    // route's congctl once overrode it after sockops, and the ToR's marks went unanswered
    String cc = c.exec(DatcpCluster.REDUCER, "perl", "-MSocket", "-e",
        "socket(S, PF_INET, SOCK_STREAM, 6) or die $!; connect(S, sockaddr_in(13562, inet_aton('"
            + c.ipOf("nm1") + "'))) or die $!; print unpack('Z*', getsockopt(S, 6, 13))")
        .getStdout();
    assertThat(cc).as("congestion control of a reducer's shuffle connection").isEqualTo("datcp");
  }

  @Test
  @Order(5)
  void abScenarioOnMeetsJobBsDeadlineWithoutDelayingJobA() throws Exception {
    requireDatcpImage();
    assumeTrue(abOff != null, "needs the off run");
    long[] before = bandBytes(torPort(cluster(Mode.ON), DatcpCluster.REDUCER));
    JsonNode on = runAb(cluster(Mode.ON), "on", AB_ROUNDS, true);
    on.get("rounds").forEach(DockerClusterIT::assertCompleteShuffle);
    // precedence reached the switch: the first job's flows (high class, AF41) crossed the
    // reducer's port in band 0, most of job B's bytes; flows of a job waiting for maps (low
    // class, CS1) in band 2
    long[] after = bandBytes(torPort(cluster(Mode.ON), DatcpCluster.REDUCER));
    assertThat(after[0] - before[0]).as("bytes in the high band")
        .isGreaterThanOrEqualTo(AB_ROUNDS * MAP_OUTPUT_BYTES);
    assertThat(after[2] - before[2]).as("bytes in the low band").isPositive();
    // DATCP Fig. 14's measure: the time job B's flows take, from its first fetch to its last byte
    long offB = abOff.get("median").get("jobB").get("copyMillis").asLong();
    long onB = on.get("median").get("jobB").get("copyMillis").asLong();
    // job A's completion less the wait for its reduce's 1 s poll to bring its last maps: that
    // wait is chance (0-1 s, the same on and off) and alone exceeds 5 % of A's ~7 s
    long offA = abOff.get("median").get("jobA").get("completionLessPollMillis").asLong();
    long onA = on.get("median").get("jobA").get("completionLessPollMillis").asLong();
    // The targets, on medians of the rounds: B <= 0.75x, A <= 1.05x. With the ToR's
    // priority bands B's medians of five ran 0.56-0.76x (0.76 in 1 of 17 runs) and A's
    // 1.00-1.02x; without them, B's ran 0.60-0.79x (a 0.85x bound was asserted then)
    System.out.printf("A/B medians: job B copy on/off %d/%d ms = %.2f, job A completion less"
        + " poll wait on/off %d/%d ms = %.2f%n", onB, offB, (double) onB / offB, onA, offA,
        (double) onA / offA);
    assertThat(onB).as("job B copy time on vs off (medians)").isLessThanOrEqualTo(offB * 75 / 100);
    assertThat(onA).as("job A completion on vs off (medians)").isLessThanOrEqualTo(offA * 105 / 100);
    // the scheduler's records: job B's flows had deadlines and, in at least 4 of every 5 rounds,
    // every one finished by it (DATCP gives no guarantee: in a round where B's second map is
    // learnt a poll late, that map's flow starts a second into a deadline planned for both)
    int met = 0;
    List<String> missed = new ArrayList<>();
    for (JsonNode round : on.get("rounds")) {
      String jobB = round.get("jobB").get("jobId").asText();
      JsonNode flows = JSON.readTree(cluster.schedulerApi("/api/v1/flows?job=" + jobB))
          .get("flows");
      assertThat(flows).as(jobB + " flows").isNotEmpty();
      boolean all = true;
      for (JsonNode f : flows) {
        assertThat(f.get("deadlineUnixNanos").asLong()).as(jobB + " flow deadline").isPositive();
        if (f.get("finishUnixNanos").asLong() == 0 || !f.get("met").asBoolean()) {
          all = false;
          missed.add(f.toString());
        }
      }
      met += all ? 1 : 0;
    }
    System.out.printf("A/B: job B's flows all met their deadline in %d of %d rounds%n", met,
        AB_ROUNDS);
    assertThat(met).as("rounds where all of job B's flows met their deadline; missed: " + missed)
        .isGreaterThanOrEqualTo(AB_ROUNDS * 4 / 5);
  }

  @Test
  @Order(6)
  void wordCountOnIsByteIdenticalToOff() throws Exception {
    requireDatcpImage();
    assumeTrue(wordCountOff != null, "needs the off run");
    assertThat(runWordCount(cluster(Mode.ON), "wc-on")).isEqualTo(wordCountOff);
  }

  @Test
  @Order(7)
  void faultJobOnUndisturbedIsTheTimeReference() throws Exception {
    requireDatcpImage();
    assumeTrue(faultJobOff != null, "needs the off run");
    long start = System.nanoTime();
    assertThat(wordsOf(runFaultJob(cluster(Mode.ON), data, "fault-on")))
        .as("on vs off, word by word").isEqualTo(faultJobOff);
    faultJobUndisturbedMillis = (System.nanoTime() - start) / 1_000_000;
    System.out.printf("fault job on, undisturbed: %d ms%n", faultJobUndisturbedMillis);
  }

  @Test
  @Order(8)
  void killingTheAgentsWhileBytesFlowLosesNoWord() throws Exception {
    requireDatcpImage();
    assumeTrue(faultJobUndisturbedMillis > 0, "needs the undisturbed run");
    DatcpCluster c = cluster(Mode.ON);
    faultRun(c, "agents killed while bytes flow", "fault-kill-agents", () -> {
      long live = 0;
      for (String nm : c.nodeManagers()) {
        live += metric(c.exec(nm, "curl", "-fsS", "http://localhost:9464/metrics").getStdout(),
            "datcp_agent_flows_live");
      }
      assertThat(live).as("flows the agents track when they are killed").isPositive();
      for (String nm : c.nodeManagers()) {
        c.exec(nm, "sh", "-c", "pid=$(cat /run/datcp/agent.pid); kill -KILL $pid; " + UNTIL_GONE);
      }
    });
    restartAgents(c); // the next faults need them
  }

  @Test
  @Order(9)
  void restartingTheTorsAgentMidShuffleLosesNoWord() throws Exception {
    requireDatcpImage();
    assumeTrue(faultJobUndisturbedMillis > 0, "needs the undisturbed run");
    DatcpCluster c = cluster(Mode.ON);
    faultRun(c, "ToR agent restarted", "fault-restart-tor-agent", () -> {
      c.exec("tor", "sh", "-c", "pid=$(cat /run/datcp-agent.pid); kill -TERM $pid; "
          + UNTIL_GONE + "; nohup java -Xmx256m -jar /opt/datcp/agent/datcp-agent.jar --config"
          + " /etc/datcp/agent.properties >>/tmp/datcp-agent.log 2>&1 & echo $! >/run/datcp-agent.pid");
      // the restarted agent is up: a second start-up line in the log the first one began
      Awaitility.await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(200))
          .until(() -> c.exec("tor", "grep", "-c", "datcp agent ready",
              "/tmp/datcp-agent.log").getStdout().trim().equals("2"));
    });
  }

  @Test
  @Order(10)
  void killingTheSchedulerMidShuffleWithTheAgentsAliveLosesNoWord() throws Exception {
    requireDatcpImage();
    assumeTrue(faultJobUndisturbedMillis > 0, "needs the undisturbed run");
    DatcpCluster c = cluster(Mode.ON);
    faultRun(c, "scheduler killed", "fault-kill-scheduler", () -> c.node("scheduler")
        .getDockerClient().killContainerCmd(c.node("scheduler").getContainerId()).exec());
    // the agents lived through it and saw the scheduler go
    for (String nm : c.nodeManagers()) {
      String metrics = c.exec(nm, "curl", "-fsS", "http://localhost:9464/metrics").getStdout();
      assertThat(metric(metrics, "datcp_agent_scheduler_up")).as(nm + " scheduler up").isZero();
    }
  }

  // ---- helpers

  private interface Action {
    void run() throws Exception;
  }

  /**
   * Shell: waits up to 30 s until process $pid has exited. A zombie counts as gone (a process
   * started by docker exec is reaped by the container's first process, which may never reap).
   */
  private static final String UNTIL_GONE = "for _ in $(seq 150); do [ -e /proc/$pid ] &&"
      + " ! grep -q '^State:.*Z' /proc/$pid/status 2>/dev/null || break; sleep 0.2; done;"
      + " ! { [ -e /proc/$pid ] && ! grep -q '^State:.*Z' /proc/$pid/status; }";

  /**
   * Runs the fault job on {@code c} and does {@code fault} once its shuffle is under way (a
   * tenth of its bytes crossed the reducer's ToR port); the job must succeed with the off run's
   * output, word by word, and as many bytes must cross the port after the fault (so it landed
   * mid-shuffle). Prints the time the job lost against the undisturbed run.
   */
  private void faultRun(DatcpCluster c, String fault, String out, Action action) throws Exception {
    String port = torPortDev(c, DatcpCluster.REDUCER);
    long before = portBytes(c, port);
    long start = System.nanoTime();
    CompletableFuture<Map<String, String>> job = CompletableFuture.supplyAsync(() -> {
      try {
        return runFaultJob(c, data, out);
      } catch (Exception e) {
        throw new CompletionException(e);
      }
    });
    Awaitility.await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(100))
        .until(() -> job.isDone() || portBytes(c, port) - before >= FAULT_SHUFFLED_BYTES);
    assertThat(job).as("the job ended before its shuffle was under way").isNotDone();
    long atFault = portBytes(c, port);
    action.run();
    Map<String, Integer> words = wordsOf(job.get(5, TimeUnit.MINUTES));
    long millis = (System.nanoTime() - start) / 1_000_000;
    long after = portBytes(c, port) - atFault;
    System.out.printf("fault job, %s: %d ms vs %d ms undisturbed: lost %d ms (%d MB before the"
        + " fault, %d MB after)%n", fault, millis, faultJobUndisturbedMillis,
        millis - faultJobUndisturbedMillis, (atFault - before) / 1_000_000, after / 1_000_000);
    assertThat(after).as("bytes through the reducer's port after the fault: it landed mid-shuffle")
        .isGreaterThanOrEqualTo(FAULT_SHUFFLED_BYTES);
    assertThat(words).as("output with the fault vs off, word by word").isEqualTo(faultJobOff);
  }

  /** Starts the NodeManagers' agents again and waits until their shuffle services subscribed. */
  private static void restartAgents(DatcpCluster c) throws Exception {
    for (String nm : c.nodeManagers()) {
      c.exec(nm, "/opt/datcp/bin/start-agent.sh");
    }
    Awaitility.await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(500))
        .untilAsserted(() -> {
          for (String nm : c.nodeManagers()) {
            var r = c.node(nm).execInContainer("curl", "-fsS", "http://localhost:9464/metrics");
            assertThat(r.getExitCode()).as(nm + " agent metrics").isZero();
            assertThat(metric(r.getStdout(), "datcp_agent_orders_subscribers"))
                .as(nm + " shuffle service subscribed to the restarted agent").isPositive();
          }
        });
  }

  /** The value of an unlabelled metric in Prometheus text. */
  static long metric(String text, String name) {
    return text.lines().filter(l -> l.startsWith(name + " ")).findFirst()
        .map(l -> (long) Double.parseDouble(l.substring(name.length() + 1).trim()))
        .orElseThrow(() -> new AssertionError("no metric " + name + " in\n" + text));
  }

  /** Both jobs of one round succeeded and moved exactly their map outputs. */
  private static void assertCompleteShuffle(JsonNode round) {
    assertThat(round.get("jobA").get("state").asText()).isEqualTo("SUCCEEDED");
    assertThat(round.get("jobB").get("state").asText()).isEqualTo("SUCCEEDED");
    assertThat(round.get("jobA").get("reduceShuffleBytes").asLong())
        .isBetween(4 * MAP_OUTPUT_BYTES, 4 * MAP_OUTPUT_BYTES * 101 / 100);
    assertThat(round.get("jobB").get("reduceShuffleBytes").asLong())
        .isBetween(2 * MAP_OUTPUT_BYTES, 2 * MAP_OUTPUT_BYTES * 101 / 100);
  }

  /** The job client's arguments for the cluster's mode (the reduce-side plugin when on). */
  private static List<String> jobClient(DatcpCluster c, String mainClass) {
    return c.mode() == Mode.ON
        ? List.of("datcp-job", mainClass, "-D", DatcpCluster.CONSUMER_PLUGIN)
        : List.of("datcp-job", mainClass);
  }

  private static String[] command(List<String> head, String... tail) {
    return Stream.concat(head.stream(), Stream.of(tail)).toArray(String[]::new);
  }

  /**
   * Runs the A/B spec (docker/workloads/ab.json) for {@code rounds} rounds through the workload
   * runner's job client, one round at a time. Returns per round the jobs' history details
   * ({@code jobA}, {@code jobB}) and per job the median of every time over the rounds;
   * completions count from the maps' release (the wait at the barrier is set-up). With {@code
   * records}, each round's records (see {@link #keepRecords}) go beside its results.
   */
  private JsonNode runAb(DatcpCluster c, String label, int rounds, boolean records)
      throws Exception {
    Path keep = Path.of("target", "ab");
    Files.createDirectories(keep);
    ArrayNode all = JSON.createArrayNode();
    for (int i = 1; i <= rounds; i++) {
      String work = rounds == 1 ? "/data/ab-" + label : "/data/ab-" + label + "/round-" + i;
      String out = "ab-" + label + "-round-" + i + ".json";
      c.exec("rm", command(jobClient(c, "io.datcp.it.jobs.WorkloadScenario"), "--spec",
          "/data/" + AB_SPEC, "--work", work, "--out", "/data/" + out, "--label",
          label + "-" + i));
      Files.copy(data.resolve(out), keep.resolve(out), StandardCopyOption.REPLACE_EXISTING);
      JsonNode result = JSON.readTree(data.resolve(out).toFile());
      if (records) {
        keepRecords(c, label + " round " + i, result,
            keep.resolve("ab-" + label + "-round-" + i + "-records.json"));
      }
      long release = result.get("releaseMillis").asLong();
      ObjectNode round = JSON.createObjectNode();
      for (String job : List.of("A", "B")) {
        ObjectNode history = (ObjectNode) result.get("jobs").get(job).get("history");
        for (String key : List.of("completionMillis", "completionLessPollMillis")) {
          history.put(key, history.get(key).asLong() - release);
        }
        round.set("job" + job, history);
      }
      System.out.printf("A/B %s round %d: job B copy %d ms, shuffle %d ms; job A completion"
          + " less poll wait %d ms%n", label, i, round.get("jobB").get("copyMillis").asLong(),
          round.get("jobB").get("shuffleMillis").asLong(),
          round.get("jobA").get("completionLessPollMillis").asLong());
      all.add(round);
    }
    ObjectNode median = JSON.createObjectNode();
    for (String job : List.of("jobA", "jobB")) {
      ObjectNode m = median.putObject(job);
      for (String key : List.of("lastMapFinishMillis", "shuffleMillis", "copyMillis",
          "completionMillis", "pollWaitMillis", "completionLessPollMillis")) {
        long[] v = new long[rounds];
        for (int i = 0; i < rounds; i++) {
          v[i] = all.get(i).get(job).get(key).asLong();
        }
        Arrays.sort(v);
        m.put(key, v[(rounds - 1) / 2]); // the lower middle one for even counts
      }
    }
    ObjectNode result = JSON.createObjectNode();
    result.put("label", label);
    result.set("rounds", all);
    result.set("median", median);
    JSON.writerWithDefaultPrettyPrinter().writeValue(keep.resolve("ab-" + label + ".json")
        .toFile(), result);
    return result;
  }

  /**
   * What the system did in a round, for diagnosis (a round where job B's flows miss their
   * deadline is otherwise gone with the cluster): the scheduler's flow records of both jobs and,
   * per NodeManager, the shuffle service's DATCP counters (register timeouts, suspends) and the
   * agent's metrics, both cumulative since the cluster started. Prints job B's flows.
   */
  private static void keepRecords(DatcpCluster c, String round, JsonNode result, Path file)
      throws Exception {
    ObjectNode records = JSON.createObjectNode();
    ObjectNode flows = records.putObject("flows");
    StringBuilder line = new StringBuilder();
    for (String job : List.of("A", "B")) {
      String id = result.get("jobs").get(job).get("history").get("jobId").asText();
      JsonNode f = JSON.readTree(c.schedulerApi("/api/v1/flows?job=" + id)).get("flows");
      flows.set(job, f);
      if ("B".equals(job)) {
        for (JsonNode flow : f) {
          long start = flow.get("startUnixNanos").asLong();
          line.append(String.format(" %s %d ms (deadline %d ms, met %s, quench %s);",
              flow.get("sourceHost").asText(),
              (flow.get("finishUnixNanos").asLong() - start) / 1_000_000,
              (flow.get("deadlineUnixNanos").asLong() - start) / 1_000_000,
              flow.get("met").asText(), flow.get("quench").asText()));
        }
      }
    }
    ObjectNode shuffle = records.putObject("shuffleService");
    ObjectNode agents = records.putObject("agentMetrics");
    long timeouts = 0;
    for (String nm : c.nodeManagers()) {
      JsonNode jmx = JSON.readTree(c.exec(nm, "curl", "-fsS",
          "http://localhost:8042/jmx?qry=Hadoop:name=DatcpShuffleFlows,*").getStdout());
      shuffle.set(nm, jmx);
      for (JsonNode bean : jmx.path("beans")) {
        timeouts += bean.path("RegisterTimeouts").asLong();
      }
      agents.put(nm, c.exec(nm, "curl", "-fsS", "http://localhost:9464/metrics").getStdout());
    }
    JSON.writerWithDefaultPrettyPrinter().writeValue(file.toFile(), records);
    System.out.printf("A/B %s: job B's flows:%s register timeouts so far %d%n", round, line,
        timeouts);
  }

  /** part file name -> content of the job's output. */
  private Map<String, String> runWordCount(DatcpCluster c, String out) throws Exception {
    c.exec("rm", command(jobClient(c, "io.datcp.it.jobs.WordCount"), "/data/wc-in", "/data/" + out, "3"));
    Map<String, String> parts = new TreeMap<>();
    try (Stream<Path> files = Files.list(data.resolve(out))) {
      for (Path p : files.filter(f -> f.getFileName().toString().startsWith("part-")).toList()) {
        parts.put(p.getFileName().toString(), Files.readString(p));
      }
    }
    assertThat(parts).hasSize(3);
    return parts;
  }

  /**
   * The fault tests' word count: no combiner, so all ~66 MB of tokens cross the shuffle; maps
   * placed on the map nodes and both reduces on the reducer node as the A/B's (5 vcores, 3072 MB:
   * docker/README.md, "Placing the A/B tasks"), so every shuffled byte crosses the reducer's
   * ToR port. Returns part file name -> content.
   */
  static Map<String, String> runFaultJob(DatcpCluster c, Path data, String out)
      throws Exception {
    c.exec("rm", command(jobClient(c, "io.datcp.it.jobs.WordCount"), "-D",
        WordCount.COMBINE + "=false", "-D", "mapreduce.map.cpu.vcores=5", "-D",
        "mapreduce.reduce.memory.mb=3072", "/data/" + FAULT_INPUT, "/data/" + out, "2"));
    Map<String, String> parts = new TreeMap<>();
    try (Stream<Path> files = Files.list(data.resolve(out))) {
      for (Path p : files.filter(f -> f.getFileName().toString().startsWith("part-")).toList()) {
        parts.put(p.getFileName().toString(), Files.readString(p));
      }
    }
    assertThat(parts).hasSize(2);
    return parts;
  }

  /** word -> count over a word count's part files. */
  static Map<String, Integer> wordsOf(Map<String, String> parts) {
    Map<String, Integer> words = new TreeMap<>();
    parts.values().forEach(text -> text.lines().forEach(line -> {
      String[] kv = line.split("\t");
      assertThat(words.put(kv[0], Integer.parseInt(kv[1]))).as("word " + kv[0] + " twice")
          .isNull();
    }));
    return words;
  }

  /** Bytes a ToR port's counters show per priority band (0 first). */
  private static long[] bandBytes(JsonNode port) {
    assertThat(port.get("bands")).as("port counters " + port).hasSize(3);
    long[] bytes = new long[3];
    for (JsonNode band : port.get("bands")) {
      bytes[band.get("band").asInt()] = band.get("bytes").asLong();
    }
    return bytes;
  }

  /** The ToR's counters of the port that leads to {@code host}. */
  private static JsonNode torPort(DatcpCluster c, String host) throws Exception {
    return portCounters(c, torPortDev(c, host));
  }

  /** The ToR's interface toward {@code host}. */
  static String torPortDev(DatcpCluster c, String host) throws Exception {
    String route = c.exec("tor", "ip", "-o", "route", "get", c.ipOf(host)).getStdout();
    return route.replaceAll("(?s).* dev (\\S+).*", "$1");
  }

  private static JsonNode portCounters(DatcpCluster c, String dev) throws Exception {
    return JSON.readTree(c.exec("tor", "/opt/datcp/kmod/datcpctl", "switch", "counters",
        "--dev", dev, "--json").getStdout());
  }

  /** Bytes a ToR port sent, all bands. */
  static long portBytes(DatcpCluster c, String dev) throws Exception {
    long[] bands = bandBytes(portCounters(c, dev));
    return bands[0] + bands[1] + bands[2];
  }

  /**
   * The on-mode tests fail (not skip) without the plugin and agent in the image: a skipped
   * on-mode suite would pass a build whose plugin did not package.
   */
  static void requireDatcpImage() throws InterruptedException {
    assertThat(imageHasDatcp()).as("the node image has no DATCP shuffle plugin and agent:"
        + " build shuffle-plugin/target/datcp-shuffle-plugin.jar and agent/target/datcp-agent.jar"
        + " (mvn package -DskipTests) before the it-tests").isTrue();
  }

  private static boolean imageHasDatcp() throws InterruptedException {
    var docker = DockerClientFactory.instance().client();
    var id = docker.createContainerCmd(DatcpCluster.HADOOP_IMAGE)
        .withEntrypoint("sh", "-c", "ls /opt/datcp/plugin/*.jar /opt/datcp/agent/*.jar").exec().getId();
    try {
      docker.startContainerCmd(id).exec();
      return docker.waitContainerCmd(id).start().awaitStatusCode() == 0;
    } finally {
      docker.removeContainerCmd(id).withForce(true).exec();
    }
  }

  /**
   * The fault tests' input: three files (one map each) of 920,000 tokens drawn from 5,000 words
   * of 16 characters; without a combiner each token is 23 bytes of map output, ~66 MB in all.
   * Returns the exact counts.
   */
  static Map<String, Integer> writeFaultJobInput(Path dir) throws IOException {
    return writeFaultJobInput(dir, 46_000);
  }

  /** As {@link #writeFaultJobInput(Path)} with {@code lines} lines of 20 tokens per file. */
  static Map<String, Integer> writeFaultJobInput(Path dir, int lines) throws IOException {
    Files.createDirectories(dir);
    String[] vocabulary = new String[5000];
    for (int i = 0; i < vocabulary.length; i++) {
      vocabulary[i] = String.format("shuffleword%05d", i);
    }
    Random random = new Random(19);
    Map<String, Integer> counts = new TreeMap<>();
    for (int f = 0; f < 3; f++) {
      StringBuilder text = new StringBuilder();
      for (int line = 0; line < lines; line++) {
        for (int w = 0; w < 20; w++) {
          String word = vocabulary[random.nextInt(vocabulary.length)];
          counts.merge(word, 1, Integer::sum);
          text.append(w == 0 ? "" : " ").append(word);
        }
        text.append('\n');
      }
      Files.writeString(dir.resolve("part" + f + ".txt"), text, StandardCharsets.UTF_8);
    }
    return counts;
  }

  /** Three files of words drawn from a fixed vocabulary; returns the exact counts. */
  private static Map<String, Integer> writeWordCountInput(Path dir) throws IOException {
    Files.createDirectories(dir);
    Random random = new Random(8);
    Map<String, Integer> counts = new TreeMap<>();
    for (int f = 0; f < 3; f++) {
      StringBuilder text = new StringBuilder();
      for (int line = 0; line < 40_000; line++) {
        for (int w = 0; w < 12; w++) {
          String word = "w" + random.nextInt(5000);
          counts.merge(word, 1, Integer::sum);
          text.append(w == 0 ? "" : " ").append(word);
        }
        text.append('\n');
      }
      Files.writeString(dir.resolve("part" + f + ".txt"), text, StandardCharsets.UTF_8);
    }
    return counts;
  }
}
