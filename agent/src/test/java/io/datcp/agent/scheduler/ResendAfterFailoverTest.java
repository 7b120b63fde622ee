package io.datcp.agent.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.SilentRelay;
import io.datcp.proto.v1.ContainersRunning;
import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.FetchStarted;
import io.datcp.proto.v1.JobFinished;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.proto.v1.ShuffleReport;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 19 item 10: the leading scheduler dies mid-shuffle and another takes over with no job
 * state. A scheduler ignores reports of a job it did not see start, so the agent sends the
 * reduces still shuffling on its host again (their start, the maps they know and fetched)
 * before anything newer, and the map side's partition sizes indexed on its host, so the new
 * leader knows the job's bytes and plans it instead of letting it run without deadlines.
 */
class ResendAfterFailoverTest {
  private static final String JOB = "job_1700000000000_0007";
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private FakeScheduler first;
  private FakeScheduler second;
  private SchedulerClient client;

  @BeforeEach
  void start() throws Exception {
    first = new FakeScheduler().start();
    second = new FakeScheduler().start();
    second.followerOf = first.target();
    client = new SchedulerClient(AgentConf.fromMap(Map.of(
        "scheduler.target", first.target() + "," + second.target(),
        "scheduler.plaintext", "true",
        "reports.flushMillis", "20",
        "scheduler.reconnectMaxMillis", "200")), "nm1", meters);
  }

  @AfterEach
  void stop() throws Exception {
    client.close();
    first.close();
    second.close();
  }

  /** The first leader dies; the follower leads from now on. */
  private void failOver() throws InterruptedException {
    first.stop();
    second.followerOf = null;
  }

  @Test
  void aNewLeaderHearsTheRunningReduceAgainBeforeAnythingNewer() throws Exception {
    client.forward(List.of(started(0), completed(0, 0), completed(0, 1)));
    client.forward(List.of(fetched(0, 0, 1_000_000)));
    await().atMost(Duration.ofSeconds(10)).until(() -> events(first).size() == 4);

    failOver();
    client.forward(List.of(fetchStarted(0, 1)));
    await().atMost(Duration.ofSeconds(10)).until(() -> events(second).stream()
        .anyMatch(ShuffleEvent::hasFetchStarted));

    List<ShuffleEvent> heard = events(second);
    assertThat(heard.get(0).hasReduceStarted()).as("first event the new leader hears: " + heard)
        .isTrue();
    // the size of the map fetched alone is sent as its completion's output_bytes (state): from
    // it a new leader that has no map side's index yet estimates the maps left to fetch
    ShuffleEvent size = ShuffleEvent.newBuilder().setTimeUnixNanos(3).setMapCompleted(MapCompleted
        .newBuilder().setJobId(JOB).setReduceId(0).setMapId(0).setHost("nm2")
        .setOutputBytes(1_000_000).setMapsRunning(-1)).build();
    assertThat(heard).containsSubsequence(started(0), completed(0, 0), completed(0, 1), size,
        fetched(0, 0, 0), fetchStarted(0, 1));
    assertThat(heard.get(heard.size() - 1)).isEqualTo(fetchStarted(0, 1));
    // the fetched bytes were counted where they were first reported: sent again, they are 0
    assertThat(heard.stream().filter(ShuffleEvent::hasFetchFinished)
        .mapToLong(e -> e.getFetchFinished().getBytes()).sum()).isZero();
    assertThat(meters.get("datcp.agent.reports.resent").tag("queue", "shuffle-reports").counter()
        .count()).isEqualTo(5);
  }

  @Test
  void aReduceThatFinishedItsShuffleIsNotSentAgain() throws Exception {
    client.forward(List.of(started(0), started(1), completed(0, 0), completed(1, 0)));
    client.forward(List.of(finished(0)));
    await().atMost(Duration.ofSeconds(10)).until(() -> events(first).size() == 5);

    failOver();
    client.forward(List.of(fetchStarted(1, 0)));
    await().atMost(Duration.ofSeconds(10)).until(() -> events(second).stream()
        .anyMatch(ShuffleEvent::hasFetchStarted));

    assertThat(events(second)).containsExactly(started(1), completed(1, 0), fetchStarted(1, 0));
  }

  @Test
  void aNewLeaderHearsTheMapOutputsIndexedOnTheHostAgain() throws Exception {
    client.forward(List.of(containers(2), indexed(0, 7_000_000, 9_000_000)));
    client.forward(List.of(containers(1), indexed(1, 5_000_000, 3_000_000), containers(0)));
    await().atMost(Duration.ofSeconds(10)).until(() -> events(first).size() == 5);

    failOver();
    client.forward(List.of(containers(1)));
    await().atMost(Duration.ofSeconds(10)).until(() -> events(second).stream()
        .filter(ShuffleEvent::hasContainersRunning).count() == 2);

    // the sizes once each and the host's latest count (state, not its history: by the time
    // they are sent again that is the count queued after the failover), then what was queued
    assertThat(events(second)).containsExactly(indexed(0, 7_000_000, 9_000_000),
        indexed(1, 5_000_000, 3_000_000), containers(1), containers(1));
    assertThat(meters.get("datcp.agent.reports.resent").tag("queue", "shuffle-reports").counter()
        .count()).isEqualTo(3);
  }

