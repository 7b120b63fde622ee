package io.datcp.it.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.it.cluster.DatcpCluster.Mode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.testcontainers.containers.Container.ExecResult;

/**
 * Issue 19 item 10 on the Docker cluster's HA variant: a ZooKeeper server, two schedulers
 * electing a leader on it, agents given both. A rule is put through the leader, the fault
 * tests' word count (twice its input, so its shuffle outlasts a failover) starts, and the
 * leader is killed with SIGKILL mid-shuffle, once its maps are all done. The other scheduler must
 * lead, answer node calls, know the running job on the reducer host (the agents send its
 * reduces' state again, see agent/README.md) with the rule in force, and the job's output must
 * be exact, word by word, and the new leader must have a plan for the job there (the map
 * nodes' agents, which make no call once their maps are done, find the dead leader by the
 * heartbeats missing on their update streams or a failed call and send the partition sizes
 * indexed on them again) within a bound derived from the election's measured time (see
 * {@link #planBoundMillis}). Prints the times and how many of the job's flows the new leader
 * gave a deadline.
 * A few minutes, most of it the cluster's start.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DockerHaIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String RULE = "ha-failover";
  /** Any job (no criterion), once the ResourceManager named its queue and user. */
  private static final String RULE_JSON = "{\"order\":1,\"importance\":3,\"phi\":0.5,"
      + "\"mode\":\"datcp\",\"quenchMode\":\"suspend\"}";
  private static final String NODE = DatcpCluster.REDUCER;
  private static final String NODE_TLS = "/data/node-tls/" + NODE + "/";
  /** gRPC's UNAVAILABLE: what a follower (or no one) answers a node call with. */
  private static final int UNAVAILABLE = 14;
  /** The HA cluster's watch.heartbeatMillis (docker/scheduler/scheduler-entrypoint.sh). */
  private static final long HEARTBEAT_MILLIS = 1_000;
  /** Heartbeats an agent misses before it takes its scheduler for dead (SchedulerClient). */
  private static final long HEARTBEATS_MISSED = 3;
  /** The agents' scheduler.reconnectMaxMillis on the HA cluster (DatcpCluster). */
  private static final long RECONNECT_MAX_MILLIS = 2_000;
  /** A report batch applied and the job re-planned on it, on a loaded 2-CPU machine. */
  private static final long APPLY_MILLIS = 500;

  private Path data;
  private DatcpCluster cluster;
  private Map<String, Integer> words;

  @BeforeAll
  void start() throws Exception {
    DockerClusterIT.requireDatcpImage();
    data = Files.createTempDirectory("datcp-ha-it-");
    words = DockerClusterIT.writeFaultJobInput(data.resolve(DockerClusterIT.FAULT_INPUT), 92_000);
    cluster = new DatcpCluster(Mode.ON, 3, data, 2);
    cluster.start();
  }

  @AfterAll
  void stop() throws IOException {
    DatcpCluster.stopAndDelete(cluster, data);
  }

  @Test
  void killingTheLeaderMidShuffleLeavesANewLeaderThatKnowsTheJobWithTheRuleAndExactOutput()
      throws Exception {
    DatcpCluster c = cluster;
    String leader = Awaitility.await().atMost(Duration.ofMinutes(1))
        .pollInterval(Duration.ofMillis(500))
        .until(() -> ha(c, c.schedulers().get(0)).path("leader").asText(""), l -> !l.isEmpty())
        .split(":")[0];
    String survivor = c.schedulers().stream().filter(s -> !s.equals(leader)).findFirst()
        .orElseThrow();
    assertThat(ha(c, survivor).get("role").asText()).isEqualTo("follower");
    c.exec(leader, "sh", "-c", "curl -fsS -X PUT -H \"Authorization: Bearer $(cat"
        + " /var/lib/datcp-scheduler/token)\" -H 'Content-Type: application/json' -d '"
        + RULE_JSON + "' --cacert " + DatcpCluster.SCHEDULER_CA
        + " https://localhost:8080/api/v1/policies/" + RULE);
    c.exec(NODE, "sh", "-c", "printf '\\0\\0\\0\\0\\0' >/tmp/empty-grpc-message");

    String port = DockerClusterIT.torPortDev(c, NODE);
    long before = DockerClusterIT.portBytes(c, port);
    long start = System.nanoTime();
    CompletableFuture<Map<String, String>> job = CompletableFuture.supplyAsync(() -> {
      try {
        return DockerClusterIT.runFaultJob(c, data, "ha-out");
      } catch (Exception e) {
        throw new CompletionException(e);
      }
    });
    Awaitility.await().atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(100))
        .until(() -> job.isDone()
            || DockerClusterIT.portBytes(c, port) - before >= DockerClusterIT.FAULT_SHUFFLED_BYTES);
    assertThat(job).as("the job ended before its shuffle was under way").isNotDone();
    // killed once every map output is indexed: then the new leader hears no fresh index, and
    // knows the job's bytes only from what the map nodes' agents send again
    JsonNode planBefore = Awaitility.await().atMost(Duration.ofMinutes(1))
        .pollInterval(Duration.ofMillis(100)).until(() -> job.isDone() ? null
            : plannedJob(c, leader), p -> job.isDone() || p != null
            && p.get("mapsDone").asInt() == p.get("totalMaps").asInt());
    assertThat(job).as("the job ended before its maps were all done").isNotDone();
    String jobId = planBefore.get("jobId").asText();
    long atKill = DockerClusterIT.portBytes(c, port);

    c.node(leader).getDockerClient().killContainerCmd(c.node(leader).getContainerId()).exec();
    long killed = System.nanoTime();
    long answeredMillis = -1;
    long knownMillis = -1;
    long ruledMillis = -1;
    long plannedMillis = -1;
    long longestPollMillis = 0;
    JsonNode knownAfter = null;
    JsonNode planAfter = null;
    while ((answeredMillis < 0 || ruledMillis < 0 || plannedMillis < 0) && !job.isDone()
        && System.nanoTime() - killed < TimeUnit.MINUTES.toNanos(1)) {
      long pollStart = System.nanoTime();
      long now = (pollStart - killed) / 1_000_000;
      if (answeredMillis < 0 && answersNodeCalls(c, survivor)) {
        answeredMillis = now;
      }
      JsonNode p = answeredMillis < 0 ? null : plannedJob(c, survivor);
      if (p != null && p.get("jobId").asText().equals(jobId)) {
        if (knownMillis < 0) {
          knownMillis = now;
          knownAfter = p;
        }
        if (ruledMillis < 0 && RULE.equals(p.path("policy").path("rule").asText())) {
          ruledMillis = now;
        }
        // rank 0 and up: the host's plan gives the job a deadline (bytes of it known)
        if (plannedMillis < 0 && p.get("rank").asInt() >= 0) {
          plannedMillis = now;
          planAfter = p;
        }
      }
      Thread.sleep(100);
      longestPollMillis = Math.max(longestPollMillis, (System.nanoTime() - pollStart) / 1_000_000);
    }
    long planBound = planBoundMillis(answeredMillis, longestPollMillis);
    long afterKillBytes = DockerClusterIT.portBytes(c, port) - atKill;
    Map<String, Integer> counted = DockerClusterIT.wordsOf(job.get(5, TimeUnit.MINUTES));
    long jobMillis = (System.nanoTime() - start) / 1_000_000;

    JsonNode flows = JSON.readTree(c.schedulerApi(survivor, "/api/v1/flows?job=" + jobId))
        .get("flows");
    long withDeadline = 0;
    for (JsonNode f : flows) {
      withDeadline += f.get("deadlineUnixNanos").asLong() > 0 ? 1 : 0;
    }
    long resent = resent(c, NODE);
    StringBuilder mapSide = new StringBuilder();
    long mapSideResent = 0;
    for (String nm : c.nodeManagers()) {
      if (!nm.equals(NODE)) {
        long n = resent(c, nm);
        mapSide.append(mapSide.length() == 0 ? "" : ", ").append(nm).append(' ').append(n);
        mapSideResent += n;
      }
    }
    System.out.printf("HA failover on Docker: %s killed (SIGKILL) %d MB into the shuffle of %s;"
        + " %s answered node calls after %d ms, knew the job on the reducer host after %d ms, its"
        + " rule %s in force after %d ms, had a plan for it there after %d ms (bound %d ms, a"
        + " poll took up to %d ms); %d MB crossed the reducer's port after the kill; job %d ms;"
        + " events sent again: the reducer's agent %d, the map nodes' %s%n", leader,
        (atKill - before) / 1_000_000, jobId, survivor, answeredMillis, knownMillis, RULE,
        ruledMillis, plannedMillis, planBound, longestPollMillis, afterKillBytes / 1_000_000,
        jobMillis, resent, mapSide);
    System.out.printf("HA failover on Docker: the job on %s before the kill: %s%n", leader,
        summary(planBefore));
    System.out.printf("HA failover on Docker: the job on %s once known: %s%n", survivor,
        knownAfter == null ? "not known" : summary(knownAfter));
    System.out.printf("HA failover on Docker: the job on %s once planned: %s; flows it answered"
        + " %d, %d with a deadline%n", survivor, planAfter == null ? "not planned"
        : summary(planAfter), flows.size(), withDeadline);

    keepLogs(c, leader, survivor);
    for (String nm : c.nodeManagers()) {
      // how each agent found the dead leader and where its calls went (LeaderChannel, Outage)
      System.out.printf("HA failover on Docker: %s's agent:%n%s", nm, c.exec(nm, "sh", "-c",
          "grep -E 'silent|unavailable|is back' /tmp/datcp-agent.log | tail -n 8").getStdout());
    }
    assertThat(answeredMillis).as("the survivor answers node calls after the kill").isPositive();
    assertThat(ha(c, survivor).get("role").asText()).isEqualTo("leader");
    JsonNode rule = JSON.readTree(c.schedulerApi(survivor, "/api/v1/policies/" + RULE));
    assertThat(rule.get("importance").asDouble()).as("rule acknowledged by the dead leader")
        .isEqualTo(3.0);
    assertThat(knownMillis).as("the new leader knows the running job " + jobId
        + " on the reducer host (its reduces' state sent again by the agents) before the job"
        + " ended").isPositive();
    assertThat(ruledMillis).as("the rule put through the dead leader is in force on the new"
        + " one for the running job").isPositive();
    assertThat(resent).as("events the reducer's agent sent again").isPositive();
    // the map nodes' indexes, sent again, taken by the new leader: their maps' containers had
    // ended, so it verifies them with the job's AM (YARN lists live containers only; before,
    // it refused them and had no plan for the job unless a live container of it, the AM's, ran
    // on a map node: it-tests/README.md)
    assertThat(mapSideResent).as("map output indexes the map nodes' agents sent again and the"
        + " new leader took (" + mapSide + ")").isPositive();
    assertThat(plannedMillis).as("the new leader's plan for the job on the reducer host, ms"
        + " after the kill").isBetween(0L, planBound);
    assertThat(afterKillBytes).as("bytes through the reducer's port after the kill: it landed"
        + " mid-shuffle").isGreaterThanOrEqualTo(DockerClusterIT.FAULT_SHUFFLED_BYTES);
    assertThat(counted).as("output with the leader killed vs the exact counts, word by word")
        .isEqualTo(words);
  }

  /**
   * Latest time from the kill to the new leader's plan: the map nodes' agents take the dead
   * leader for dead once HEARTBEATS_MISSED heartbeats did not come (at most that many intervals
   * after the kill), and reach the new leader at their next try after the later of that and its
   * election (at most reconnectMaxMillis apart; the election is seen here as the first node call
   * answered, {@code answeredMillis}); then a batch is applied and the job planned, and this test
   * sees it at its next poll of the page (a docker exec: the longest poll this run).
   */
  private static long planBoundMillis(long answeredMillis, long longestPollMillis) {
    return Math.max(answeredMillis, HEARTBEATS_MISSED * HEARTBEAT_MILLIS) + RECONNECT_MAX_MILLIS
        + APPLY_MILLIS + longestPollMillis;
  }

  /**
   * Every agent's log and both schedulers' into target/ha (scripts/test.sh keeps them beside its
   * logs): a failover that goes wrong is otherwise gone with the cluster.
   */
  private static void keepLogs(DatcpCluster c, String leader, String survivor)
      throws Exception {
    Path keep = Path.of("target", "ha");
    Files.createDirectories(keep);
    for (String nm : c.nodeManagers()) {
      Files.writeString(keep.resolve(nm + "-agent.log"),
          c.exec(nm, "cat", "/tmp/datcp-agent.log").getStdout());
    }
    String killedLog;
    try {
      killedLog = c.node(leader).getLogs();
    } catch (RuntimeException e) { // a diagnosis, not the test's subject
      killedLog = "docker logs of the killed container failed: " + e;
    }
    Files.writeString(keep.resolve(leader + "-killed.log"), killedLog);
    Files.writeString(keep.resolve(survivor + ".log"), c.node(survivor).getLogs());
  }

  /** Events {@code node}'s agent sent again after outages (its metrics). */
  private static long resent(DatcpCluster c, String node) throws Exception {
    return labelled(c.exec(node, "curl", "-fsS", "http://localhost:9464/metrics").getStdout(),
        "datcp_agent_reports_resent_total", "queue=\"shuffle-reports\"");
  }

  private static JsonNode ha(DatcpCluster c, String scheduler) throws Exception {
    return JSON.readTree(c.schedulerApi(scheduler, "/api/v1/ha"));
  }

  /**
   * The reducer host's job on {@code scheduler}'s page of that host, or null: rank 1 and up for a
   * job whose maps are done, 0 for one that waits for maps (its deadline their estimated end),
   * -1 for one the host has no plan for yet (no bytes of it known): a job the scheduler knows
   * shuffles there, with the policy its flows get.
   */
  private static JsonNode plannedJob(DatcpCluster c, String scheduler) throws Exception {
    ExecResult r = c.node(scheduler).execInContainer("curl", "-fsS", "--max-time", "2",
        "--cacert", DatcpCluster.SCHEDULER_CA,
        "https://localhost:8080/api/v1/dashboard/hosts/" + NODE);
    if (r.getExitCode() != 0) {
      return null;
    }
    for (JsonNode j : JSON.readTree(r.getStdout()).path("jobs")) {
      return j;
    }
    return null;
  }

  /**
   * Whether {@code scheduler} serves a node call from the reducer node (its certificate and
   * token): an empty LookupPolicy answered, with any gRPC status but UNAVAILABLE (a follower's
   * refusal).
   */
  private static boolean answersNodeCalls(DatcpCluster c, String scheduler) throws Exception {
    ExecResult r = c.node(NODE).execInContainer("sh", "-c", "curl -sS --http2 -o /dev/null"
        + " -D - --max-time 2 --cacert " + NODE_TLS + "ca.pem --cert " + NODE_TLS + "cert.pem"
        + " --key " + NODE_TLS + "key.pem -H 'content-type: application/grpc' -H 'te: trailers'"
        + " -H \"authorization: Bearer $(cat /data/node-tokens/" + NODE + ")\" --data-binary"
        + " @/tmp/empty-grpc-message https://" + scheduler
        + ":9090/datcp.v1.FlowPolicyService/LookupPolicy");
    // the refusal is a trailers-only response (grpc-status among the headers); an answer's
    // status comes in trailers, which curl may or may not print
    List<String> headers = r.getStdout().lines().map(l -> l.trim().toLowerCase()).toList();
    return headers.stream().anyMatch(l -> l.startsWith("http/2 200"))
        && !headers.contains("grpc-status: " + UNAVAILABLE);
  }

  private static String summary(JsonNode j) {
    JsonNode p = j.path("policy");
    return String.format("rank %d, maps %d/%d, %d bytes left, %d fetched, rule '%s', reason '%s'",
        j.get("rank").asInt(), j.get("mapsDone").asInt(), j.get("totalMaps").asInt(),
        j.get("remainingBytes").asLong(), j.get("fetchedBytes").asLong(),
        p.path("rule").asText(), p.path("reason").asText());
  }

  /** The value of metric {@code name}'s one series with label {@code label} in Prometheus text. */
  private static long labelled(String text, String name, String label) {
    List<String> lines = text.lines()
        .filter(l -> l.startsWith(name + "{") && l.contains(label)).toList();
    assertThat(lines).as(name + " " + label + " in\n" + text).hasSize(1);
    String line = lines.get(0);
    return (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
  }
}
