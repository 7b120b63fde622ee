package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.kernel.FlowMeta;
import io.datcp.agent.kernel.KernelEvent;
import io.datcp.agent.testing.AgentClient;
import io.datcp.agent.testing.OtherUser;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowOrder;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.OrdersRequest;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's sockets as a hostile local process sees them: real processes of other users
 * (setpriv; root needed) against a real agent. The socket file is left open to everyone (0666)
 * where the test is about the agent's own check, so that SO_PEERCRED, not the file mode, is
 * what refuses. No kernel (the check is before any kernel write), so no kernel lock.
 */
class PeerCheckTest {
  private static final String JOB = "job_1700000000000_0801";
  /** A uid that is neither root nor the NodeManager's, in no group of the sockets. */
  private static final int STRANGER = 65533;
  private static OtherUser users;

  @TempDir
  Path dir;
  private AgentServer agent;

  @BeforeAll
  static void copyClassPath() throws Exception {
    users = OtherUser.prepare();
  }

  @AfterAll
  static void removeClassPath() {
    users.close();
  }

  @BeforeEach
  void openDir() throws Exception {
    // @TempDir is 0700: other users must reach the socket files to be refused by the agent
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  @AfterEach
  void stop() {
    if (agent != null) {
      agent.close();
    }
  }

  private void start(Map<String, String> extra) throws Exception {
    Map<String, String> s = TestAgents.settings(dir, "", 13562);
    s.put("kernel.enabled", "false");
    s.put("kernel.library", "no-such-library");
    s.putAll(extra);
    agent = TestAgents.start(s);
  }

  private String sock() {
    return dir.resolve("agent.sock").toString();
  }

  private String events() {
    return dir.resolve("events.sock").toString();
  }

  @Test
  void aUserOtherThanTheNodeManagersCannotRegisterSubscribeOrReport() throws Exception {
    start(Map.of("local.socketMode", "0666", "local.nodeManagerUser", Integer.toString(
        OtherUser.NOBODY)));

    String registered = users.run(STRANGER, "register", sock(), JOB, "1", "41001");
    assertThat(registered).startsWith("PERMISSION_DENIED")
        .contains("uid " + STRANGER).contains("local.nodeManagerUser");
    assertThat(agent.registry().liveFlows()).isZero();
    assertThat(users.run(STRANGER, "subscribe", sock(), "evil/1", "30000"))
        .startsWith("PERMISSION_DENIED").contains("local.nodeManagerUser");
    assertThat(users.run(STRANGER, "forward", sock())).startsWith("PERMISSION_DENIED");
    assertThat(users.run(STRANGER, "events", events())).startsWith("closed");
  }

  @Test
  void rootOnlyByDefault() throws Exception {
    start(Map.of("local.socketMode", "0666"));

    assertThat(users.run(OtherUser.NOBODY, "register", sock(), JOB, "1", "41002"))
        .startsWith("PERMISSION_DENIED").contains("uid " + OtherUser.NOBODY);
    assertThat(users.run(0, "register-end", sock(), JOB, "1", "41002")).isEqualTo("ok true");
  }

  @Test
  void aProcessEndsOnlyTheFlowsItRegistered() throws Exception {
    start(Map.of("local.socketMode", "0666", "local.nodeManagerUser", "nobody"));

    // the shuffle service's flow, and a task of the same user trying to abort it
    String owner = users.run(OtherUser.NOBODY, "register", sock(), JOB, "1", "41003");
    assertThat(owner).startsWith("ok ");
    String flowId = owner.substring(3);
    String other = users.run(OtherUser.NOBODY, "end", sock(), flowId);
    assertThat(other).startsWith("PERMISSION_DENIED").contains("flow " + flowId)
        .contains("uid " + OtherUser.NOBODY);
    assertThat(users.run(0, "end", sock(), flowId)).startsWith("PERMISSION_DENIED");
    assertThat(agent.registry().liveFlows()).isEqualTo(1);
    // its own flow it may end
    assertThat(users.run(OtherUser.NOBODY, "register-end", sock(), JOB, "1", "41004"))
        .isEqualTo("ok true");
  }

  @Test
  void aFlowKeepsItsOwnerAcrossAnAgentRestart() throws Exception {
    Map<String, String> s = Map.of("local.socketMode", "0666", "local.nodeManagerUser",
        "nobody");
    start(s);
    String owner = users.run(OtherUser.NOBODY, "register", sock(), JOB, "1", "41010");
    assertThat(owner).startsWith("ok ");
    agent.close(); // hands the flow table to the next start
    agent = null;
    start(s);
    assertThat(agent.registry().liveFlows()).isEqualTo(1);

    assertThat(users.run(OtherUser.NOBODY, "end", sock(), owner.substring(3)))
        .startsWith("PERMISSION_DENIED");
    assertThat(agent.registry().liveFlows()).isEqualTo(1);
  }

  @Test
  void anotherProcessOfTheSameUserCannotTakeTheShuffleServicesOrders() throws Exception {
    start(Map.of("local.socketMode", "0666", "local.nodeManagerUser", "nobody"));
    try (AgentClient nm = new AgentClient(dir.resolve("agent.sock"))) {
      FlowRegistration reg = TestAgents.registration(JOB, 3, 41009).setSubscriberId("nm/1")
          .build();
      FlowRegistered r = nm.blocking().registerFlow(reg);
      BlockingQueue<Object> nmGot = new LinkedBlockingQueue<>();
      nm.async().orders(OrdersRequest.newBuilder().setSubscriberId("nm/1").build(),
          new StreamObserver<FlowOrder>() {
            @Override
            public void onNext(FlowOrder o) {
              nmGot.add(o);
            }

            @Override
            public void onError(Throwable t) {
              nmGot.add(t);
            }

            @Override
            public void onCompleted() {
              nmGot.add("completed");
            }
          });
      await().atMost(Duration.ofSeconds(10)).until(() -> subscribers() == 1);

      // a task of the NodeManager's user subscribes with the service's subscriber id
      CompletableFuture<String> thief = CompletableFuture.supplyAsync(() -> run(
          OtherUser.NOBODY, "subscribe", sock(), "nm/1", "5000"));
      // it is subscribed: beside the service, or in its place (the service's stream ended)
      await().atMost(Duration.ofSeconds(60)).until(() -> subscribers() == 2
          || !nmGot.isEmpty());
      agent.registry().onKernelEvent(new KernelEvent(TestAgents.tuple(reg),
          KernelEvent.Type.QUENCH, r.getEpoch(), 0, false, 2.0, FlowMeta.Quench.SUSPEND));

      Object got = nmGot.poll(10, TimeUnit.SECONDS);
      assertThat(got).isInstanceOf(FlowOrder.class);
      assertThat(((FlowOrder) got).getFlowId()).isEqualTo(r.getFlowId());
      assertThat(thief.get(120, TimeUnit.SECONDS)).isEqualTo("ok open");
    }
  }

  private double subscribers() {
    return agent.meters().find("datcp.agent.orders.subscribers").gauge().value();
  }

  private static String run(int uid, String... command) {
    try {
      return users.run(uid, command);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void onePeerCannotFillTheFlowTable() throws Exception {
    start(Map.of("local.socketMode", "0666", "local.nodeManagerUser", "nobody",
        "local.maxFlowsPerPeer", "3"));

    assertThat(users.run(OtherUser.NOBODY, "register-many", sock(), JOB, "1", "5"))
        .startsWith("RESOURCE_EXHAUSTED").contains("3").contains("local.maxFlowsPerPeer")
        .endsWith("after 3");
    // another peer (root here) still registers
    try (AgentClient root = new AgentClient(dir.resolve("agent.sock"))) {
      FlowRegistered r = root.blocking().registerFlow(
          TestAgents.registration(JOB, 2, 41005).build());
      assertThat(r.getFlowId()).isPositive();
    }
    assertThat(agent.registry().liveFlows()).isEqualTo(4);
  }

  @Test
  void socketsHaveTheConfiguredGroupAndMode() throws Exception {
    start(Map.of("local.socketGroup", "nogroup", "local.socketMode", "0660",
        "local.nodeManagerUser", "nobody"));

    for (Path p : new Path[] {dir.resolve("agent.sock"), dir.resolve("events.sock")}) {
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(p)))
          .isEqualTo("rw-rw----");
      assertThat(Files.getAttribute(p, "unix:gid")).isEqualTo(OtherUser.NOBODY);
    }
    // outside the group the file mode refuses before the agent is asked
    assertThat(users.run(STRANGER, "register", sock(), JOB, "1", "41006"))
        .startsWith("UNAVAILABLE");
    assertThat(users.run(STRANGER, "events", events())).startsWith("closed");
  }

  @Test
  void theNodeManagersUserAndRootWorkEndToEnd() throws Exception {
    start(Map.of("local.socketGroup", "nogroup", "local.socketMode", "0660",
        "local.nodeManagerUser", Integer.toString(OtherUser.NOBODY)));

    assertThat(users.run(OtherUser.NOBODY, "register-end", sock(), JOB, "1", "41007"))
        .isEqualTo("ok true");
    assertThat(users.run(OtherUser.NOBODY, "subscribe", sock(), "nm/1", "1000"))
        .isEqualTo("ok open");
    assertThat(users.run(OtherUser.NOBODY, "forward", sock())).startsWith("ok ");
    assertThat(users.run(OtherUser.NOBODY, "events", events())).startsWith("ok ");
    try (AgentClient root = new AgentClient(dir.resolve("agent.sock"))) {
      FlowRegistered r = root.blocking().registerFlow(
          TestAgents.registration(JOB, 2, 41008).build());
      assertThat(root.blocking().endFlow(FlowEnd.newBuilder().setFlowId(r.getFlowId())
          .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build()).getKnown()).isTrue();
    }
    assertThat(agent.registry().liveFlows()).isZero();
  }
}