  @Test
  void aJobThatEndedHasNoMapOutputsSentAgain() throws Exception {
    client.forward(List.of(indexed(0, 7_000_000, 9_000_000), started(0)));
    client.forward(List.of(ShuffleEvent.newBuilder().setTimeUnixNanos(6)
        .setJobFinished(JobFinished.newBuilder().setJobId(JOB).setSucceeded(true)).build()));
    await().atMost(Duration.ofSeconds(10)).until(() -> events(first).size() == 3);

    failOver();
    client.forward(List.of(fetchStarted(0, 1)));
    await().atMost(Duration.ofSeconds(10)).until(() -> events(second).stream()
        .anyMatch(ShuffleEvent::hasFetchStarted));

    assertThat(events(second)).containsExactly(fetchStarted(0, 1));
  }

  /**
   * A map node's agent whose fetches were all registered before the leader died makes no call
   * that could time out: its keepalive pings find the leader silent, and it sends the map side
   * to the new one.
   */
  @Test
  void anAgentThatMakesNoCallsFindsASilentLeaderByItsPingsAndSendsTheMapSideAgain()
      throws Exception {
    int firstPort = Integer.parseInt(first.target().substring(first.target().indexOf(':') + 1));
    try (SilentRelay relay = new SilentRelay(firstPort);
        SchedulerClient quiet = new SchedulerClient(AgentConf.fromMap(Map.of(
            "scheduler.target", relay.target() + "," + second.target(),
            "scheduler.plaintext", "true",
            "reports.flushMillis", "20",
            "scheduler.reconnectMaxMillis", "200")), "nm1", new SimpleMeterRegistry())) {
      quiet.watch(p -> { });
      quiet.forward(List.of(indexed(0, 7_000_000, 9_000_000)));
      await().atMost(Duration.ofSeconds(10))
          .until(() -> events(first).size() == 1 && first.watchers() == 1);

      relay.silence();
      second.followerOf = null;
      await().atMost(Duration.ofSeconds(SchedulerChannel.KEEPALIVE_SECONDS
          + SchedulerChannel.KEEPALIVE_TIMEOUT_SECONDS + 10))
          .until(() -> events(second).contains(indexed(0, 7_000_000, 9_000_000)));
    }
  }

  /**
   * The leader stops answering and keeps the connection up (frozen, or its network cut): an
   * agent that makes no call misses its heartbeats on the update stream and sends the map side
   * to the next scheduler within HEARTBEATS_MISSED heartbeat intervals (plus its retry delays),
   * where keepalive pings would take 10 s at the least.
   */
  @Test
  void anAgentThatMakesNoCallsFindsASilentLeaderByItsMissingHeartbeats() throws Exception {
    try (QuietMapNode node = new QuietMapNode()) {
      node.relay.silence();
      long silenced = System.nanoTime();
      await().atMost(Duration.ofMillis(failoverBoundMillis()))
          .until(() -> events(node.next).contains(INDEXED));
      System.out.printf("silent leader: map side at the next scheduler %d ms after the"
          + " silence (bound %d ms)%n", (System.nanoTime() - silenced) / 1_000_000,
          failoverBoundMillis());
      // the update stream moved too (after its retry delay)
      await().atMost(Duration.ofSeconds(10)).until(() -> node.next.watchers() == 1);
    }
  }

  /**
   * As above, but the other scheduler follows for a while, naming the silent one the leader (its
   * election outlives it until its ZooKeeper session expires, 4 s on the Docker cluster): the
   * agent stays with the follower (held, the silent one is not gone back to, where each report
   * would wait for its 5 s deadline) and reaches it as soon as it leads.
   */
  @Test
  void aFollowerNamingTheSilentLeaderIsNotFollowedBackToIt() throws Exception {
    long sessionMillis = 4_000;
    try (QuietMapNode node = new QuietMapNode()) {
      node.next.followerOf = node.relay.target();
      node.relay.silence();
      long silenced = System.nanoTime();
      Thread.sleep(sessionMillis);
      node.next.followerOf = null; // elected
      long bound = sessionMillis + RETRY_SLACK_MILLIS;
      await().atMost(Duration.ofMillis(bound - (System.nanoTime() - silenced) / 1_000_000))
          .until(() -> events(node.next).contains(INDEXED));
      System.out.printf("silent leader named by the follower for %d ms: map side at the new"
          + " leader %d ms after the silence (bound %d ms)%n", sessionMillis,
          (System.nanoTime() - silenced) / 1_000_000, bound);
    }
  }

