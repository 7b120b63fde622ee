package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.ContainersRunning;
import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.FlowKey;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.JobPriority;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapLost;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.MarkMode;
import io.datcp.proto.v1.PolicyAdminServiceGrpc;
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
import io.datcp.proto.v1.SwitchPort;
import io.datcp.proto.v1.WatchRequest;
import io.datcp.scheduler.MutableClock;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.config.SchedulerConf;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The extended contract (issue 7) over real connections with node credentials: map-side
 * partition sizes and container counts, batch dedup, flow keys, watch resync and the switch
 * configuration stream.
 */
class ContractTest {
  private static final long MB = 1_000_000L;
  private static final long S = 1_000_000_000L;
  private static final String JOB = "job_1700000000000_0001";

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private SchedulerServer server;

  private void start(Map<String, String> conf) throws Exception {
    // a prior of 0.8 of the 100 Mbit/s downlink keeps the deadlines round (10 MB in 1 s)
    Map<String, String> all = new HashMap<>(Map.of("jobs.attributesFrom", "reports",
        "planner.targetUtilisation", "0.8", "tls.plaintext", "true"));
    all.putAll(conf);
    server = servers.start(dir, clock, SchedulerConf.fromMap(all));
  }

  /** A stub holding {@code host}'s node token. */
  private <T> T as(String host, Class<T> type) {
    return servers.asNode(server, host, type);
  }

