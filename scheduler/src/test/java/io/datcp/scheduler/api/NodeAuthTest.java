package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.JobFinished;
import io.datcp.proto.v1.JobPriority;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.proto.v1.WatchRequest;
import io.datcp.scheduler.FakeResourceManager;
import io.datcp.scheduler.MutableClock;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.PolicyRule;
import io.datcp.scheduler.policy.QuenchMode;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 9 item 8: reporters and agents authenticate with node tokens, may only report for
 * their own host and reduces, and job attributes come from the ResourceManager.
 */
class NodeAuthTest {
  private static final String JOB = "job_1700000000000_0001";
  private static final long MB = 1_000_000L;

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private SchedulerServer server;
  private FakeResourceManager rm;

  private void start(Map<String, String> conf) throws Exception {
    Map<String, String> all = new java.util.HashMap<>(conf);
    all.put("tls.plaintext", "true"); // loopback
    server = servers.start(dir, clock, SchedulerConf.fromMap(all));
  }

  @AfterEach
  void stopRm() {
    if (rm != null) {
      rm.close();
    }
  }

  private <T> T as(String host, Class<T> type) {
    return servers.asNode(server, host, type);
  }

  private ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub plugin(String host) {
    return as(host, ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
  }

  private ShuffleEvent reduceStarted(String host, String queue) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(clock.nanos()).setReduceStarted(
        ReduceStarted.newBuilder().setJobId(JOB).setReduceId(0).setHost(host).setTotalMaps(1)
            .setTotalReduces(1).setQueue(queue).setUser("mallory").setJobName("x")
            .setPriority(JobPriority.JOB_PRIORITY_VERY_HIGH)).build();
  }

  private ShuffleEvent jobFinished() {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(clock.nanos()).setJobFinished(
        JobFinished.newBuilder().setJobId(JOB).setSucceeded(true)).build();
  }

  private static ShuffleReport batch(ShuffleEvent... events) {
    return ShuffleReport.newBuilder().addAllEvents(List.of(events)).build();
  }

  /** The batch's one event was refused on its own, and nothing was applied. */
  private static void assertNotPermitted(ReportAck ack) {
    assertThat(ack.getAccepted()).isZero();
    assertThat(ack.getRefusedList()).singleElement().satisfies(r -> assertThat(r.getCode())
        .isEqualTo(Status.Code.PERMISSION_DENIED.value()));
  }

  private static void assertStatus(ThrowingCallable call, Status.Code code) {
    assertThatThrownBy(call).isInstanceOfSatisfying(StatusRuntimeException.class,
        e -> assertThat(e.getStatus().getCode()).isEqualTo(code));
  }

