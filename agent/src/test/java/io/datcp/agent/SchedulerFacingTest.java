package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.kernel.FlowMeta;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.agent.scheduler.SchedulerClient;
import io.datcp.agent.testing.AgentClient;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.KernelLockExtension;
import io.datcp.agent.testing.TestAgents;
import io.datcp.agent.testing.WarningLog;
import io.datcp.proto.v1.ContainersRunning;
import io.datcp.proto.v1.FetchStarted;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.RefusedEvent;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.grpc.Metadata;
import io.grpc.Status;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent against a scheduler that is there, away, or comes back (root; holds the kernel
 * lock): registrations never wait for it, one log line per outage, the update stream resyncs,
 * reports are batched with ids and bounded while it is away, the node credential is sent.
 */
@ExtendWith(KernelLockExtension.class)
class SchedulerFacingTest {
  @TempDir
  Path dir;
  private FakeScheduler scheduler;
  private AgentServer agent;
  private AgentClient client;
  private final WarningLog capture = new WarningLog();
  private final List<LogRecord> warnings = capture.records;
  /** Held strongly: the log manager keeps loggers only weakly. */
  private final Logger clientLog = Logger.getLogger(SchedulerClient.class.getName());
  private final Logger tokenLog = Logger.getLogger("io.datcp.agent.scheduler.NodeToken");

  @AfterEach
  void stop() throws Exception {
    clientLog.removeHandler(capture);
    tokenLog.removeHandler(capture);
    if (client != null) {
      client.close();
    }
    if (agent != null) {
      agent.close();
    }
    if (scheduler != null) {
      scheduler.close();
    }
    TestAgents.deleteTestEntries(-1);
  }

  private void startAgent(Map<String, String> extra) throws Exception {
    Map<String, String> s = TestAgents.settings(dir, scheduler.target(), 13562);
    s.putAll(extra);
    agent = TestAgents.start(s);
    client = new AgentClient(dir.resolve("agent.sock"));
  }

  private synchronized long outageWarnings() {
    return warnings.stream().filter(r -> r.getMessage().contains("unavailable")).count();
  }

  @Test
  void withTheSchedulerAwayRegistrationsGetTheDefaultAtOnceAndOneLogLine() throws Exception {
    clientLog.addHandler(capture);
    scheduler = new FakeScheduler().start();
    scheduler.stop(); // its port refuses connections now
    startAgent(Map.of());

    for (int i = 0; i < 50; i++) {
      long t0 = System.nanoTime();
      FlowRegistered r = client.blocking().registerFlow(
          TestAgents.registration("job_1700000000000_0201", 31, 44000 + i).build());
      long micros = (System.nanoTime() - t0) / 1000;
      assertThat(r.getInKernel()).isTrue();
      assertThat(r.getPolicy().getReason()).startsWith("agent default");
      // never waits for the scheduler (a loose bound for a shared CI machine; the first call
      // also sets up the client's connection and warms up the JIT)
      assertThat(micros).isLessThan(i == 0 ? 5_000_000 : 500_000);
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> agent.scheduler().outage().isDown());
    Thread.sleep(500); // reconnect attempts and lookups keep failing meanwhile
    assertThat(outageWarnings()).isEqualTo(1);
    assertThat(agent.scheduler().outage().count()).isEqualTo(1);

    // it comes back: the watch stream reconnects with a resync, new flows get its answers
    long deadline = LocalAgentServiceTest.unixNanos(Instant.now().plusSeconds(20));
    scheduler.answer = l -> FlowPolicy.newBuilder().setJobId(l.getJobId())
        .setReduceId(l.getReduceId()).setDeadlineUnixNanos(deadline).setFlow(l.getFlow())
        .build();
    scheduler.start();
    await().atMost(Duration.ofSeconds(5)).until(() -> !agent.scheduler().outage().isDown());
    assertThat(scheduler.watches).isNotEmpty().allMatch(w -> w.getResync()
        && w.getAgentHost().equals("test-host"));
    FlowRegistration r = TestAgents.registration("job_1700000000000_0201", 32, 44100).build();
    client.blocking().registerFlow(r);
    await().atMost(Duration.ofSeconds(5)).until(() -> agent.kernel()
        .flowMeta(TestAgents.tuple(r)).orElseThrow().deadlineNs() != 0);
    assertThat(outageWarnings()).isEqualTo(1);
  }

