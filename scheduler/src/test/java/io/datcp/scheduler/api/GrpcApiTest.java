package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.FlowMode;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.JobPriority;
import io.datcp.proto.v1.ListPoliciesRequest;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.PolicyAdminServiceGrpc;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.PolicyRule;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.QuenchMode;
import io.datcp.proto.v1.QuenchOutcome;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.proto.v1.WatchRequest;
import io.datcp.scheduler.MutableClock;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.config.SchedulerConf;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.reflection.v1alpha.ServerReflectionGrpc;
import io.grpc.reflection.v1alpha.ServerReflectionRequest;
import io.grpc.reflection.v1alpha.ServerReflectionResponse;
import io.grpc.reflection.v1alpha.ServiceResponse;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The gRPC side over real connections to an in-process server on free ports. */
class GrpcApiTest {
  private static final long MB = 1_000_000L;
  private static final long TASK = 5_000_000_000L;

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private SchedulerServer server;

  private void start(SchedulerConf conf) throws Exception {
    server = servers.start(dir, clock, conf);
  }

  private <T> T stub(Class<T> type) {
    return TestServices.stub(server, null, type);
  }

  private static ShuffleEvent reduceStarted(long t, String job, int maps) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(t).setReduceStarted(ReduceStarted
        .newBuilder().setJobId(job).setReduceId(0).setHost("node1").setTotalMaps(maps)
        .setTotalReduces(1).setQueue("default").setUser("alice").setJobName(job)
        .setPriority(JobPriority.JOB_PRIORITY_NORMAL)).build();
  }

  private static ShuffleEvent mapDone(long t, String job, int map, int running) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(t).setMapCompleted(MapCompleted
        .newBuilder().setJobId(job).setReduceId(0).setMapId(map).setHost("m" + map)
        .setRunTimeNanos(TASK).setOutputBytes(10 * MB).setMapsRunning(running)).build();
  }

  private static ShuffleReport report(String host, ShuffleEvent... events) {
    return ShuffleReport.newBuilder().setReporterHost(host).addAllEvents(List.of(events)).build();
  }

  private static PolicyLookup lookup(String job) {
    return PolicyLookup.newBuilder().setAgentHost("m0").setJobId(job).setReduceId(0)
        .setBytes(10 * MB).build();
  }

  @Test
  void pluginReportsTurnIntoDeadlinesAndUpdatesForAgents() throws Exception {
    start(TestServices.dev());
    var plugin = stub(ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
    var agent = stub(FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
    var agentAsync = stub(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
    long t0 = clock.nanos();
    assertThat(plugin.report(report("node1", reduceStarted(t0, "jobA", 4),
        mapDone(t0, "jobA", 0, 2), mapDone(t0, "jobA", 1, 2), reduceStarted(t0, "jobB", 2),
        mapDone(t0, "jobB", 0, 0), mapDone(t0, "jobB", 1, 0))).getAccepted()).isEqualTo(6);

    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    agentAsync.watchPolicies(WatchRequest.newBuilder().setAgentHost("m0").build(),
        TestServices.collect(updates));
    await().atMost(Duration.ofSeconds(10)).until(() -> server.service().openWatches() == 1);
    FlowPolicy b = agent.lookupPolicy(lookup("jobB"));
    FlowPolicy a = agent.lookupPolicy(lookup("jobA"));
    assertThat(b.getDeadlineNanos() / 1e9).isCloseTo(2.0, within(0.01));
    assertThat(a.getDeadlineNanos() / 1e9).isCloseTo(5.0, within(0.01));
    assertThat(b.getMode()).isEqualTo(FlowMode.FLOW_MODE_DATCP);
    assertThat(a.getQuenchMode()).isEqualTo(QuenchMode.QUENCH_MODE_SUSPEND);
    assertThat(b.getQuenchMode()).isEqualTo(QuenchMode.QUENCH_MODE_OFF); // first in the order
    assertThat(b.getReason()).contains("maps all done");

    clock.advance(Duration.ofSeconds(5));
    long t5 = clock.nanos();
    plugin.report(report("node1", mapDone(t5, "jobA", 2, 0), mapDone(t5, "jobA", 3, 0)));

    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(updates)
        .anySatisfy(u -> {
          assertThat(u.getPolicy().getJobId()).isEqualTo("jobA");
          assertThat(u.getPolicy().getReason()).contains("maps all done");
        }));
  }

  @Test
  void anInvalidEventIsRefusedOnItsOwnNamingTheField() throws Exception {
    start(TestServices.dev());
    var plugin = stub(ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
    long t0 = clock.nanos();
    ShuffleEvent bad = mapDone(t0, "jobX", -1, 0);

    ReportAck ack = plugin.report(report("node1", reduceStarted(t0, "jobX", 2), bad));

    assertThat(ack.getAccepted()).isEqualTo(1);
    assertThat(ack.getRefusedList()).singleElement().satisfies(r -> {
      assertThat(r.getIndex()).isEqualTo(1);
      assertThat(r.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
      assertThat(r.getMessage()).startsWith("events[1].mapId");
    });
    assertThat(server.service().job("jobX")).isPresent();
  }

  @Test
  void reportsAreLimitedInSizeAndRatePerHost() throws Exception {
    start(TestServices.dev(Map.of("reports.ratePerHost", "0.001",
        "reports.burstPerHost", "2", "reports.maxEventsPerBatch", "3")));
    var plugin = stub(ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
    long t0 = clock.nanos();

    assertThatThrownBy(() -> plugin.report(report("big", reduceStarted(t0, "j1", 1),
        reduceStarted(t0, "j2", 1), reduceStarted(t0, "j3", 1), reduceStarted(t0, "j4", 1))))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription()).contains("events", "limit of 3");
        });
    plugin.report(report("noisy", reduceStarted(t0, "j5", 1)));
    plugin.report(report("noisy", reduceStarted(t0, "j6", 1)));
    assertThatThrownBy(() -> plugin.report(report("noisy", reduceStarted(t0, "j7", 1))))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(
            e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
    assertThat(plugin.report(report("quiet", reduceStarted(t0, "j8", 1))).getAccepted())
        .isEqualTo(1);
    assertThat(server.service().job("j7")).isEmpty();
  }

  @Test
  void oversizedMessagesAreRefused() throws Exception {
    start(TestServices.dev(Map.of("reports.maxMessageBytes", "2048")));
    var plugin = stub(ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
    String hugeHost = "h".repeat(4096);

    assertThatThrownBy(() -> plugin.report(ShuffleReport.newBuilder()
        .setReporterHost(hugeHost).build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(
            e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
  }

  @Test
  void outcomesFromAgentsFeedTheDeadlineMetRatios() throws Exception {
    start(TestServices.dev());
    var agent = stub(FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
    var plugin = stub(ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
    long t0 = clock.nanos();
    plugin.report(report("node1", reduceStarted(t0, "jobB", 2)));
    FlowOutcome.Builder o = FlowOutcome.newBuilder().setJobId("jobB").setReduceId(0)
        .setSourceHost("m0").setDestinationHost("node1").setBytes(10 * MB)
        .setStartUnixNanos(t0).setDeadlineUnixNanos(t0 + 2 * 1_000_000_000L)
        .setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE);
    agent.reportOutcomes(FlowOutcomes.newBuilder().setAgentHost("m0")
        .addOutcomes(o.setFinishUnixNanos(t0 + 1_900_000_000L).setMet(true))
        .addOutcomes(o.setFinishUnixNanos(t0 + 2_100_000_000L).setMet(false)).build());

    assertThat(server.service().flows("jobB", 10)).hasSize(2);
    assertThat(server.service().overallTally().metRatio()).isEqualTo(0.5);
  }

  @Test
  void policyWritesNeedTheBearerTokenAndNameBadFields() throws Exception {
    start(TestServices.dev());
    var anonymous = stub(PolicyAdminServiceGrpc.PolicyAdminServiceBlockingStub.class);
    var admin = TestServices.stub(server, server.token(),
        PolicyAdminServiceGrpc.PolicyAdminServiceBlockingStub.class);
    PolicyRule gold = PolicyRule.newBuilder().setName("gold").setOrder(1).setQueue("gold")
        .setImportance(3).setPhi(0.5).setMode(FlowMode.FLOW_MODE_DATCP)
        .setQuenchMode(QuenchMode.QUENCH_MODE_SUSPEND).build();

    assertThatThrownBy(() -> anonymous.putPolicy(gold))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(
            e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED));
    assertThat(admin.putPolicy(gold)).isEqualTo(gold);
    assertThatThrownBy(() -> admin.putPolicy(gold.toBuilder().setName("bad").setPhi(2).build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription()).startsWith("phi:");
        });
    assertThatThrownBy(() -> admin.putPolicy(gold.toBuilder().setName("nomode")
        .clearMode().build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(
            e.getStatus().getDescription()).startsWith("mode:"));
    assertThat(anonymous.listPolicies(ListPoliciesRequest.getDefaultInstance()).getRulesList())
        .containsExactly(gold);
  }

  @SuppressWarnings("deprecation")
  @Test
  void healthCheckingAndReflectionAreOn() throws Exception {
    start(TestServices.dev());
    var health = stub(HealthGrpc.HealthBlockingStub.class);
    assertThat(health.check(HealthCheckRequest.getDefaultInstance()).getStatus())
        .isEqualTo(HealthCheckResponse.ServingStatus.SERVING);

    var reflection = stub(ServerReflectionGrpc.ServerReflectionStub.class);
    CompletableFuture<ServerReflectionResponse> answer = new CompletableFuture<>();
    StreamObserver<ServerReflectionRequest> requests = reflection.serverReflectionInfo(
        new StreamObserver<>() {
          @Override
          public void onNext(ServerReflectionResponse r) {
            answer.complete(r);
          }

          @Override
          public void onError(Throwable t) {
            answer.completeExceptionally(t);
          }

          @Override
          public void onCompleted() {}
        });
    requests.onNext(ServerReflectionRequest.newBuilder().setListServices("").build());
    requests.onCompleted();
    assertThat(answer.get(10, TimeUnit.SECONDS).getListServicesResponse().getServiceList())
        .extracting(ServiceResponse::getName)
        .contains("datcp.v1.ShuffleReportService", "datcp.v1.FlowPolicyService",
            "datcp.v1.PolicyAdminService");
  }
}