  /** Heartbeat interval of the tests' schedulers: the scheduler's default. */
  private static final int HEARTBEAT_MILLIS = 1_000;
  /**
   * Time for the agent's retries once a scheduler answers (its back-off, at most 200 ms here)
   * and the report, with ample room for a loaded machine.
   */
  private static final long RETRY_SLACK_MILLIS = 2_000;
  private static final ShuffleEvent INDEXED = indexed(0, 7_000_000, 9_000_000);

  /** From the silence: the last heartbeat at most that long before, then the retries. */
  private static long failoverBoundMillis() {
    return SchedulerClient.HEARTBEATS_MISSED * HEARTBEAT_MILLIS + RETRY_SLACK_MILLIS;
  }

  /**
   * A map node's agent that made its map output known to the leader (with heartbeats, behind a
   * relay that can fall silent) and makes no call from then on; {@code next} is the other
   * scheduler of its list.
   */
  private static final class QuietMapNode implements AutoCloseable {
    final FakeScheduler leader = withHeartbeats();
    final SilentRelay relay = new SilentRelay(Integer.parseInt(
        leader.target().substring(leader.target().indexOf(':') + 1)));
    final FakeScheduler next = withHeartbeats();
    final SchedulerClient agent = new SchedulerClient(AgentConf.fromMap(Map.of(
        "scheduler.target", relay.target() + "," + next.target(),
        "scheduler.plaintext", "true",
        "reports.flushMillis", "20",
        "scheduler.reconnectMaxMillis", "200")), "nm1", new SimpleMeterRegistry());

    QuietMapNode() throws Exception {
      try {
        agent.watch(p -> { });
        agent.forward(List.of(INDEXED));
        await().atMost(Duration.ofSeconds(10))
            .until(() -> events(leader).size() == 1 && leader.watchers() == 1);
      } catch (RuntimeException | Error e) {
        close();
        throw e;
      }
    }

    @Override
    public void close() throws Exception {
      agent.close();
      next.close();
      relay.close();
      leader.close();
    }
  }

  private static FakeScheduler withHeartbeats() throws Exception {
    FakeScheduler s = new FakeScheduler();
    s.heartbeatMillis = HEARTBEAT_MILLIS;
    return s.start();
  }

  @Test
  void theUpdateStreamFollowsCallsThatMovedPastASilentLeader() throws Exception {
    client.watch(p -> { });
    await().atMost(Duration.ofSeconds(10)).until(() -> first.watchers() == 1);
    // the leader stops answering (killed with its container: no reset), the follower leads
    first.answerAfter(3_000);
    second.followerOf = null;
    client.lookup(() -> PolicyLookup.newBuilder().setAgentHost("nm1").setJobId(JOB).build(),
        p -> { });
    await().atMost(Duration.ofSeconds(10)).until(() -> second.watches.size() == 1);
    assertThat(first.watches).hasSize(1);
  }

  /** Every event a scheduler was sent, in the order it got them. */
  private static List<ShuffleEvent> events(FakeScheduler s) {
    List<ShuffleEvent> all = new ArrayList<>();
    for (ShuffleReport r : s.reports) {
      all.addAll(r.getEventsList());
    }
    return all;
  }

  private static ShuffleEvent started(int reduce) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(1).setReduceStarted(ReduceStarted
        .newBuilder().setJobId(JOB).setReduceId(reduce).setHost("nm1").setTotalMaps(2)
        .setTotalReduces(2)).build();
  }

  private static ShuffleEvent completed(int reduce, int map) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(2).setMapCompleted(MapCompleted
        .newBuilder().setJobId(JOB).setReduceId(reduce).setMapId(map).setHost("nm2")
        .setOutputBytes(1_000_000).setMapsRunning(-1)).build();
  }

  private static ShuffleEvent fetched(int reduce, int map, long bytes) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(3).setFetchFinished(FetchFinished
        .newBuilder().setJobId(JOB).setReduceId(reduce).setSourceHost("nm2").addMapIds(map)
        .setBytes(bytes).setDurationNanos(bytes == 0 ? 0 : 80_000_000)).build();
  }

  private static ShuffleEvent fetchStarted(int reduce, int map) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(4).setFetchStarted(FetchStarted
        .newBuilder().setJobId(JOB).setReduceId(reduce).setSourceHost("nm2").addMapIds(map))
        .build();
  }

  private static ShuffleEvent indexed(int map, long... partitionBytes) {
    MapOutputIndexed.Builder m = MapOutputIndexed.newBuilder().setJobId(JOB).setMapId(map)
        .setHost("nm1");
    for (long b : partitionBytes) {
      m.addPartitionBytes(b);
    }
    return ShuffleEvent.newBuilder().setTimeUnixNanos(7).setMapOutputIndexed(m).build();
  }

  private static ShuffleEvent containers(int running) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(8).setContainersRunning(ContainersRunning
        .newBuilder().setJobId(JOB).setHost("nm1").setRunning(running)).build();
  }

  private static ShuffleEvent finished(int reduce) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(5).setShuffleFinished(ShuffleFinished
        .newBuilder().setJobId(JOB).setReduceId(reduce)).build();
  }
}