  private ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub plugin(String host) {
    return as(host, ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
  }

  private FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub agent(String host) {
    return as(host, FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
  }

  private static ShuffleEvent.Builder at(long t) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(t);
  }

  private static ShuffleEvent reduceStarted(long t, int reduce, String host, int maps,
      int reduces) {
    return at(t).setReduceStarted(ReduceStarted.newBuilder().setJobId(JOB).setReduceId(reduce)
        .setHost(host).setTotalMaps(maps).setTotalReduces(reduces).setQueue("default")
        .setUser("alice").setJobName("wc").setPriority(JobPriority.JOB_PRIORITY_NORMAL)).build();
  }

  private static ShuffleEvent mapDone(long t, int map, long outputBytes, int running) {
    return at(t).setMapCompleted(MapCompleted.newBuilder().setJobId(JOB).setReduceId(0)
        .setMapId(map).setHost("m" + map).setRunTimeNanos(5 * S).setOutputBytes(outputBytes)
        .setMapsRunning(running)).build();
  }

  private static ShuffleReport batch(ShuffleEvent... events) {
    return ShuffleReport.newBuilder().addAllEvents(List.of(events)).build();
  }

  private static FlowKey key(int map, int epoch) {
    return FlowKey.newBuilder().setJobId(JOB).setReduceId(0).setSourceHost("m0")
        .addMapIds(map).setSourceAddress("10.0.0.10").setSourcePort(13562)
        .setDestinationAddress("10.0.0.1").setDestinationPort(40000).setEpoch(epoch).build();
  }

  private static PolicyLookup lookup(FlowKey k) {
    return PolicyLookup.newBuilder().setJobId(JOB).setReduceId(0).setBytes(10 * MB)
        .addAllMapIds(k.getMapIdsList()).setFlow(k).build();
  }

  @Test
  void aLostMapOutputIsNoLongerWaitedForAndOnlyAReduceOfTheJobMayReportIt() throws Exception {
    start(Map.of());
    long t0 = clock.nanos();
    plugin("node1").report(batch(reduceStarted(t0, 0, "node1", 2, 1), mapDone(t0, 0, 10 * MB, 1),
        mapDone(t0, 1, 10 * MB, 0)));
    PolicyLookup flow = PolicyLookup.newBuilder().setJobId(JOB).setReduceId(0)
        .setBytes(10 * MB).build();
    // 20 MB to fetch at 80 Mbit/s
    assertThat(agent("m1").lookupPolicy(flow).getDeadlineNanos()).isEqualTo(2 * S);
    ShuffleEvent lost = at(t0).setMapLost(MapLost.newBuilder().setJobId(JOB).setReduceId(0)
        .setMapId(0).setHost("m0").setAttempt(0)).build();

    // node2 runs no reduce of the job: refused, nothing changes
    ReportAck refused = plugin("node2").report(batch(lost));
    assertThat(refused.getRefusedList()).singleElement().satisfies(r ->
        assertThat(r.getCode()).isEqualTo(Status.Code.PERMISSION_DENIED.value()));
    assertThat(server.service().job(JOB).orElseThrow().mapsDone()).isEqualTo(2);

    assertThat(plugin("node1").report(batch(lost)).getAccepted()).isEqualTo(1);
    assertThat(server.service().job(JOB).orElseThrow().mapsDone()).isEqualTo(1);
    assertThat(server.service().job(JOB).orElseThrow().reduces().get(0).remainingBytes())
        .isEqualTo(10 * MB);
    // a map is not done again: the job's shuffle waits for it, a median map length (5 s)
    assertThat(agent("m1").lookupPolicy(flow).getDeadlineNanos()).isEqualTo(5 * S);

    plugin("node1").report(batch(at(t0).setMapCompleted(MapCompleted.newBuilder().setJobId(JOB)
        .setReduceId(0).setMapId(0).setHost("m2").setAttempt(1).setOutputBytes(10 * MB)
        .setMapsRunning(0)).build()));
    assertThat(server.service().job(JOB).orElseThrow().mapsDone()).isEqualTo(2);
    assertThat(server.service().job(JOB).orElseThrow().reduces().get(0).remainingBytes())
        .isEqualTo(20 * MB);
    assertThat(agent("m1").lookupPolicy(flow).getDeadlineNanos()).isEqualTo(2 * S);
  }

  @Test
  void mapSidePartitionSizesReplaceGuessesInTheDeadline() throws Exception {
    start(Map.of());
    long t0 = clock.nanos();
    plugin("node1").report(batch(reduceStarted(t0, 0, "node1", 1, 2), mapDone(t0, 0, -1, 0)));
    plugin("node2").report(batch(reduceStarted(t0, 1, "node2", 1, 2)));
    // Without sizes the planner can only go by the 10 MB lookup: 1.0 s at 80 Mbit/s.
    assertThat(agent("m0").lookupPolicy(PolicyLookup.newBuilder().setJobId(JOB).setReduceId(0)
        .setBytes(10 * MB).build()).getDeadlineNanos()).isEqualTo(S);

    ReportAck ack = plugin("m0").report(batch(at(t0).setMapOutputIndexed(MapOutputIndexed
        .newBuilder().setJobId(JOB).setMapId(0).setHost("m0")
        .addPartitionBytes(30 * MB).addPartitionBytes(10 * MB)).build()));

    assertThat(ack.getAccepted()).isEqualTo(1);
    // Reduce 0 has 30 MB to fetch on node1's downlink: 3.0 s.
    assertThat(server.service().job(JOB).orElseThrow().reduces().get(0).remainingBytes())
        .isEqualTo(30 * MB);
    assertThat(agent("m0").lookupPolicy(PolicyLookup.newBuilder().setJobId(JOB).setReduceId(0)
        .setBytes(10 * MB).build()).getDeadlineNanos()).isEqualTo(3 * S);
  }

  @Test
  void aLookupsMapIdsCountAsDoneMaps() throws Exception {
    start(Map.of());
    long t0 = clock.nanos();
    plugin("node1").report(batch(reduceStarted(t0, 0, "node1", 3, 1)));
    // map 2's output is being served to reduce 0: map 2 is done, its partition is the flow
    agent("m2").lookupPolicy(PolicyLookup.newBuilder().setJobId(JOB).setReduceId(0)
        .setBytes(7 * MB).addMapIds(2).build());
    assertThat(server.service().job(JOB).orElseThrow().mapsDone()).isEqualTo(1);
    assertThat(server.service().job(JOB).orElseThrow().reduces().get(0).remainingBytes())
        .isEqualTo(7 * MB);
  }

  @Test
  void runningContainersGiveTheMapWavesWhenReducesDoNotReportRunningMaps() throws Exception {
    start(Map.of());
    long t0 = clock.nanos();
    plugin("node1").report(batch(reduceStarted(t0, 0, "node1", 7, 1),
        mapDone(t0, 0, 10 * MB, -1)));
    var lookup = PolicyLookup.newBuilder().setJobId(JOB).setReduceId(0).setBytes(MB).build();
    // Slots unknown: the 6 maps left are taken to run at once, one 5 s wave.
    assertThat(agent("m0").lookupPolicy(lookup).getDeadlineNanos() / 1e9)
        .isCloseTo(5.0, within(0.01));

    ShuffleEvent three = at(t0).setContainersRunning(ContainersRunning.newBuilder()
        .setJobId(JOB).setHost("m1").setRunning(3)).build();
    ShuffleEvent one = at(t0).setContainersRunning(ContainersRunning.newBuilder()
        .setJobId(JOB).setHost("m2").setRunning(1)).build();
    plugin("m1").report(batch(three));
    plugin("m2").report(batch(one));

    // 4 containers - the AM - 1 reduce = 2 map slots: 6 maps in 3 waves of 5 s.
    assertThat(agent("m0").lookupPolicy(lookup).getDeadlineNanos() / 1e9)
        .isCloseTo(15.0, within(0.01));
  }

  @Test
  void aRetriedBatchIsAcknowledgedAsDuplicateAndAppliedOnce() throws Exception {
    start(Map.of());
    long t0 = clock.nanos();
    ShuffleReport first = batch(reduceStarted(t0, 0, "node1", 1, 1), mapDone(t0, 0, 10 * MB, 0),
        at(t0).setFetchFinished(FetchFinished.newBuilder().setJobId(JOB).setReduceId(0)
            .setSourceHost("m0").addMapIds(0).setBytes(4 * MB).setDurationNanos(S)).build())
        .toBuilder().setReporterId("attempt_r_000000_0").setBatchId(1).build();

    assertThat(plugin("node1").report(first).getDuplicate()).isFalse();
    ReportAck again = plugin("node1").report(first);

    assertThat(again.getDuplicate()).isTrue();
    assertThat(again.getAccepted()).isZero();
    assertThat(server.service().job(JOB).orElseThrow().reduces().get(0).fetchedBytes())
        .isEqualTo(4 * MB);
    // The same batch id from another reporter instance is a different batch.
    assertThat(plugin("node1").report(first.toBuilder().setReporterId("attempt_r_000000_1")
        .build()).getDuplicate()).isFalse();

    FlowOutcomes outcomes = FlowOutcomes.newBuilder().setReporterId("agent-m0").setBatchId(7)
        .addOutcomes(outcome(key(0, 1), true)).build();
    assertThat(agent("m0").reportOutcomes(outcomes).getDuplicate()).isFalse();
    assertThat(agent("m0").reportOutcomes(outcomes).getDuplicate()).isTrue();
    assertThat(server.service().flows(JOB, 10)).hasSize(1);
  }

  private FlowOutcome outcome(FlowKey k, boolean met) {
    long t = clock.nanos();
    return FlowOutcome.newBuilder().setJobId(JOB).setReduceId(0).setSourceHost("m0")
        .setDestinationHost("node1").setBytes(10 * MB).setStartUnixNanos(t)
        .setDeadlineUnixNanos(t + S).setFinishUnixNanos(t + S / 2).setMet(met)
        .setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE).setFlow(k).build();
  }

