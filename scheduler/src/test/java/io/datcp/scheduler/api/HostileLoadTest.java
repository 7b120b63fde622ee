package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.FlowKey;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.QuenchOutcome;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.proto.v1.SwitchConfig;
import io.datcp.proto.v1.SwitchConfigRequest;
import io.datcp.proto.v1.WatchRequest;
import io.datcp.scheduler.MutableClock;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.config.SchedulerConf;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 5: a node with a valid token of its own sends the largest valid messages it
 * can, through the real gRPC API, at the scheduler's default configuration. Each structure a
 * peer feeds stops at its documented bound, and the peer is told which limit it hit (the
 * config key) with RESOURCE_EXHAUSTED (a capacity is full) or INVALID_ARGUMENT (one message is
 * too large).
 */
class HostileLoadTest {
  private static final long MB = 1_000_000L;
  private static final int EXHAUSTED = Status.Code.RESOURCE_EXHAUSTED.value();
  private static final int INVALID = Status.Code.INVALID_ARGUMENT.value();

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private SchedulerServer server;

  private void start() throws Exception {
    server = servers.start(dir, clock,
        SchedulerConf.fromMap(Map.of("tls.plaintext", "true"))); // loopback
  }

  private ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub plugin(String host) {
    return servers.asNode(server, host,
        ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
  }

  private FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub agent(String host) {
    return servers.asNode(server, host,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
  }

  private ShuffleEvent.Builder event() {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(clock.nanos());
  }

  private ShuffleEvent reduceStarted(String job, int reduce, String host, int maps, int reduces) {
    return event().setReduceStarted(ReduceStarted.newBuilder().setJobId(job)
        .setReduceId(reduce).setHost(host).setTotalMaps(maps).setTotalReduces(reduces)).build();
  }

  private ShuffleEvent mapOutput(String job, int map, String host, int partitions) {
    return event().setMapOutputIndexed(MapOutputIndexed.newBuilder().setJobId(job)
        .setMapId(map).setHost(host)
        .addAllPartitionBytes(Collections.nCopies(partitions, 1_000_000L))).build();
  }

  private static ShuffleReport batch(List<ShuffleEvent> events) {
    return ShuffleReport.newBuilder().addAllEvents(events).build();
  }

  private static void assertRefused(ReportAck ack, int index, int code, String key) {
    assertThat(ack.getRefusedList()).as("refused events").anySatisfy(r -> {
      assertThat(r.getIndex()).isEqualTo(index);
      assertThat(r.getCode()).isEqualTo(code);
      assertThat(r.getMessage()).contains(key);
    });
  }

  private static void assertStatus(ThrowingCallable call, Status.Code code, String key) {
    assertThatThrownBy(call).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
      assertThat(e.getStatus().getCode()).isEqualTo(code);
      assertThat(e.getStatus().getDescription()).contains(key);
    });
  }

  @Test
  void aMapOutputIndexWithAHundredThousandPartitionsIsRefusedByJobsMaxReduces() throws Exception {
    start();
    var evil = plugin("evil");
    // 200 of these took about 209 MB: one is refused before it is held
    ReportAck ack = evil.report(batch(List.of(mapOutput("job_1_1", 0, "evil", 100_000))));

    assertThat(ack.getAccepted()).isZero();
    assertRefused(ack, 0, INVALID, "jobs.maxReduces");
    assertThat(server.service().shuffleEntries()).isZero();
  }

  @Test
  void aJobsMapsAndReducesAreBoundedByJobsMaxMapsAndJobsMaxReduces() throws Exception {
    start();
    var evil = plugin("evil");
    ReportAck ack = evil.report(batch(List.of(
        reduceStarted("job_1_1", 0, "evil", 100_001, 1),
        reduceStarted("job_1_2", 0, "evil", 1, 10_001),
        reduceStarted("job_1_3", 0, "evil", 100_000, 10_000),
        event().setMapCompleted(MapCompleted.newBuilder().setJobId("job_1_3").setReduceId(0)
            .setMapId(100_000).setHost("m").setOutputBytes(MB).setMapsRunning(-1)).build(),
        event().setFetchFinished(FetchFinished.newBuilder().setJobId("job_1_3").setReduceId(0)
            .setSourceHost("m").addMapIds(Integer.MAX_VALUE).setBytes(MB)).build())));

    assertThat(ack.getAccepted()).isEqualTo(1);
    assertRefused(ack, 0, INVALID, "jobs.maxMaps");
    assertRefused(ack, 1, INVALID, "jobs.maxReduces");
    assertRefused(ack, 3, INVALID, "jobs.maxMaps");
    assertRefused(ack, 4, INVALID, "jobs.maxMaps");
    assertThat(server.service().runningJobCount()).isEqualTo(1);
  }

