package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.WatchRequest;
import io.datcp.scheduler.api.grpc.LeaderGate;
import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.config.SchedulerConf;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 19 item 10, stage 1: two schedulers on one ZooKeeper (curator-test's in-process server).
 * One leads; a follower sends node calls to it; policy rules written through either are in
 * ZooKeeper before the answer and seen by both; when the leader closes, the follower leads.
 * Waits are on conditions with generous bounds (a busy 2-CPU machine), never sleeps.
 */
class HaFailoverTest {
  private static final String TOKEN = "ha-test-admin-token-0123456789";
  private static final Duration PATIENCE = Duration.ofSeconds(60);
  private static final String GOLD = "{\"order\":1,\"queue\":\"gold\",\"importance\":3,"
      + "\"phi\":0.5,\"mode\":\"datcp\",\"quenchMode\":\"suspend\"}";

  @TempDir Path dir;
  private TestingServer zk;
  private final List<SchedulerServer> open = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();

  @BeforeEach
  void startZooKeeper() throws Exception {
    zk = new TestingServer(true);
  }

  @AfterEach
  void stopAll() throws IOException {
    try {
      for (SchedulerServer s : open) {
        s.close();
      }
      open.clear();
    } finally {
      zk.close();
    }
  }

  private Map<String, String> haConf() {
    Map<String, String> conf = new HashMap<>();
    conf.put("tls.plaintext", "true"); // loopback
    conf.put("auth.nodes.required", "false");
    conf.put("auth.token", TOKEN);
    conf.put("ha.zookeeper.connect", zk.getConnectString());
    conf.put("ha.zookeeper.path", "/test/scheduler");
    conf.put("ha.advertisedHost", "127.0.0.1");
    return conf;
  }

  private SchedulerServer start(String name, Map<String, String> conf) throws IOException {
    SchedulerServer s = SchedulerServer.builder().dataDir(dir.resolve(name)).grpcPort(0)
        .httpPort(0).conf(SchedulerConf.fromMap(conf)).build().start();
    open.add(s);
    return s;
  }

  private void close(SchedulerServer s) {
    synchronized (open) {
      open.remove(s);
    }
    s.close();
  }

  /** Waits until exactly one of {@code servers} leads and every one knows it; returns it. */
  private static SchedulerServer awaitOneLeader(SchedulerServer... servers) {
    await().atMost(PATIENCE).until(() -> {
      List<SchedulerServer> leaders = new ArrayList<>();
      for (SchedulerServer s : servers) {
        if (s.leadership().isLeader()) {
          leaders.add(s);
        }
      }
      if (leaders.size() != 1) {
        return false;
      }
      String address = leaders.get(0).address();
      for (SchedulerServer s : servers) {
        if (!s.leadership().leader().map(address::equals).orElse(false)) {
          return false;
        }
      }
      return true;
    });
    for (SchedulerServer s : servers) {
      if (s.leadership().isLeader()) {
        return s;
      }
    }
    throw new AssertionError("the leader stepped down while it was being found");
  }

  /** Two schedulers on the test's ZooKeeper, once one leads and both know it. */
  private record Pair(SchedulerServer leader, SchedulerServer follower) {}

  private Pair startPair(Map<String, String> conf) throws IOException {
    SchedulerServer a = start("a", conf);
    SchedulerServer b = start("b", conf);
    SchedulerServer leader = awaitOneLeader(a, b);
    return new Pair(leader, leader == a ? b : a);
  }

  private static PolicyLookup lookup() {
    return PolicyLookup.newBuilder().setAgentHost("node1").setJobId("job_1700000000000_0001")
        .setReduceId(0).setBytes(1_000_000).build();
  }

  private HttpResponse<String> send(SchedulerServer s, String method, String path, String body)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + s.httpPort() + path))
        .timeout(Duration.ofSeconds(30))
        .header("Authorization", "Bearer " + TOKEN)
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    if (body != null) {
      b.header("Content-Type", "application/json");
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(SchedulerServer s, String path) throws Exception {
    return send(s, "GET", path, null);
  }

  @Test
  void oneOfTwoLeadsAndTheFollowerRefersNodeCallsToIt() throws Exception {
    Pair pair = startPair(haConf());
    SchedulerServer leader = pair.leader();
    SchedulerServer follower = pair.follower();

    assertThatThrownBy(() -> TestServices.stub(follower, null,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class).lookupPolicy(lookup()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
          assertThat(e.getStatus().getDescription()).contains(leader.address());
          assertThat(e.getTrailers().get(LeaderGate.LEADER_TRAILER))
              .isEqualTo(leader.address());
          assertThat(e.getTrailers().get(LeaderGate.ROLE_TRAILER)).isEqualTo("follower");
        });
    // The leader answers the same call (a job it does not know: no deadline, fail-open).
    assertThat(TestServices.stub(leader, null,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class).lookupPolicy(lookup())
        .getJobId()).isEqualTo("job_1700000000000_0001");

    assertThat(get(leader, "/readyz").statusCode()).isEqualTo(200);
    assertThat(get(follower, "/readyz").statusCode()).isEqualTo(503);
    assertThat(get(follower, "/healthz").statusCode()).isEqualTo(200);
    assertThat(get(leader, "/metrics").body())
        .contains("datcp_ha_leader{mode=\"zookeeper\"} 1.0");
    assertThat(get(follower, "/metrics").body())
        .contains("datcp_ha_leader{mode=\"zookeeper\"} 0.0");
    assertThat(get(follower, "/api/v1/ha").body())
        .contains("\"role\":\"follower\"", "\"leader\":\"" + leader.address() + "\"");
    assertThat(get(leader, "/api/v1/ha").body()).contains("\"role\":\"leader\"");
  }

  @Test
  void aPolicyWrittenThroughTheLeaderOutlivesItAndTheFollowerTakesOver() throws Exception {
    Pair pair = startPair(haConf());
    SchedulerServer leader = pair.leader();
    SchedulerServer follower = pair.follower();

    assertThat(send(leader, "PUT", "/api/v1/policies/gold", GOLD).statusCode()).isEqualTo(200);
    await().atMost(PATIENCE).until(() -> get(follower, "/api/v1/policies/gold").statusCode()
        == 200);
    assertThat(follower.service().getPolicy("gold")).hasValueSatisfying(
        r -> assertThat(r.importance()).isEqualTo(3.0));

    long closing = System.nanoTime();
    // Closed on another thread: the leader leaves the election first, then stops its servers
    // (up to 2 s of grace for calls in flight), and the follower should not wait for that.
    CompletableFuture<Void> closed = CompletableFuture.runAsync(() -> close(leader));
    await().atMost(PATIENCE).pollInterval(Duration.ofMillis(5))
        .until(() -> follower.leadership().isLeader());
    long ledAfterMillis = (System.nanoTime() - closing) / 1_000_000;
    System.out.println("HA failover: the follower led " + ledAfterMillis
        + " ms after the leader began to close (clean close: its election node is deleted)");
    closed.get(PATIENCE.toSeconds(), TimeUnit.SECONDS);

    assertThat(follower.service().getPolicy("gold")).isPresent();
    assertThat(get(follower, "/api/v1/policies/gold").body()).contains("\"queue\":\"gold\"");
    assertThat(TestServices.stub(follower, null,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class).lookupPolicy(lookup())
        .getJobId()).isEqualTo("job_1700000000000_0001");
  }

  /**
   * The leader is a real scheduler process killed with SIGKILL: its session is not closed, so
   * the follower leads once ZooKeeper expires it (about ha.zookeeper.sessionTimeoutMillis).
   */
  @Test
  void aKilledLeaderIsReplacedAfterItsSessionExpiresWithItsAcknowledgedPolicy()
      throws Exception {
    int sessionMillis = 4000;
    Map<String, String> conf = haConf();
    conf.put("ha.zookeeper.sessionTimeoutMillis", Integer.toString(sessionMillis));
    StringBuilder file = new StringBuilder();
    conf.forEach((k, v) -> file.append(k).append('=').append(v).append('\n'));
    Path confFile = Files.writeString(dir.resolve("child.properties"), file);
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process child = new ProcessBuilder(java.toString(), "-Xmx256m",
        "-cp", System.getProperty("java.class.path"), SchedulerMain.class.getName(),
        "--data-dir", dir.resolve("child").toString(), "--grpc-port", "0", "--http-port", "0",
        "--config", confFile.toString())
        .redirectErrorStream(true).start();
    try {
      int childHttp = TestServices.awaitReady(child);
      SchedulerServer follower = start("follower", conf);
      // The child joined first, so it leads; the follower knows it.
      await().atMost(PATIENCE).until(() -> follower.leadership().leader()
          .filter(l -> !l.equals(follower.address())).isPresent());
      assertThat(follower.leadership().isLeader()).isFalse();
      HttpResponse<String> put = http.send(HttpRequest.newBuilder(
              URI.create("http://127.0.0.1:" + childHttp + "/api/v1/policies/gold"))
          .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + TOKEN)
          .header("Content-Type", "application/json")
          .PUT(HttpRequest.BodyPublishers.ofString(GOLD)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(put.statusCode()).isEqualTo(200);

      long killed = System.nanoTime();
      assertThat(new ProcessBuilder("kill", "-KILL", Long.toString(child.pid())).start()
          .waitFor()).isZero();
      await().atMost(PATIENCE).pollInterval(Duration.ofMillis(20))
          .until(() -> follower.leadership().isLeader());
      long ledAfterMillis = (System.nanoTime() - killed) / 1_000_000;
      System.out.println("HA crash failover: the follower led " + ledAfterMillis
          + " ms after the leader's SIGKILL (ha.zookeeper.sessionTimeoutMillis " + sessionMillis
          + ")");
      assertThat(follower.service().getPolicy("gold")).hasValueSatisfying(
          r -> assertThat(r.queue()).isEqualTo("gold"));
    } finally {
      child.destroyForcibly();
      child.waitFor(30, TimeUnit.SECONDS);
    }
  }

  @Test
  void aPolicyWrittenThroughTheFollowerReachesTheLeaderAndADeleteBoth() throws Exception {
    Pair pair = startPair(haConf());
    SchedulerServer leader = pair.leader();
    SchedulerServer follower = pair.follower();

    assertThat(send(follower, "PUT", "/api/v1/policies/gold", GOLD).statusCode())
        .isEqualTo(200);
    await().atMost(PATIENCE).until(() -> leader.service().getPolicy("gold").isPresent());

    assertThat(send(leader, "DELETE", "/api/v1/policies/gold", null).statusCode())
        .isBetween(200, 204);
    await().atMost(PATIENCE).until(() -> follower.service().getPolicy("gold").isEmpty());
    assertThat(send(follower, "DELETE", "/api/v1/policies/gold", null).statusCode())
        .isEqualTo(404);
  }

  @Test
  void aLeaderThatLosesZooKeeperStopsLeadingAndOneLeadsWhenItIsBack() throws Exception {
    Map<String, String> conf = haConf();
    conf.put("ha.zookeeper.sessionTimeoutMillis", "4000");
    Pair pair = startPair(conf);
    SchedulerServer leader = pair.leader();
    CompletableFuture<Boolean> snapshotSent = new CompletableFuture<>();
    CompletableFuture<Status> streamEnded = new CompletableFuture<>();
    TestServices.stub(leader, null, FlowPolicyServiceGrpc.FlowPolicyServiceStub.class)
        .watchPolicies(WatchRequest.newBuilder().setAgentHost("node1").setResync(true).build(),
            new StreamObserver<>() {
              @Override
              public void onNext(PolicyUpdate u) {
                snapshotSent.complete(u.getSnapshotEnd());
              }

              @Override
              public void onError(Throwable t) {
                streamEnded.complete(Status.fromThrowable(t));
              }

              @Override
              public void onCompleted() {
                streamEnded.complete(Status.OK);
              }
            });
    assertThat(snapshotSent.get(PATIENCE.toSeconds(), TimeUnit.SECONDS)).isTrue();

    zk.stop();
    // Curator suspends leadership when the connection is lost: no leader while none is known.
    await().atMost(PATIENCE).until(() -> !leader.leadership().isLeader()
        && !pair.follower().leadership().isLeader());
    // Nor does it name itself: clients move on to another scheduler.
    assertThatThrownBy(() -> TestServices.stub(leader, null,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class).lookupPolicy(lookup()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
          assertThat(e.getTrailers().get(LeaderGate.LEADER_TRAILER)).isNull();
          // a live scheduler's answer, not a transport failure: agents do not hold it
          assertThat(e.getTrailers().get(LeaderGate.ROLE_TRAILER)).isEqualTo("follower");
        });
    // Its agents' update streams are ended, so they reconnect elsewhere.
    assertThat(streamEnded.get(PATIENCE.toSeconds(), TimeUnit.SECONDS).getCode())
        .isEqualTo(Status.Code.UNAVAILABLE);

    zk.restart();
    awaitOneLeader(leader, pair.follower());
  }

  @Test
  void badHaSettingsStopStartUpNamingTheKey() throws Exception {
    for (Map.Entry<String, String> bad : Map.of(
        "ha.zookeeper.connect", "zk1",
        "ha.zookeeper.path", "datcp/",
        "ha.zookeeper.sessionTimeoutMillis", "100",
        "ha.advertisedHost", "a host").entrySet()) {
      assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of(bad.getKey(), bad.getValue())))
          .as(bad.toString()).isInstanceOf(ConfigException.class)
          .hasMessageContaining("'" + bad.getKey() + "'")
          .hasMessageContaining("accepted: ");
    }

    Map<String, String> noToken = haConf();
    noToken.remove("auth.token");
    assertThatThrownBy(() -> start("no-token", noToken))
        .isInstanceOf(ConfigException.class).hasMessageContaining("'auth.token'")
        .hasMessageContaining("ha.zookeeper.connect");

    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    Map<String, String> nobody = haConf();
    nobody.put("ha.zookeeper.connect", "127.0.0.1:" + closedPort);
    nobody.put("ha.zookeeper.sessionTimeoutMillis", "2000");
    assertThatThrownBy(() -> start("nobody", nobody))
        .isInstanceOf(ConfigException.class).hasMessageContaining("'ha.zookeeper.connect'")
        .hasMessageContaining("127.0.0.1:" + closedPort);
  }
}