  @Test
  void flowsOfOneReduceOnDifferentConnectionsOrEpochsAreDistinct() throws Exception {
    start(Map.of());
    long t0 = clock.nanos();
    plugin("node1").report(batch(reduceStarted(t0, 0, "node1", 2, 1),
        mapDone(t0, 0, 10 * MB, 1)));
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    as("m0", FlowPolicyServiceGrpc.FlowPolicyServiceStub.class).watchPolicies(
        WatchRequest.newBuilder().build(), TestServices.collect(updates));
    await().until(() -> server.service().openWatches() == 1);
    FlowKey a = key(0, 1);
    FlowKey b = key(0, 2);

    assertThat(agent("m0").lookupPolicy(lookup(a)).getFlow()).isEqualTo(a);
    assertThat(agent("m0").lookupPolicy(lookup(b)).getFlow()).isEqualTo(b);
    agent("m0").reportOutcomes(FlowOutcomes.newBuilder().addOutcomes(outcome(a, true)).build());

    clock.advance(Duration.ofSeconds(1));
    plugin("node1").report(batch(mapDone(clock.nanos(), 1, 10 * MB, 0)));

    await().untilAsserted(() -> assertThat(updates).isNotEmpty());
    assertThat(updates).extracting(u -> u.getPolicy().getFlow()).containsOnly(b);

    agent("m0").reportOutcomes(FlowOutcomes.newBuilder().addOutcomes(outcome(a, false)).build());
    agent("m0").reportOutcomes(FlowOutcomes.newBuilder().addOutcomes(outcome(b, true)).build());
    // The second outcome of flow a replaced the first; b is a flow of its own.
    assertThat(server.service().flows(JOB, 10)).extracting(o -> o.flow().epoch())
        .containsExactlyInAnyOrder(1L, 2L);
    assertThat(server.service().job(JOB).orElseThrow().flows()).isEqualTo(2);
  }