  /** Sends map outputs of 10,000 sizes for maps [from, to) of {@code job}, 10 to a batch. */
  private List<ReportAck> mapOutputs(String host, String job, int from, int to) {
    List<ReportAck> acks = new ArrayList<>();
    for (int first = from; first < to; first += 10) {
      acks.add(plugin(host).report(batch(IntStream.range(first, Math.min(to, first + 10))
          .mapToObj(m -> mapOutput(job, m, host, 10_000)).toList())));
    }
    return acks;
  }

  @Test
  void mapOutputsOfOneHostStopAtJobsMaxShuffleEntriesPerHost() throws Exception {
    start();
    plugin("evil").report(batch(List.of(reduceStarted("job_1_1", 0, "evil", 100_000, 10_000))));
    // 10,000 sizes per map output: its share of 500,000 is full after 50 of them
    List<ReportAck> acks = mapOutputs("evil", "job_1_1", 0, 60);

    assertThat(acks.stream().mapToInt(ReportAck::getAccepted).sum()).isEqualTo(50);
    assertRefused(acks.get(5), 0, EXHAUSTED, "jobs.maxShuffleEntriesPerHost");
    // an honest host's map outputs are still taken
    plugin("node1").report(batch(List.of(reduceStarted("job_2_1", 0, "node1", 10, 10))));
    assertThat(plugin("node1").report(batch(List.of(mapOutput("job_2_1", 0, "node1", 10))))
        .getAccepted()).isEqualTo(1);
  }

  @Test
  void mapOutputsStopAtJobsMaxShuffleEntries() throws Exception {
    start();
    // five hosts, each within its share of 500,000: the global 2,000,000 fills after four
    List<ReportAck> acks = new ArrayList<>();
    for (int h = 0; h < 5; h++) {
      String host = "evil" + h;
      String job = "job_1_" + h;
      plugin(host).report(batch(List.of(reduceStarted(job, 0, host, 100_000, 10_000))));
      acks.addAll(mapOutputs(host, job, 0, 50));
    }

    assertThat(acks.stream().mapToInt(ReportAck::getAccepted).sum()).isEqualTo(200);
    assertRefused(acks.get(20), 0, EXHAUSTED, "jobs.maxShuffleEntries (2000000)");
    assertThat(server.service().shuffleEntries()).isLessThanOrEqualTo(2_000_000 + 1);
  }

  @Test
  void oneHostStopsAtJobsMaxReducesPerHost() throws Exception {
    start();
    var evil = plugin("evil");
    ReportAck first = evil.report(batch(IntStream.range(0, 1000)
        .mapToObj(j -> reduceStarted("job_1_" + j, 0, "evil", 1, 1)).toList()));
    ReportAck more = evil.report(batch(List.of(reduceStarted("job_2_1", 0, "evil", 1, 1),
        reduceStarted("job_1_0", 1, "evil", 1, 2))));

    assertThat(first.getAccepted()).isEqualTo(1000);
    assertThat(more.getAccepted()).isZero();
    assertRefused(more, 0, EXHAUSTED, "jobs.maxReducesPerHost");
    assertRefused(more, 1, EXHAUSTED, "jobs.maxReducesPerHost");
    assertThat(server.service().runningJobCount()).isEqualTo(1000);
  }