  @Test
  void callsGoToTheLeaderAFollowerNamesAndPastASchedulerThatIsDown() throws Exception {
    FakeScheduler leader = new FakeScheduler().start();
    FakeScheduler down = new FakeScheduler().start();
    String downTarget = down.target();
    down.close();
    try {
      scheduler = new FakeScheduler().start();
      scheduler.followerOf = leader.target();
      // Listed first: a follower (names the leader), then one that is down, then the leader.
      Map<String, String> s = TestAgents.settings(dir,
          scheduler.target() + "," + downTarget + "," + leader.target(), 13562);
      agent = TestAgents.start(s);
      client = new AgentClient(dir.resolve("agent.sock"));
      await().atMost(Duration.ofSeconds(30)).until(() -> leader.watchers() == 1);
      FlowRegistration r = TestAgents.registration("job_1700000000000_0303", 33, 44300).build();
      client.blocking().registerFlow(r);
      await().atMost(Duration.ofSeconds(30)).until(() -> !leader.lookups.isEmpty());
      assertThat(scheduler.lookups).isEmpty();
      assertThat(scheduler.watches).isEmpty();

      // The leader steps down and names the first as the new one: calls follow.
      scheduler.followerOf = null;
      leader.followerOf = scheduler.target();
      Metadata named = new Metadata();
      named.put(Metadata.Key.of("datcp-leader", Metadata.ASCII_STRING_MARSHALLER),
          scheduler.target());
      leader.closeWatchers(Status.UNAVAILABLE, named);
      await().atMost(Duration.ofSeconds(30)).until(() -> scheduler.watchers() == 1);
      client.blocking().registerFlow(
          TestAgents.registration("job_1700000000000_0304", 34, 44301).build());
      await().atMost(Duration.ofSeconds(30)).until(() -> !scheduler.lookups.isEmpty());
    } finally {
      leader.close();
    }
  }

  @Test
  void watchedUpdatesRewriteLiveFlowsAndKeepTheLatestDecision() throws Exception {
    scheduler = new FakeScheduler().start();
    startAgent(Map.of());
    await().atMost(Duration.ofSeconds(5)).until(() -> scheduler.watchers() == 1);
    FlowRegistration r = TestAgents.registration("job_1700000000000_0202", 33, 44200).build();
    FlowRegistered reg = client.blocking().registerFlow(r);
    FlowTuple t = TestAgents.tuple(r);
    await().atMost(Duration.ofSeconds(5)).until(() -> !scheduler.lookups.isEmpty());

    long now = LocalAgentServiceTest.unixNanos(Instant.now());
    FlowPolicy p = FlowPolicy.newBuilder().setJobId(r.getJobId()).setReduceId(0)
        .setDeadlineUnixNanos(now + 3_000_000_000L).setImportance(2)
        .setFlow(reg.getPolicy().getFlow()).build();
    scheduler.push(PolicyUpdate.newBuilder().setTimeUnixNanos(now).setPolicy(p).build());
    await().atMost(Duration.ofSeconds(5)).until(
        () -> agent.kernel().flowMeta(t).orElseThrow().importance() == 2.0);
    // an older decision arriving late does not overwrite it
    scheduler.push(PolicyUpdate.newBuilder().setTimeUnixNanos(now - 1_000_000_000L)
        .setPolicy(p.toBuilder().setImportance(7)).build());
    scheduler.push(PolicyUpdate.newBuilder().setTimeUnixNanos(now + 1)
        .setPolicy(p.toBuilder().setImportance(4)).build());
    await().atMost(Duration.ofSeconds(5)).until(
        () -> agent.kernel().flowMeta(t).orElseThrow().importance() == 4.0);
    FlowMeta m = agent.kernel().flowMeta(t).orElseThrow();
    assertThat(m.deadlineNs()).isNotZero();
    assertThat(m.epoch()).isEqualTo(reg.getEpoch());
  }

  @Test
  void forwardedReportsAreBatchedWithIdsAndTheOldestDroppedWhileTheSchedulerIsAway()
      throws Exception {
    scheduler = new FakeScheduler().start();
    scheduler.stop();
    startAgent(Map.of("reports.queueCapacity", "5"));
    // FetchStarted: a kind no state sent again after an outage keeps (RunningReduces,
    // MapSideState), so what arrives is the queue's alone
    for (int call = 0; call < 3; call++) {
      List<ShuffleEvent> events = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        events.add(fetchStarted("job_1_1", call * 3 + i));
      }
      assertThat(client.blocking().forward(ShuffleReport.newBuilder().setReporterHost("nm")
          .addAllEvents(events).build()).getAccepted()).isEqualTo(3);
    }
    Thread.sleep(300);
    scheduler.start();