  @Test
  void aResyncWatchGetsASnapshotOfFlowsInFlightThenLiveUpdates() throws Exception {
    start(Map.of());
    long t0 = clock.nanos();
    plugin("node1").report(batch(reduceStarted(t0, 0, "node1", 2, 1),
        mapDone(t0, 0, 10 * MB, 1)));
    agent("m0").lookupPolicy(lookup(key(0, 1)));
    agent("m0").lookupPolicy(lookup(key(0, 2)));

    List<PolicyUpdate> all = new CopyOnWriteArrayList<>();
    as("m0", FlowPolicyServiceGrpc.FlowPolicyServiceStub.class).watchPolicies(
        WatchRequest.newBuilder().setResync(true).build(), TestServices.collect(all));
    // the heartbeats (one a second, see the next test) come between them, as they may
    Supplier<List<PolicyUpdate>> updatesOf = () -> all.stream()
        .filter(u -> !u.getHeartbeat()).toList();
    await().untilAsserted(() -> assertThat(updatesOf.get()).hasSize(3));
    List<PolicyUpdate> updates = updatesOf.get();
    assertThat(updates.subList(0, 2)).extracting(u -> u.getPolicy().getFlow().getEpoch())
        .containsExactlyInAnyOrder(1, 2);
    assertThat(updates.subList(0, 2)).allSatisfy(u -> assertThat(u.getPolicy()
        .getDeadlineUnixNanos()).isEqualTo(t0 + 5 * S));
    assertThat(updates.get(2).getSnapshotEnd()).isTrue();
    assertThat(updates.get(2).hasPolicy()).isFalse();

    clock.advance(Duration.ofSeconds(1));
    plugin("node1").report(batch(mapDone(clock.nanos(), 1, 10 * MB, 0)));
    await().untilAsserted(() -> assertThat(updatesOf.get()).hasSize(5));
    assertThat(updatesOf.get().subList(3, 5)).allSatisfy(u -> {
      assertThat(u.getSnapshotEnd()).isFalse();
      assertThat(u.getPolicy().getReason()).contains("maps all done");
    });
  }

  @Test
  void aWatchCarriesAHeartbeatEveryIntervalItsSnapshotEndAnnounces() throws Exception {
    start(Map.of("watch.heartbeatMillis", "100"));
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    as("m0", FlowPolicyServiceGrpc.FlowPolicyServiceStub.class).watchPolicies(
        WatchRequest.newBuilder().setResync(true).build(), TestServices.collect(updates));
    await().atMost(Duration.ofSeconds(10)).until(() -> updates.size() >= 4);

    // nothing else in flight: the snapshot's end, announcing the interval the agent times the
    // stream by, then heartbeats that carry nothing but that
    assertThat(updates.get(0).getSnapshotEnd()).isTrue();
    assertThat(updates.get(0).getHeartbeatMillis()).isEqualTo(100);
    assertThat(updates.subList(1, 4)).allSatisfy(u -> assertThat(u).isEqualTo(PolicyUpdate
        .newBuilder().setHeartbeat(true).setHeartbeatMillis(100).build()));
  }