  @Test
  void aHostThatKeepsSendingEventsRefusedForLimitsHasItsCallsRefusedWhole() throws Exception {
    start();
    var evil = plugin("evil");
    assertThat(evil.report(batch(IntStream.range(0, 1000)
        .mapToObj(j -> reduceStarted("job_1_" + j, 0, "evil", 1, 1)).toList())).getAccepted())
        .isEqualTo(1000);
    for (int b = 2; b <= 4; b++) {
      int batch = b;
      ReportAck ack = evil.report(batch(IntStream.range(0, 1000)
          .mapToObj(j -> reduceStarted("job_" + batch + "_" + j, 0, "evil", 1, 1)).toList()));
      assertThat(ack.getAccepted()).isZero();
      assertRefused(ack, 999, EXHAUSTED, "jobs.maxReducesPerHost");
    }
    // 3,000 events refused for a limit, 2,000 forgiven at once and 100 a second: the next call
    // is refused before it is read
    assertThatThrownBy(() -> evil.report(batch(List.of(reduceStarted("job_9_1", 0, "evil", 1,
        1))))).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
          assertThat(e.getStatus().getDescription()).contains("'evil'")
              .contains("refused for a limit");
        });
    // another host is served as before
    assertThat(plugin("node1").report(batch(List.of(reduceStarted("job_5_1", 0, "node1", 1, 1))))
        .getAccepted()).isEqualTo(1);
  }

  @Test
  void thousandsOfFakeJobsStopAtJobsMaxRunning() throws Exception {
    start();
    int refused = 0;
    for (int h = 0; h < 11; h++) {
      String host = "evil" + h;
      int from = h * 1000;
      ReportAck ack = plugin(host).report(batch(IntStream.range(from, from + 1000)
          .mapToObj(j -> reduceStarted("job_1_" + j, 0, host, 1, 1)).toList()));
      for (var r : ack.getRefusedList()) {
        assertThat(r.getCode()).isEqualTo(EXHAUSTED);
        assertThat(r.getMessage()).contains("jobs.maxRunning");
        refused++;
      }
    }

    assertThat(refused).isEqualTo(1000);
    assertThat(server.service().runningJobCount()).isEqualTo(10_000);
  }

  /** A job of the attacker's with one reduce on its own host, for lookups and outcomes. */
  private void ownJob(String host, String job) {
    ownJob(host, job, 1000);
  }

  private void ownJob(String host, String job, int maps) {
    plugin(host).report(batch(List.of(reduceStarted(job, 0, host, maps, 1))));
  }

  private static FlowKey.Builder key(String job, int epoch, int maps) {
    return FlowKey.newBuilder().setJobId(job).setReduceId(0).setSourceHost("evil")
        .addAllMapIds(IntStream.range(0, maps).boxed().toList()).setSourceAddress("10.0.0.1")
        .setSourcePort(40000).setDestinationAddress("10.0.0.2").setDestinationPort(13562)
        .setEpoch(epoch);
  }

  private static PolicyLookup lookup(String job, int epoch, int maps) {
    return PolicyLookup.newBuilder().setJobId(job).setReduceId(0).setBytes(MB)
        .setFlow(key(job, epoch, maps)).build();
  }

  @Test
  void lookupInterestOfOneHostStopsAtLookupsMaxInterestPerHost() throws Exception {
    start();
    // more maps than flows.maxMapIds, so the 1,001 map ids below are refused for that limit
    // and not for naming a map the job does not have
    ownJob("evil", "job_1_1", 2000);
    var evil = agent("evil");
    // each flow it follows costs 1 + its 1,000 map ids: the 20th is over 20,000
    for (int epoch = 0; epoch < 19; epoch++) {
      evil.lookupPolicy(lookup("job_1_1", epoch, 1000));
    }
    assertStatus(() -> evil.lookupPolicy(lookup("job_1_1", 19, 1000)),
        Status.Code.RESOURCE_EXHAUSTED, "lookups.maxInterestPerHost");
    assertStatus(() -> evil.lookupPolicy(lookup("job_1_1", 20, 1001)),
        Status.Code.INVALID_ARGUMENT, "flows.maxMapIds");

    assertThat(server.service().interestOf("evil")).isEqualTo(19 * 1001);
    // another host's interest is its own
    ownJob("node1", "job_1_2");
    agent("node1").lookupPolicy(lookup("job_1_2", 0, 1));
    assertThat(server.service().interestOf("node1")).isEqualTo(2);
  }

  @Test
  void outcomesKeptForTheTimelineStopAtFlowsRetainTotal() throws Exception {
    start();
    var evil = agent("evil");
    // 21 jobs x 10,000 flows each (flows.retainPerJob): 210,000 outcomes whose keys name 4 maps,
    // 5 units each, over the 500,000 units of flows.retainTotal
    for (int j = 0; j < 21; j++) {
      String job = "job_1_" + j;
      ownJob("evil", job);
      for (int b = 0; b < 10; b++) {
        FlowOutcomes.Builder batch = FlowOutcomes.newBuilder();
        for (int i = 0; i < 1000; i++) {
          long t = clock.nanos();
          batch.addOutcomes(FlowOutcome.newBuilder().setJobId(job).setReduceId(0)
              .setSourceHost("evil").setDestinationHost("evil").setBytes(MB)
              .setStartUnixNanos(t).setFinishUnixNanos(t + 1).setMet(true)
              .setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE).setFlow(key(job, b * 1000 + i, 4)));
        }
        assertThat(evil.reportOutcomes(batch.build()).getRefusedCount()).isZero();
      }
    }

    int kept = IntStream.range(0, 21)
        .map(j -> server.service().flows("job_1_" + j, 10_000).size()).sum();
    assertThat(kept).isEqualTo(100_000);
    assertThat(server.service().retainedFlows()).isEqualTo(500_000);
    assertThat(server.service().overallTally().total()).isEqualTo(210_000);
    ReportAck tooMany = evil.reportOutcomes(FlowOutcomes.newBuilder().addOutcomes(
        FlowOutcome.newBuilder().setJobId("job_1_0").setReduceId(0).setSourceHost("evil")
            .setBytes(MB).setStartUnixNanos(clock.nanos())
            .setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE).setFlow(key("job_1_0", 0, 1001)))
        .build());
    assertRefused(tooMany, 0, INVALID, "flows.maxMapIds");
  }

  @Test
  void updateStreamsOfOneHostStopAtWatchMaxStreamsPerHost() throws Exception {
    start();
    var evil = servers.asNode(server, "evil", FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
    List<Throwable> errors = new CopyOnWriteArrayList<>();
    for (int i = 0; i < 9; i++) {
      evil.watchPolicies(WatchRequest.getDefaultInstance(), new StreamObserver<PolicyUpdate>() {
        @Override
        public void onNext(PolicyUpdate u) {}

        @Override
        public void onError(Throwable t) {
          errors.add(t);
        }

        @Override
        public void onCompleted() {}
      });
    }

    await().until(() -> !errors.isEmpty());
    assertThat(errors).singleElement().isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(e.getStatus().getDescription()).contains("watch.maxStreamsPerHost");
    });
    assertThat(server.service().openWatches()).isEqualTo(8);
    // switch-config streams count against the same bound
    List<Throwable> switchErrors = new CopyOnWriteArrayList<>();
    evil.watchSwitchConfig(SwitchConfigRequest.newBuilder().setSwitchName("tor1").build(),
        new StreamObserver<SwitchConfig>() {
          @Override
          public void onNext(SwitchConfig c) {}

          @Override
          public void onError(Throwable t) {
            switchErrors.add(t);
          }

          @Override
          public void onCompleted() {}
        });
    await().until(() -> !switchErrors.isEmpty());
    assertThat(switchErrors).singleElement().isInstanceOfSatisfying(
        StatusRuntimeException.class, e -> assertThat(e.getStatus().getDescription())
            .contains("watch.maxStreamsPerHost"));
  }

  @Test
  void reporterIdsOfOneHostStopAtReportsMaxReportersPerHost() throws Exception {
    start();
    var evil = plugin("evil");
    for (int i = 0; i < 1024; i++) {
      evil.report(ShuffleReport.newBuilder().setReporterId("r" + i).setBatchId(1).build());
    }
    assertStatus(() -> evil.report(ShuffleReport.newBuilder().setReporterId("r1024")
        .setBatchId(1).build()), Status.Code.RESOURCE_EXHAUSTED, "reports.maxReportersPerHost");

    // an honest host's reporter is still remembered, and a known one of the attacker's too
    var honest = plugin("node1");
    honest.report(ShuffleReport.newBuilder().setReporterId("agent").setBatchId(1).build());
    assertThat(honest.report(ShuffleReport.newBuilder().setReporterId("agent").setBatchId(1)
        .build()).getDuplicate()).isTrue();
    assertThat(evil.report(ShuffleReport.newBuilder().setReporterId("r5").setBatchId(2).build())
        .getDuplicate()).isFalse();
  }
}
