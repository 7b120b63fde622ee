package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.JobFinished;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.scheduler.FakeResourceManager;
import io.datcp.scheduler.MutableClock;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.ingest.Caller;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobRegistry;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 1, as a hostile NodeManager host ("evil") with its own valid node token would
 * act: it may report a job's reduces, map outputs and end only where YARN placed a container of
 * that job on it, and map ids only within the job's maps. Honest hosts whose containers YARN
 * lists are never refused for being new to the scheduler's cache.
 */
class ClaimsFromYarnTest {
  private static final String J = "job_1700000000000_0001";
  private static final String K = "job_1700000000000_0002";
  private static final long MB = 1_000_000L;

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private final FakeResourceManager rm = new FakeResourceManager();
  private SchedulerServer server;

  @AfterEach
  void stopRm() {
    rm.close();
  }

  private void start(String rmAddress) throws Exception {
    Map<String, String> conf = new HashMap<>(Map.of("yarn.rm.webappAddress", rmAddress,
        "tls.plaintext", "true")); // loopback
    server = servers.start(dir, clock, SchedulerConf.fromMap(conf));
  }

  private ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub plugin(String host) {
    return servers.asNode(server, host,
        ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
  }

  private FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub agent(String host) {
    return servers.asNode(server, host, FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
  }

  private ShuffleEvent.Builder event() {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(clock.nanos());
  }

  private ShuffleEvent reduceStarted(String job, int reduce, String host, int maps, int reduces) {
    return event().setReduceStarted(ReduceStarted.newBuilder().setJobId(job)
        .setReduceId(reduce).setHost(host).setTotalMaps(maps).setTotalReduces(reduces)).build();
  }

  private ShuffleEvent mapCompleted(String job, int reduce, int map, String mapHost, long bytes) {
    return event().setMapCompleted(MapCompleted.newBuilder().setJobId(job).setReduceId(reduce)
        .setMapId(map).setHost(mapHost).setRunTimeNanos(1_000_000_000L).setOutputBytes(bytes)
        .setMapsRunning(0)).build();
  }

  private ShuffleEvent indexed(String job, int map, String host, long bytes) {
    return event().setMapOutputIndexed(MapOutputIndexed.newBuilder().setJobId(job).setMapId(map)
        .setHost(host).addPartitionBytes(bytes)).build();
  }

  private ShuffleEvent shuffleFinished(String job, int reduce) {
    return event().setShuffleFinished(ShuffleFinished.newBuilder().setJobId(job)
        .setReduceId(reduce)).build();
  }

  private ShuffleEvent jobFinished(String job) {
    return event().setJobFinished(JobFinished.newBuilder().setJobId(job).setSucceeded(true))
        .build();
  }

  private static ShuffleReport batch(ShuffleEvent... events) {
    return ShuffleReport.newBuilder().addAllEvents(List.of(events)).build();
  }

  private static PolicyLookup lookup(String job, Integer... maps) {
    return PolicyLookup.newBuilder().setJobId(job).setReduceId(0).setBytes(MB)
        .addAllMapIds(List.of(maps)).build();
  }

  /** Codes of the refused events, in batch order. */
  private static List<Integer> refusedCodes(ReportAck ack) {
    return ack.getRefusedList().stream().map(r -> r.getCode()).toList();
  }

  private static final int DENIED = Status.Code.PERMISSION_DENIED.value();
  private static final int INVALID = Status.Code.INVALID_ARGUMENT.value();

  private static void assertStatus(Runnable call, Status.Code code) {
    assertThatThrownBy(call::run).isInstanceOfSatisfying(StatusRuntimeException.class,
        e -> assertThat(e.getStatus().getCode()).isEqualTo(code));
  }

  @Test
  void aHostYarnDidNotPlaceTheJobOnCannotStartFinishOrEndItsReduces() throws Exception {
    rm.place(J, "node1");
    start(rm.address());
    assertThat(plugin("node1").report(batch(reduceStarted(J, 0, "node1", 1, 2))).getAccepted())
        .isEqualTo(1);

    ReportAck ack = plugin("evil").report(batch(reduceStarted(J, 1, "evil", 1, 2),
        shuffleFinished(J, 1), jobFinished(J)));

    assertThat(ack.getAccepted()).isZero();
    assertThat(refusedCodes(ack)).containsExactly(DENIED, DENIED, DENIED);
    assertThat(ack.getRefused(0).getMessage()).contains("YARN");
    var j = server.service().job(J).orElseThrow();
    assertThat(j.state()).isEqualTo("running");
    assertThat(j.reduces()).singleElement().satisfies(r -> assertThat(r.host())
        .isEqualTo("node1"));
    assertThat(server.service().runningJobCount()).isEqualTo(1);
  }

  @Test
  void aHostYarnDidNotPlaceCannotIndexAnotherJobsMapsAndSoReorderIt() throws Exception {
    rm.place(J, "node1", "mj").place(K, "node1", "mk");
    start(rm.address());
    // K is shuffle-bound (10 MB to fetch), J waits for its map: K is first on node1.
    plugin("node1").report(batch(reduceStarted(J, 0, "node1", 1, 1),
        reduceStarted(K, 0, "node1", 1, 1)));
    plugin("node1").report(batch(mapCompleted(K, 0, 0, "mk", 10 * MB)));
    double jBefore = agent("mj").lookupPolicy(lookup(J)).getImportance();
    double kBefore = agent("mk").lookupPolicy(lookup(K)).getImportance();
    assertThat(kBefore).isEqualTo(10.0);

    // Evil indexes J's one map with a byte to fetch: J would become the smallest and first.
    ReportAck ack = plugin("evil").report(batch(indexed(J, 0, "evil", 1)));
    assertThat(refusedCodes(ack)).containsExactly(DENIED);
    assertStatus(() -> agent("evil").lookupPolicy(lookup(J, 0)), Status.Code.PERMISSION_DENIED);

    assertThat(server.service().job(J).orElseThrow().mapsDone()).isZero();
    assertThat(agent("mj").lookupPolicy(lookup(J)).getImportance()).isEqualTo(jBefore);
    assertThat(agent("mk").lookupPolicy(lookup(K)).getImportance()).isEqualTo(kBefore);
  }

  @Test
  void mapIdsOutsideTheJobsMapsAreRefusedAsInvalid() throws Exception {
    rm.place(J, "node1", "node2", "m1");
    start(rm.address());
    // The job's first reduce, on a host YARN placed it on, gives the bound: 2 maps. A later
    // reduce claiming 1000 cannot widen it.
    assertThat(plugin("node1").report(batch(reduceStarted(J, 0, "node1", 2, 2))).getAccepted())
        .isEqualTo(1);
    assertThat(plugin("node2").report(batch(reduceStarted(J, 1, "node2", 1000, 2)))
        .getAccepted()).isEqualTo(1);

    ReportAck ack = plugin("m1").report(batch(indexed(J, 2, "m1", MB),
        indexed(J, 1_000_000, "m1", MB), indexed(J, 1, "m1", MB)));
    assertThat(ack.getAccepted()).isEqualTo(1);
    assertThat(refusedCodes(ack)).containsExactly(INVALID, INVALID);
    assertThat(ack.getRefused(0).getMessage()).contains("mapId");
    assertThat(refusedCodes(plugin("node1").report(batch(mapCompleted(J, 0, 7, "m1", MB)))))
        .containsExactly(INVALID);
    assertThat(refusedCodes(plugin("node2").report(batch(mapCompleted(J, 1, 7, "m1", MB)))))
        .containsExactly(INVALID);
    assertStatus(() -> agent("m1").lookupPolicy(lookup(J, 5)), Status.Code.INVALID_ARGUMENT);
    assertThat(server.service().job(J).orElseThrow().mapsDone()).isEqualTo(1);
  }

  @Test
  void anHonestHostWhoseContainerYarnListsAfterTheLastRefreshIsAcceptedOnceYarnAnswers()
      throws Exception {
    rm.place(J, "node1");
    start(rm.address());
    assertThat(plugin("node1").report(batch(reduceStarted(J, 0, "node1", 1, 2))).getAccepted())
        .isEqualTo(1);

    // YARN places reduce 1 on node2 after the scheduler last asked; its task reports at once,
    // while the ResourceManager is slow to answer.
    rm.place(J, "node2");
    CompletableFuture<Void> gate = new CompletableFuture<>();
    rm.answerWhen(gate);
    var node2 = servers.asNode(server, "node2",
        ShuffleReportServiceGrpc.ShuffleReportServiceFutureStub.class);
    var pending = node2.report(batch(reduceStarted(J, 1, "node2", 1, 2),
        mapCompleted(J, 1, 0, "m1", MB)));
    TimeUnit.MILLISECONDS.sleep(500);
    assertThat(pending.isDone()).as("the report waits for YARN's answer").isFalse();

    gate.complete(null);
    assertThat(pending.get(10, TimeUnit.SECONDS).getAccepted()).isEqualTo(2);
    assertThat(server.service().job(J).orElseThrow().reduces()).hasSize(2);
  }

  /**
   * Reduces of job J on node0..node19 report while the ResourceManager is slow to answer the
   * refresh node0's report started; YARN placed node1..node19 before ({@code placedFirst}) or
   * after the ResourceManager read that request. Returns once all were accepted.
   */
  private void burstOfNewHosts(boolean placedFirst) throws Exception {
    rm.place(J, "node0");
    if (placedFirst) {
      for (int r = 1; r < 20; r++) {
        rm.place(J, "node" + r);
      }
    }
    start(rm.address());
    CompletableFuture<Void> gate = new CompletableFuture<>();
    rm.answerWhen(gate);
    List<CompletableFuture<io.datcp.scheduler.ingest.Ack>> acks = new java.util.ArrayList<>();
    for (int r = 0; r < 20; r++) {
      String host = "node" + r;
      if (!placedFirst) {
        rm.place(J, host);
      }
      acks.add(server.service().reports().report(new Caller(host, true), "", 0,
          List.of(new JobEvent.ReduceStarted(clock.nanos(), J, r, host, 1, 20,
              JobRegistry.UNKNOWN, 0))));
      if (r == 0) {
        // node0's refresh has reached the ResourceManager, which has read its answer
        await().atMost(Duration.ofSeconds(10)).until(() -> rm.containerRequests() == 1);
      }
    }
    gate.complete(null);

    for (var ack : acks) {
      assertThat(ack.get(10, TimeUnit.SECONDS).accepted()).isEqualTo(1);
    }
    assertThat(server.service().job(J).orElseThrow().reduces()).hasSize(20);
  }

  @Test
  void aBurstOfNewHostsThatTheRefreshInFlightListsCostsTheResourceManagerOneRequest()
      throws Exception {
    burstOfNewHosts(true);
    assertThat(rm.containerRequests()).isEqualTo(1);
  }

  @Test
  void aBurstOfNewHostsPlacedAfterTheRefreshInFlightCostsOneRequestMore() throws Exception {
    burstOfNewHosts(false);
    // the answer in flight lists node0 only: one refresh for every host that asked meanwhile
    assertThat(rm.containerRequests()).isEqualTo(2);
  }

  @Test
  void verifyingAnHonestJobCostsTheResourceManagerOneRequest() throws Exception {
    rm.place(J, "node1", "m1");
    start(rm.address());

    assertThat(plugin("node1").report(batch(reduceStarted(J, 0, "node1", 1, 1))).getAccepted())
        .isEqualTo(1);
    agent("m1").lookupPolicy(lookup(J, 0));
    assertThat(plugin("node1").report(batch(mapCompleted(J, 0, 0, "m1", MB),
        shuffleFinished(J, 0))).getAccepted()).isEqualTo(2);

    // the first attempt's containers list every host that spoke: no attempt list, no AM
    assertThat(rm.containerRequests()).isEqualTo(1);
    assertThat(rm.attemptRequests()).isZero();
    assertThat(rm.amRequests()).isZero();
  }

  @Test
  void aMapHostWhoseContainerEndedBeforeTheSchedulerHeardOfItIsVerifiedByTheJobsAm()
      throws Exception {
    // A new leader (or a restarted scheduler) hears the map hosts' agents send their indexes
    // again: the maps ran and their containers ended, so YARN lists only the reduce's.
    rm.place(J, "node1").mapRanAndEnded(J, 0, "m1").mapRanAndEnded(J, 1, "m2");
    start(rm.address());
    assertThat(plugin("node1").report(batch(reduceStarted(J, 0, "node1", 2, 1))).getAccepted())
        .isEqualTo(1);

    ReportAck m1 = plugin("m1").report(batch(indexed(J, 0, "m1", 10 * MB)));
    assertThat(m1.getRefusedList()).as("an index of a map that ran there").isEmpty();
    agent("m2").lookupPolicy(lookup(J, 1)); // a lookup naming the map it serves: not refused
    assertThat(server.service().job(J).orElseThrow().mapsDone()).isEqualTo(2);

    // The AM names where each map ran: a host naming a map that ran elsewhere is still refused.
    assertThat(refusedCodes(plugin("evil").report(batch(indexed(J, 0, "evil", MB)))))
        .containsExactly(DENIED);
    assertStatus(() -> agent("evil").lookupPolicy(lookup(J, 1)), Status.Code.PERMISSION_DENIED);
    assertThat(rm.amRequests()).as("one AM request per unlisted claim").isEqualTo(4);
  }

  @Test
  void aHostOfTheAmsNextAttemptIsAcceptedAndAHostOfNoneStillRefused() throws Exception {
    rm.place(J, "node1");
    start(rm.address());
    assertThat(plugin("node1").report(batch(reduceStarted(J, 0, "node1", 1, 2))).getAccepted())
        .isEqualTo(1);

    // the AM failed; YARN runs the second attempt's reduce on node2
    rm.restartAm(J).place(J, "node2");
    assertThat(plugin("node2").report(batch(reduceStarted(J, 1, "node2", 1, 2))).getAccepted())
        .isEqualTo(1);
    assertThat(refusedCodes(plugin("evil").report(batch(jobFinished(J)))))
        .containsExactly(DENIED);
    assertThat(server.service().job(J).orElseThrow().reduces()).hasSize(2);
  }

  @Test
  void anUnreachableResourceManagerFailsOpenToTheHostChecksAndIsCountedOncePerOutage()
      throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    start("http://127.0.0.1:" + closedPort);

    assertThat(plugin("node1").report(batch(reduceStarted(J, 0, "node1", 1, 2))).getAccepted())
        .isEqualTo(1);
    // Unverifiable: today's host checks only. Evil may start a reduce on itself...
    assertThat(plugin("evil").report(batch(reduceStarted(J, 1, "evil", 1, 2))).getAccepted())
        .isEqualTo(1);
    // ...but still not speak for node1's reduce.
    assertThat(refusedCodes(plugin("evil").report(batch(shuffleFinished(J, 0)))))
        .containsExactly(DENIED);

    String metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + server.httpPort() + "/metrics")).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString()).body();
    assertThat(metrics).contains("datcp_yarn_outages_total 1.0");
    assertThat(metrics).containsPattern("datcp_report_events_unverified_total [1-9]");
  }
}