  @Test
  void aWatchCarriesNoHeartbeatsByDefault() throws Exception {
    start(Map.of());
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    as("m0", FlowPolicyServiceGrpc.FlowPolicyServiceStub.class).watchPolicies(
        WatchRequest.newBuilder().setResync(true).build(), TestServices.collect(updates));
    await().atMost(Duration.ofSeconds(10)).until(() -> !updates.isEmpty());
    assertThat(updates.get(0).getSnapshotEnd()).isTrue();
    assertThat(updates.get(0).getHeartbeatMillis()).as("none announced").isZero();
    // longer than 1000 ms, the HA cluster's interval: nothing else comes on a quiet stream
    Thread.sleep(1_500);
    assertThat(updates).hasSize(1);
  }

  @Test
  void switchAgentsGetTheirPortSettingsAndEveryChange() throws Exception {
    start(Map.of("switch.tor1.port.eth1.rateBitsPerSecond", "1000000000"));
    List<SwitchConfig> configs = new CopyOnWriteArrayList<>();
    as("tor1-host", FlowPolicyServiceGrpc.FlowPolicyServiceStub.class).watchSwitchConfig(
        SwitchConfigRequest.newBuilder().setSwitchName("tor1").build(), TestServices.collect(configs));
    await().untilAsserted(() -> assertThat(configs).hasSize(1));
    SwitchPort eth1 = configs.get(0).getPorts(0);
    assertThat(eth1.getInterface()).isEqualTo("eth1");
    assertThat(eth1.getRateBitsPerSecond()).isEqualTo(1_000_000_000L);
    assertThat(eth1.getBufferBytes()).isEqualTo(200_000);
    assertThat(eth1.getMark()).isEqualTo(MarkMode.MARK_MODE_RED);
    assertThat(eth1.getRedMinBytes()).isEqualTo(80_000);
    assertThat(eth1.getRedMaxBytes()).isEqualTo(120_000);
    assertThat(eth1.getRedMaxP()).isEqualTo(1.0);
    assertThat(eth1.getDscpBandMap()).containsExactlyInAnyOrderEntriesOf(
        Map.of(34, 0, 0, 1, 8, 2));

    var anonymous = TestServices.stub(server, null,
        PolicyAdminServiceGrpc.PolicyAdminServiceBlockingStub.class);
    var admin = TestServices.stub(server, server.token(),
        PolicyAdminServiceGrpc.PolicyAdminServiceBlockingStub.class);
    SwitchConfig step = SwitchConfig.newBuilder().setSwitchName("tor1").addPorts(eth1.toBuilder()
        .setMark(MarkMode.MARK_MODE_STEP).setKBytes(40_000)).build();
    assertThatThrownBy(() -> anonymous.putSwitchConfig(step))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(
            e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED));
    assertThatThrownBy(() -> admin.putSwitchConfig(step.toBuilder().setPorts(0,
        eth1.toBuilder().setRedMaxP(2)).build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription()).startsWith("ports[0].redMaxP");
        });

    admin.putSwitchConfig(step);

    await().untilAsserted(() -> assertThat(configs).hasSize(2));
    assertThat(configs.get(1).getPorts(0).getMark()).isEqualTo(MarkMode.MARK_MODE_STEP);
    assertThat(configs.get(1).getPorts(0).getKBytes()).isEqualTo(40_000);
    SwitchConfig other = anonymous.getSwitchConfig(SwitchConfigRequest.newBuilder()
        .setSwitchName("tor9").build());
    assertThat(other.getPortsList()).singleElement().satisfies(p -> {
      assertThat(p.getInterface()).isEqualTo("*");
      assertThat(p.getBufferBytes()).isEqualTo(200_000);
    });
  }
}