  @Test
  void reportsAndLookupsNeedAKnownNodeToken() throws Exception {
    start(Map.of());
    var anonymous = TestServices.stub(server, null,
        ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
    var forged = TestServices.stub(server, "f".repeat(64),
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);

    assertStatus(() -> anonymous.report(batch(reduceStarted("node1", "q"))),
        Status.Code.UNAUTHENTICATED);
    assertStatus(() -> forged.lookupPolicy(PolicyLookup.newBuilder().setJobId(JOB)
        .setBytes(1).build()), Status.Code.UNAUTHENTICATED);
    assertThat(server.service().job(JOB)).isEmpty();

    // The host comes from the credential when the message leaves it empty.
    assertThat(plugin("node1").report(batch(reduceStarted("node1", "q"))).getAccepted())
        .isEqualTo(1);
  }

  @Test
  void aNodeCannotReportForAnotherHostNorEndOrSteerAnotherNodesJob() throws Exception {
    start(Map.of());
    plugin("node1").report(batch(reduceStarted("node1", "q")));

    assertNotPermitted(plugin("node2").report(batch(reduceStarted("node1", "q"))));
    assertStatus(() -> plugin("node2").report(batch(reduceStarted("node2", "q"))
        .toBuilder().setReporterHost("node1").build()), Status.Code.PERMISSION_DENIED);
    assertNotPermitted(plugin("node2").report(batch(jobFinished())));
    assertNotPermitted(plugin("node2").report(batch(ShuffleEvent.newBuilder()
        .setTimeUnixNanos(clock.nanos()).setFetchFinished(FetchFinished.newBuilder()
            .setJobId(JOB).setReduceId(0).setSourceHost("m0").addMapIds(0).setBytes(MB))
        .build())));
    assertStatus(() -> as("node2", FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class)
        .watchPolicies(WatchRequest.newBuilder().setAgentHost("node1").build()).hasNext(),
        Status.Code.PERMISSION_DENIED);
    assertThat(server.service().job(JOB).orElseThrow().state()).isEqualTo("running");
    assertThat(server.service().job(JOB).orElseThrow().reduces().get(0).fetchedBytes())
        .isZero();

    plugin("node1").report(batch(jobFinished()));
    assertThat(server.service().job(JOB).orElseThrow().state()).isEqualTo("succeeded");
  }

  @Test
  void nodeTokensAreMintedAndRevokedWithTheAdminTokenOverRest() throws Exception {
    start(Map.of());
    HttpClient http = HttpClient.newHttpClient();
    String base = "http://127.0.0.1:" + server.httpPort() + "/api/v1/nodes";
    HttpRequest.Builder mint = HttpRequest.newBuilder(URI.create(base + "/node7/token"))
        .POST(HttpRequest.BodyPublishers.noBody());

    assertThat(http.send(mint.build(), java.net.http.HttpResponse.BodyHandlers.ofString())
        .statusCode()).isEqualTo(401);
    var minted = http.send(mint.header("Authorization", "Bearer " + server.token()).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(minted.statusCode()).isEqualTo(200);
    String token = new com.fasterxml.jackson.databind.ObjectMapper().readTree(minted.body())
        .get("token").asText();
    var node7 = TestServices.stub(server, token,
        ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
    assertThat(node7.report(batch(reduceStarted("node7", "q"))).getAccepted()).isEqualTo(1);
    assertThat(java.nio.file.Files.readString(dir.resolve("node-tokens"))).doesNotContain(token);

    var revoked = http.send(HttpRequest.newBuilder(URI.create(base + "/node7")).DELETE()
        .header("Authorization", "Bearer " + server.token()).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    assertThat(revoked.statusCode()).isEqualTo(204);
    assertStatus(() -> node7.report(batch(reduceStarted("node7", "q"))),
        Status.Code.UNAUTHENTICATED);
  }

  @Test
  void withoutCredentialsOnlyWhenExplicitlyConfigured() throws Exception {
    start(Map.of("auth.nodes.required", "false"));
    var anonymous = TestServices.stub(server, null,
        ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
    assertThat(anonymous.report(batch(reduceStarted("node1", "q")).toBuilder()
        .setReporterHost("node1").build()).getAccepted()).isEqualTo(1);
  }

  /** YARN runs the job in {@code queue}, with a container on node1 (its reduce's host). */
  private void startRm(String queue) {
    rm = new FakeResourceManager().place(JOB, "node1").queue(JOB, queue);
  }

  private void goldRule() {
    server.service().putPolicy(new PolicyRule("gold", 1, "gold", null, null, null, 3.0, 0.5,
        FlowMode.DATCP, QuenchMode.SUSPEND));
  }

  private double importance() {
    return as("m0", FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class)
        .lookupPolicy(PolicyLookup.newBuilder().setJobId(JOB).setBytes(MB).build())
        .getImportance();
  }

  @Test
  void rulesMatchOnWhatYarnSaysNotOnWhatTheJobClaims() throws Exception {
    startRm("gold");
    start(Map.of("yarn.rm.webappAddress", rm.address()));
    goldRule();
    List<Object> pushed = new CopyOnWriteArrayList<>();
    server.service().watch("m0", false, pushed::add);

    plugin("node1").report(batch(reduceStarted("node1", "default")));
    await().untilAsserted(() -> assertThat(server.service().job(JOB).orElseThrow().queue())
        .isEqualTo("gold"));
    assertThat(importance()).isEqualTo(3.0);
    assertThat(server.service().job(JOB).orElseThrow().user()).isEqualTo("alice");
  }

  @Test
  void aJobClaimingAQueueYarnDidNotGiveItGetsNoImportance() throws Exception {
    startRm("default");
    start(Map.of("yarn.rm.webappAddress", rm.address()));
    goldRule();

    plugin("node1").report(batch(reduceStarted("node1", "gold")));
    await().untilAsserted(() -> assertThat(server.service().job(JOB).orElseThrow().queue())
        .isEqualTo("default"));
    assertThat(importance()).isZero();
  }

  @Test
  void anUnreachableResourceManagerFailsOpenToTheDefaultPolicy() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    start(Map.of("yarn.rm.webappAddress", "http://127.0.0.1:" + closedPort));
    goldRule();

    plugin("node1").report(batch(reduceStarted("node1", "gold")));
    Thread.sleep(500);
    assertThat(importance()).isZero();
    assertThat(server.service().job(JOB).orElseThrow().queue()).isNull();
  }
}