    await().atMost(Duration.ofSeconds(10)).until(() -> delivered().size()
        + agent.scheduler().droppedReports() == 9);
    List<Integer> maps = delivered();
    assertThat(agent.scheduler().droppedReports()).isBetween(1L, 4L);
    assertThat(maps).isSorted().contains(8); // the newest survive, in order
    List<ShuffleReport> batches = scheduler.reports;
    for (int i = 0; i < batches.size(); i++) {
      assertThat(batches.get(i).getBatchId()).isEqualTo(i + 1);
      assertThat(batches.get(i).getReporterHost()).isEqualTo("test-host");
      assertThat(batches.get(i).getReporterId()).isEqualTo(batches.get(0).getReporterId());
    }
    String metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + agent.metricsPort() + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    assertThat(metrics).contains("datcp_agent_reports_dropped_total{queue=\"shuffle-reports\"}");
  }

  private static ShuffleEvent fetchStarted(String job, int map) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(map + 1).setFetchStarted(
        FetchStarted.newBuilder().setJobId(job).setReduceId(0).setSourceHost("h")
            .addMapIds(map).setBytes(100)).build();
  }

  private static ShuffleEvent indexed(String job, int map) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(map + 1).setMapOutputIndexed(
        MapOutputIndexed.newBuilder().setJobId(job).setMapId(map).setHost("h")
            .addPartitionBytes(100)).build();
  }

  @Test
  void reportsTheSchedulerRefusesAreDroppedCountedAndLoggedOnceNotRetried() throws Exception {
    Logger senderLog = Logger.getLogger("io.datcp.agent.scheduler.BatchSender");
    senderLog.addHandler(capture);
    clientLog.addHandler(capture);
    scheduler = new FakeScheduler();
    String notOnIt = "the reporting host may not report reduce 1 of job_1_2, which does not"
        + " run on it";
    // job_1_1's events refused one by one (this scheduler), job_1_2's batch refused whole (a
    // scheduler from before ReportAck.refused)
    scheduler.reportAnswer = r -> {
      if (r.getEventsList().stream().anyMatch(e -> e.getMapOutputIndexed().getJobId()
          .equals("job_1_2"))) {
        throw Status.PERMISSION_DENIED.withDescription(notOnIt).asRuntimeException();
      }
      ReportAck.Builder ack = ReportAck.newBuilder();
      for (int i = 0; i < r.getEventsCount(); i++) {
        if (r.getEvents(i).getMapOutputIndexed().getJobId().equals("job_1_1")) {
          ack.addRefused(RefusedEvent.newBuilder().setIndex(i).setCode(7)
              .setMessage("the reporting host may not report MapOutputIndexed.host h"));
        }
      }
      return ack.setAccepted(r.getEventsCount() - ack.getRefusedCount()).build();
    };
    scheduler.start();
    startAgent(Map.of());

    for (String job : List.of("job_1_1", "job_1_2", "job_1_3")) {
      client.blocking().forward(ShuffleReport.newBuilder().setReporterHost("nm")
          .addEvents(indexed(job, 1)).addEvents(indexed(job, 2)).build());
      int sent = scheduler.reports.size();
      await().atMost(Duration.ofSeconds(5)).until(() -> scheduler.reports.size() > sent);
    }

    Thread.sleep(500); // a retry would come within this
    assertThat(scheduler.reports).hasSize(3);
    assertThat(scheduler.reports.get(2).getEvents(0).getMapOutputIndexed().getJobId())
        .isEqualTo("job_1_3");
    String metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + agent.metricsPort() + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString()).body();
    assertThat(metrics).contains("datcp_agent_reports_refused_total{queue=\"shuffle-reports\","
        + "reason=\"not_permitted\"} 4.0");
    synchronized (capture) {
      assertThat(warnings).noneMatch(r -> r.getMessage().contains("unavailable"));
      assertThat(warnings.stream().filter(r -> new SimpleFormatter().formatMessage(r)
          .contains(notOnIt))).hasSize(1);
    }
    senderLog.removeHandler(capture);
  }

  @Test
  void malformedForwardsAreRefusedWhole() throws Exception {
    scheduler = new FakeScheduler().start();
    startAgent(Map.of());
    ShuffleReport.Builder big = ShuffleReport.newBuilder();
    for (int i = 0; i < 1001; i++) {
      big.addEvents(ShuffleEvent.newBuilder().setContainersRunning(
          ContainersRunning.newBuilder().setJobId("job_1_1").setRunning(1)));
    }
    assertThatThrownBy(() -> client.blocking().forward(big.build()))
        .hasMessageContaining("INVALID_ARGUMENT: events: 1001 events");
    assertThatThrownBy(() -> client.blocking().forward(ShuffleReport.newBuilder()
        .addEvents(ShuffleEvent.newBuilder().setTimeUnixNanos(1)).build()))
        .hasMessageContaining("events[0]: no event set");
    Thread.sleep(200);
    assertThat(scheduler.reports).isEmpty();
  }

  @Test
  void theNodeTokenIsSentAsABearerCredential() throws Exception {
    scheduler = new FakeScheduler().start();
    Path token = dir.resolve("node.token");
    Files.writeString(token, "s3cr3t-node-token\n");
    startAgent(Map.of("scheduler.tokenFile", token.toString()));
    client.blocking().registerFlow(
        TestAgents.registration("job_1700000000000_0203", 34, 44300).build());
    await().atMost(Duration.ofSeconds(5)).until(() -> !scheduler.lookups.isEmpty());
    assertThat(scheduler.authorizations).isNotEmpty()
        .allMatch(a -> a.equals("Bearer s3cr3t-node-token"));
  }

  @Test
  void aReMintedNodeTokenIsReadAgainAndRefusedBatchesGoOutWithTheirIds() throws Exception {
    tokenLog.addHandler(capture);
    scheduler = new FakeScheduler();
    scheduler.requiredToken = "token-1";
    scheduler.start();
    Path token = dir.resolve("node.token");
    Files.writeString(token, "token-1\n");
    startAgent(Map.of("scheduler.tokenFile", token.toString()));
    await().atMost(Duration.ofSeconds(5)).until(() -> scheduler.watchers() == 1);

    // the scheduler comes back with new node tokens: the agent's is refused everywhere
    scheduler.stop();
    scheduler.requiredToken = "token-2";
    scheduler.start();
    // a kind no state sent again after an outage keeps: the refused batch is the only one
    assertThat(client.blocking().forward(ShuffleReport.newBuilder().setReporterHost("nm")
        .addEvents(fetchStarted("job_1_1", 7)).build()).getAccepted()).isEqualTo(1);
    FlowRegistered reg = client.blocking().registerFlow(
        TestAgents.registration("job_1700000000000_0204", 35, 44400).build());
    client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(reg.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build());
    await().atMost(Duration.ofSeconds(5)).until(() -> scheduler.refused.containsAll(
        List.of("WatchPolicies", "Report", "ReportOutcomes")));
    Thread.sleep(500); // retries and reconnects keep being refused meanwhile
    assertThat(scheduler.reports).isEmpty();
    assertThat(scheduler.outcomes).isEmpty();

    // the operator puts the new token in the file: no restart needed
    Path tmp = dir.resolve("node.token.tmp");
    Files.writeString(tmp, "token-2\n");
    Files.move(tmp, token, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    await().atMost(Duration.ofSeconds(10)).until(() -> scheduler.reports.size() == 1
        && scheduler.outcomes.size() == 1 && scheduler.watchers() == 1);
    // the refused batches kept their ids: the scheduler sees each once, as batch 1
    assertThat(scheduler.reports.get(0).getBatchId()).isEqualTo(1);
    assertThat(scheduler.reports.get(0).getEvents(0).getFetchStarted().getMapIds(0))
        .isEqualTo(7);
    assertThat(scheduler.outcomes.get(0).getBatchId()).isEqualTo(1);
    assertThat(scheduler.outcomes.get(0).getOutcomes(0).getFlow().getJobId())
        .isEqualTo("job_1700000000000_0204");
    client.blocking().registerFlow(
        TestAgents.registration("job_1700000000000_0204", 36, 44401).build());
    await().atMost(Duration.ofSeconds(5)).until(() -> !scheduler.lookups.isEmpty());
    assertThat(scheduler.authorizations.get(scheduler.authorizations.size() - 1))
        .isEqualTo("Bearer token-2");
    // one line for the refusal episode, not one per refused call
    synchronized (capture) {
      assertThat(warnings.stream().filter(r -> r.getMessage().contains("refused the node token")))
          .hasSize(1);
    }
  }

  @Test
  void anUnreadableTokenFileStopsStartUpNamingTheKey() throws Exception {
    scheduler = new FakeScheduler().start();
    assertThatThrownBy(() -> startAgent(Map.of("scheduler.tokenFile",
        dir.resolve("missing").toString())))
        .hasMessageContaining("scheduler.tokenFile");
  }

  private List<Integer> delivered() {
    return scheduler.reports.stream().flatMap(r -> r.getEventsList().stream())
        .map(e -> e.getFetchStarted().getMapIds(0)).toList();
  }
}
