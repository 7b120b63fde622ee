package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.kernel.FlowMeta;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.agent.kernel.KernelEvent;
import io.datcp.agent.testing.AgentClient;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.KernelLock;
import io.datcp.agent.testing.KernelLockExtension;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowOrder;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.OrdersRequest;
import io.datcp.proto.v1.QuenchMode;
import io.datcp.proto.v1.QuenchOutcome;
import io.grpc.stub.StreamObserver;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flows from registration to outcome with the real kernel (root; holds the kernel lock): a
 * loopback connection on a shuffle port carries the registered bytes, the kernel reports the
 * last byte acknowledged, the agent reports the outcome and deletes the entry; an agent restart
 * in between disturbs nothing; quench events become orders for the plugin.
 */
@ExtendWith(KernelLockExtension.class)
class FlowLifecycleTest {
  private static final int FLOW_BYTES = 2_000_000;

  @TempDir
  Path dir;
  private FakeScheduler scheduler;
  private AgentServer agent;
  private AgentClient client;
  private ServerSocket listener;
  private Socket sender;
  private Socket receiver;

  @BeforeEach
  void start() throws Exception {
    listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    scheduler = new FakeScheduler().start();
    agent = TestAgents.start(settings());
    client = new AgentClient(dir.resolve("agent.sock"));
    // the shuffle port is on datcp now: this connection's sender socket runs datcp
    receiver = new Socket();
    receiver.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(),
        listener.getLocalPort()));
    sender = listener.accept();
  }

  private java.util.Map<String, String> settings() {
    return TestAgents.settings(dir, scheduler.target(), listener.getLocalPort());
  }

  @AfterEach
  void stop() throws Exception {
    sender.close();
    receiver.close();
    listener.close();
    client.close();
    agent.close();
    scheduler.close();
    TestAgents.deleteTestEntries(listener.getLocalPort());
  }

  private FlowRegistration loopbackFlow() {
    return FlowRegistration.newBuilder().setJobId("job_1700000000000_0101").setReduceId(3)
        .addMapIds(7).setBytes(FLOW_BYTES).setSourceAddress("127.0.0.1")
        .setSourcePort(sender.getLocalPort()).setDestinationAddress("127.0.0.1")
        .setDestinationPort(sender.getPort()).setDestinationHost("reducer-3").build();
  }

  private void transfer() throws Exception {
    Thread reader = new Thread(() -> {
      try (InputStream in = receiver.getInputStream()) {
        in.readNBytes(FLOW_BYTES);
      } catch (Exception e) {
        throw new RuntimeException(e);
      }
    });
    reader.start();
    OutputStream out = sender.getOutputStream();
    out.write(new byte[FLOW_BYTES]);
    out.flush();
    reader.join(20_000);
  }

  /** Subscribes as a NodeManager to the agent's orders; they collect in the returned list. */
  private List<FlowOrder> subscribeToOrders() {
    return subscribeToOrders("nm-1");
  }

  /** Subscribes and waits until the agent holds the subscription, so no order misses it. */
  private List<FlowOrder> subscribeToOrders(String subscriberId) {
    List<FlowOrder> orders = new CopyOnWriteArrayList<>();
    double before = subscriptions();
    client.async().orders(OrdersRequest.newBuilder().setSubscriberId(subscriberId).build(),
        new StreamObserver<>() {
          @Override
          public void onNext(FlowOrder o) {
            orders.add(o);
          }

          @Override
          public void onError(Throwable t) {}

          @Override
          public void onCompleted() {}
        });
    await().atMost(Duration.ofSeconds(10)).until(() -> subscriptions() > before);
    return orders;
  }

  private double subscriptions() {
    return agent.meters().get("datcp.agent.orders.subscribers").gauge().value();
  }

  private List<FlowOutcome> outcomes() {
    return scheduler.outcomes.stream().flatMap(o -> o.getOutcomesList().stream()).toList();
  }

  @Test
  void theKernelsCompletionBecomesAnOutcomeAndTheEntryIsDeleted() throws Exception {
    FlowRegistration r = loopbackFlow();
    FlowRegistered reg = client.blocking().registerFlow(r);
    FlowTuple t = TestAgents.tuple(r);
    assertThat(agent.kernel().flowMeta(t)).isPresent();
    long before = LocalAgentServiceTest.unixNanos(Instant.now());

    transfer();

    await().atMost(Duration.ofSeconds(10)).until(() -> outcomes().size() == 1);
    FlowOutcome o = outcomes().get(0);
    assertThat(o.getJobId()).isEqualTo("job_1700000000000_0101");
    assertThat(o.getReduceId()).isEqualTo(3);
    assertThat(o.getBytes()).isEqualTo(FLOW_BYTES);
    assertThat(o.getMet()).isTrue();
    assertThat(o.getSourceHost()).isEqualTo("test-host");
    assertThat(o.getDestinationHost()).isEqualTo("reducer-3");
    assertThat(o.getFinishUnixNanos()).isGreaterThan(o.getStartUnixNanos());
    assertThat(o.getStartUnixNanos()).isLessThanOrEqualTo(before);
    assertThat(o.getFlow().getEpoch()).isEqualTo(reg.getEpoch());
    assertThat(o.getQuench()).isEqualTo(QuenchOutcome.QUENCH_OUTCOME_NONE);
    FlowOutcomes batch = scheduler.outcomes.get(0);
    assertThat(batch.getAgentHost()).isEqualTo("test-host");
    assertThat(batch.getBatchId()).isEqualTo(1);
    assertThat(batch.getReporterId()).isNotEmpty();
    await().atMost(Duration.ofSeconds(5)).until(() -> agent.kernel().flowMeta(t).isEmpty());

    assertThat(client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(reg.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_WRITTEN).setBytesWritten(FLOW_BYTES).build())
        .getKnown()).isTrue();
    assertThat(agent.registry().liveFlows()).isZero();
  }

  @Test
  void aRestartedAgentKeepsLiveFlowsAndReceivesTheirEvents() throws Exception {
    FlowRegistration r = loopbackFlow();
    FlowRegistered reg = client.blocking().registerFlow(r);
    FlowTuple t = TestAgents.tuple(r);
    FlowMeta before = agent.kernel().flowMeta(t).orElseThrow();

    client.close();
    agent.close();
    assertThat(DatcpKernelProbe.meta(t)).contains(before);

    agent = TestAgents.start(settings());
    client = new AgentClient(dir.resolve("agent.sock"));
    assertThat(agent.registry().liveFlows()).isEqualTo(1);
    assertThat(agent.kernel().flowMeta(t)).contains(before);
    transfer(); // the bytes flow while the new agent runs

    await().atMost(Duration.ofSeconds(10)).until(() -> outcomes().size() == 1);
    assertThat(outcomes().get(0).getFlow().getEpoch()).isEqualTo(1);
    assertThat(outcomes().get(0).getMet()).isTrue();
    await().atMost(Duration.ofSeconds(5)).until(() -> agent.kernel().flowMeta(t).isEmpty());
    assertThat(client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(reg.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_WRITTEN).build()).getKnown()).isTrue();
    // the connection's next response continues its epoch count
    assertThat(client.blocking().registerFlow(r).getEpoch()).isEqualTo(2);
  }

  @Test
  void theFlowsOfAKilledAgentAreReportedByTheNextOne() throws Exception {
    // the in-process agent steps aside; a separate agent process registers the flow
    client.close();
    agent.close();
    Path crashed = dir.resolve("crashed");
    java.util.Map<String, String> s = TestAgents.settings(crashed, scheduler.target(),
        listener.getLocalPort());
    FlowRegistration r = loopbackFlow().toBuilder().setSubscriberId("nm-1").build();
    FlowTuple t = TestAgents.tuple(r);
    java.nio.file.Files.createDirectories(crashed);
    Process p = TestAgents.startProcess(s, crashed.resolve("agent.log"));
    FlowRegistered reg;
    try (AgentClient c = new AgentClient(crashed.resolve("agent.sock"))) {
      reg = c.blocking().registerFlow(r);
      assertThat(reg.getInKernel()).isTrue();
    } finally {
      p.destroyForcibly().waitFor(); // SIGKILL: no hand-over
    }
    assertThat(crashed.resolve("state/flows.snapshot")).doesNotExist();
    assertThat(DatcpKernelProbe.meta(t)).isPresent();

    agent = TestAgents.start(s);
    client = new AgentClient(crashed.resolve("agent.sock"));
    assertThat(agent.registry().liveFlows()).isEqualTo(1);
    transfer(); // the kernel's FINISHED event comes to the new agent

    await().atMost(Duration.ofSeconds(10)).until(() -> outcomes().size() == 1);
    FlowOutcome o = outcomes().get(0);
    assertThat(o.getJobId()).isEqualTo("job_1700000000000_0101");
    assertThat(o.getReduceId()).isEqualTo(3);
    assertThat(o.getBytes()).isEqualTo(FLOW_BYTES);
    assertThat(o.getDestinationHost()).isEqualTo("reducer-3");
    assertThat(o.getMet()).isTrue();
    assertThat(o.getFlow().getEpoch()).isEqualTo(reg.getEpoch());
    assertThat(o.getFlow().getMapIdsList()).containsExactly(7);
    assertThat(o.getFinishUnixNanos()).isGreaterThan(o.getStartUnixNanos());
    await().atMost(Duration.ofSeconds(5)).until(() -> agent.kernel().flowMeta(t).isEmpty());
    // the plugin's flow id still names the flow; the connection continues its epochs
    assertThat(client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(reg.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_WRITTEN).build()).getKnown()).isTrue();
    FlowRegistered next = client.blocking().registerFlow(r);
    assertThat(next.getEpoch()).isEqualTo(reg.getEpoch() + 1);
    assertThat(next.getFlowId()).isGreaterThan(reg.getFlowId());
  }

  @Test
  void ordersGoToTheSubscriberThatRegisteredTheFlowAndToAllWhenItIsUnknown() throws Exception {
    List<FlowOrder> nm1 = subscribeToOrders("nm-1");
    List<FlowOrder> nm2 = subscribeToOrders("nm-2");
    String job = "job_1700000000000_0105";
    FlowRegistration a = TestAgents.registration(job, 41, 43021).setSubscriberId("nm-1").build();
    FlowRegistration b = TestAgents.registration(job, 42, 43022).setSubscriberId("nm-2").build();
    FlowRegistration c = TestAgents.registration(job, 43, 43023).build(); // an older plugin
    FlowRegistration d = TestAgents.registration(job, 44, 43024).setSubscriberId("nm-gone")
        .build();
    long fa = client.blocking().registerFlow(a).getFlowId();
    long fb = client.blocking().registerFlow(b).getFlowId();
    long fc = client.blocking().registerFlow(c).getFlowId();
    client.blocking().registerFlow(d);
    for (FlowRegistration r : List.of(a, b, c, d)) {
      agent.registry().onKernelEvent(new KernelEvent(TestAgents.tuple(r),
          KernelEvent.Type.QUENCH, 1, 0, false, 3.0, FlowMeta.Quench.KILL));
    }

    await().atMost(Duration.ofSeconds(5)).until(() -> nm1.size() == 2 && nm2.size() == 2);
    Thread.sleep(200); // nothing else arrives
    assertThat(nm1).extracting(FlowOrder::getFlowId).containsExactly(fa, fc);
    assertThat(nm2).extracting(FlowOrder::getFlowId).containsExactly(fb, fc);
    // d's service is not subscribed: its order reaches nobody and is counted
    assertThat(agent.meters().counter("datcp.agent.orders.undelivered").count()).isEqualTo(1);
    String longId = "n".repeat(257);
    assertThatThrownBy(() -> client.blocking().registerFlow(TestAgents.registration(job, 45,
        43025).setSubscriberId(longId).build()))
        .hasMessageContaining("subscriber_id: 257 bytes, at most 256");
  }

  @Test
  void quenchEventsBecomeOrdersAndSuspendedFlowsResume() throws Exception {
    List<FlowOrder> orders = subscribeToOrders();
    long deadline = LocalAgentServiceTest.unixNanos(Instant.now().plusSeconds(30));
    scheduler.answer = l -> FlowPolicy.newBuilder().setJobId(l.getJobId())
        .setReduceId(l.getReduceId()).setDeadlineUnixNanos(deadline).setFlow(l.getFlow())
        .build();
    FlowRegistration a = TestAgents.registration("job_1700000000000_0102", 21, 43001).build();
    FlowRegistration b = TestAgents.registration("job_1700000000000_0102", 22, 43002).build();
    FlowRegistration c = TestAgents.registration("job_1700000000000_0102", 23, 43003).build();
    FlowRegistered ra = client.blocking().registerFlow(a);
    FlowRegistered rb = client.blocking().registerFlow(b);
    FlowRegistered rc = client.blocking().registerFlow(c);
    await().atMost(Duration.ofSeconds(5)).until(() -> List.of(a, b, c).stream().allMatch(
        r -> agent.kernel().flowMeta(TestAgents.tuple(r)).orElseThrow().deadlineNs() != 0));

    // the event thread's input, as the congestion control emits it (Algorithm 2's decision
    // itself is kmod's and tested there)
    agent.registry().onKernelEvent(new KernelEvent(TestAgents.tuple(b), KernelEvent.Type.QUENCH,
        1, 0, false, 4.2, FlowMeta.Quench.SUSPEND));
    agent.registry().onKernelEvent(new KernelEvent(TestAgents.tuple(c), KernelEvent.Type.QUENCH,
        1, 0, false, 3.0, FlowMeta.Quench.KILL));
    // an event of another epoch (a previous response) is not this flow's
    agent.registry().onKernelEvent(new KernelEvent(TestAgents.tuple(a), KernelEvent.Type.QUENCH,
        9, 0, false, 3.0, FlowMeta.Quench.KILL));

    await().atMost(Duration.ofSeconds(5)).until(() -> orders.size() == 2);
    assertThat(orders.get(0).getFlowId()).isEqualTo(rb.getFlowId());
    assertThat(orders.get(0).getAction()).isEqualTo(FlowAction.FLOW_ACTION_SUSPEND);
    assertThat(orders.get(0).getReason()).contains("precedence 4.20");
    assertThat(orders.get(1).getFlowId()).isEqualTo(rc.getFlowId());
    assertThat(orders.get(1).getAction()).isEqualTo(FlowAction.FLOW_ACTION_KILL);

    // b yielded to a (c was killed): once a is over, b resumes through a resume order
    // (datcp_flow_resume bumps the counter); its quench mode stays armed
    FlowMeta quenched = agent.kernel().flowMeta(TestAgents.tuple(b)).orElseThrow();
    client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(ra.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build());
    await().atMost(Duration.ofSeconds(5)).until(() -> orders.size() == 3);
    assertThat(orders.get(2).getFlowId()).isEqualTo(rb.getFlowId());
    assertThat(orders.get(2).getAction()).isEqualTo(FlowAction.FLOW_ACTION_RESUME);
    FlowMeta mb = agent.kernel().flowMeta(TestAgents.tuple(b)).orElseThrow();
    assertThat(mb.resume()).isEqualTo((quenched.resume() + 1) & 0xff);
    assertThat(mb.quench()).isEqualTo(quenched.quench()).isNotEqualTo(FlowMeta.Quench.OFF);
    assertThat(mb.epoch()).isEqualTo(1);

    client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(rc.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build());
    await().atMost(Duration.ofSeconds(5)).until(() -> outcomes().stream()
        .anyMatch(o -> o.getFlow().getSourceAddress().equals(c.getSourceAddress())));
    assertThat(outcomes().stream().filter(o -> o.getFlow().getSourceAddress()
        .equals(c.getSourceAddress())).findFirst().orElseThrow().getQuench())
        .isEqualTo(QuenchOutcome.QUENCH_OUTCOME_KILLED);
    // a flow suspended once reports it, even after it resumed
    client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(rb.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build());
    await().atMost(Duration.ofSeconds(5)).until(() -> outcomes().stream()
        .anyMatch(o -> o.getFlow().getSourceAddress().equals(b.getSourceAddress())));
    assertThat(outcomes().stream().filter(o -> o.getFlow().getSourceAddress()
        .equals(b.getSourceAddress())).findFirst().orElseThrow().getQuench())
        .isEqualTo(QuenchOutcome.QUENCH_OUTCOME_SUSPENDED);
  }

  @Test
  void aSocketClosedBeforeItsLastByteIsReportedMissedAndForgotten() throws Exception {
    int flowsBefore = agent.kernel().flowCount();
    FlowRegistration r = loopbackFlow();
    FlowRegistered reg = client.blocking().registerFlow(r);
    FlowTuple t = TestAgents.tuple(r);
    assertThat(agent.kernel().flowCount()).isEqualTo(flowsBefore + 1);
    // a part of the response, then the connection goes (a killed fetch, a dead reducer)
    sender.getOutputStream().write(new byte[100_000]);
    sender.getOutputStream().flush();
    receiver.getInputStream().readNBytes(100_000);
    sender.close();
    receiver.close();

    await().atMost(Duration.ofSeconds(10)).until(() -> outcomes().size() == 1);
    FlowOutcome o = outcomes().get(0);
    assertThat(o.getFlow().getEpoch()).isEqualTo(reg.getEpoch());
    assertThat(o.getMet()).isFalse();
    assertThat(o.getFinishUnixNanos()).isZero();
    assertThat(agent.registry().liveFlows()).isZero();
    assertThat(agent.kernel().flowMeta(t)).isEmpty();
    assertThat(agent.kernel().flowCount()).isEqualTo(flowsBefore);
    // the plugin's EndFlow after the close finds nothing left to do
    assertThat(client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(reg.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build()).getKnown()).isFalse();
    assertThat(outcomes()).hasSize(1);
  }

  @Test
  void aResumeByTheKernelBecomesAResumeOrderAndQuenchingStaysArmed() throws Exception {
    List<FlowOrder> orders = subscribeToOrders();
    long deadline = LocalAgentServiceTest.unixNanos(Instant.now().plusSeconds(30));
    scheduler.answer = l -> FlowPolicy.newBuilder().setJobId(l.getJobId())
        .setReduceId(l.getReduceId()).setDeadlineUnixNanos(deadline).setFlow(l.getFlow())
        .build();
    FlowRegistration a = TestAgents.registration("job_1700000000000_0103", 31, 43011).build();
    FlowRegistered ra = client.blocking().registerFlow(a);
    FlowTuple t = TestAgents.tuple(a);
    await().atMost(Duration.ofSeconds(5))
        .until(() -> agent.kernel().flowMeta(t).orElseThrow().deadlineNs() != 0);
    FlowMeta before = agent.kernel().flowMeta(t).orElseThrow();

    agent.registry().onKernelEvent(new KernelEvent(t, KernelEvent.Type.QUENCH, 1, 0, false,
        2.0, FlowMeta.Quench.SUSPEND));
    // as the kernel's quench timer sends it (it has bumped meta.resume itself)
    agent.registry().onKernelEvent(new KernelEvent(t, KernelEvent.Type.RESUME, 1, 0, false, 0,
        FlowMeta.Quench.OFF, 0, false, KernelEvent.ResumeReason.TIMEOUT));

    await().atMost(Duration.ofSeconds(5)).until(() -> orders.size() == 2);
    assertThat(orders.get(0).getAction()).isEqualTo(FlowAction.FLOW_ACTION_SUSPEND);
    assertThat(orders.get(1).getFlowId()).isEqualTo(ra.getFlowId());
    assertThat(orders.get(1).getAction()).isEqualTo(FlowAction.FLOW_ACTION_RESUME);
    assertThat(orders.get(1).getReason()).contains("quench timeout");
    // the agent neither rewrote nor bumped the registration: the kernel did the resume
    assertThat(agent.kernel().flowMeta(t).orElseThrow()).isEqualTo(before);
    // the flow can be quenched again, and that is relayed again
    agent.registry().onKernelEvent(new KernelEvent(t, KernelEvent.Type.QUENCH, 1, 0, false,
        2.0, FlowMeta.Quench.SUSPEND));
    await().atMost(Duration.ofSeconds(5)).until(() -> orders.size() == 3);
    assertThat(orders.get(2).getAction()).isEqualTo(FlowAction.FLOW_ACTION_SUSPEND);
  }

  @Test
  void aSuspendedFlowWhoseQuenchingTheSchedulerTurnsOffResumes() throws Exception {
    List<FlowOrder> orders = subscribeToOrders();
    long deadline = LocalAgentServiceTest.unixNanos(Instant.now().plusSeconds(30));
    java.util.concurrent.atomic.AtomicReference<FlowPolicy> answered =
        new java.util.concurrent.atomic.AtomicReference<>();
    scheduler.answer = l -> {
      FlowPolicy p = FlowPolicy.newBuilder().setJobId(l.getJobId()).setReduceId(l.getReduceId())
          .setDeadlineUnixNanos(deadline).setQuenchMode(QuenchMode.QUENCH_MODE_SUSPEND)
          .setFlow(l.getFlow()).build();
      answered.set(p);
      return p;
    };
    FlowRegistration a = TestAgents.registration("job_1700000000000_0104", 32, 43012).build();
    FlowRegistered ra = client.blocking().registerFlow(a);
    FlowTuple t = TestAgents.tuple(a);
    await().atMost(Duration.ofSeconds(5))
        .until(() -> agent.kernel().flowMeta(t).orElseThrow().deadlineNs() != 0);
    agent.registry().onKernelEvent(new KernelEvent(t, KernelEvent.Type.QUENCH, 1, 0, false,
        2.0, FlowMeta.Quench.SUSPEND));
    await().atMost(Duration.ofSeconds(5)).until(() -> orders.size() == 1);

    // the job became first in its host's order: the update turns quenching off
    agent.registry().applyPolicy(answered.get().toBuilder()
        .setQuenchMode(QuenchMode.QUENCH_MODE_OFF).setImportance(10).setPhi(1).build());

    await().atMost(Duration.ofSeconds(5)).until(() -> orders.size() == 2);
    assertThat(orders.get(1).getFlowId()).isEqualTo(ra.getFlowId());
    assertThat(orders.get(1).getAction()).isEqualTo(FlowAction.FLOW_ACTION_RESUME);
    assertThat(orders.get(1).getReason()).contains("quenching turned off");
    assertThat(agent.kernel().flowMeta(t).orElseThrow().quench()).isEqualTo(FlowMeta.Quench.OFF);
  }

  @Test
  void theKernelsOwnQuenchAndResumeReachThePlugin() throws Exception {
    List<FlowOrder> orders = subscribeToOrders();
    // 1 TiB in 20 s: more than loopback can carry, so Algorithm 2 quenches it (as in kmod's
    // kernel_test.sh); loopback never marks ECN, so the kernel lifts the quench once the
    // destination was quiet for resume_quiet_ms. The namespace's line rate is raised to 10
    // Tbit/s so that the flow is not already overdue (given up) at the agent's 100 Mbit/s.
    datcpctl("line-rate", "set", "--rate-mbit", "10000000");
    long deadline = LocalAgentServiceTest.unixNanos(Instant.now().plusSeconds(20));
    scheduler.answer = l -> FlowPolicy.newBuilder().setJobId(l.getJobId())
        .setReduceId(l.getReduceId()).setDeadlineUnixNanos(deadline).setImportance(1)
        .setFlow(l.getFlow()).build();
    FlowRegistration r = loopbackFlow().toBuilder().setBytes(1L << 40).build();
    FlowRegistered reg = client.blocking().registerFlow(r);
    FlowTuple t = TestAgents.tuple(r);
    await().atMost(Duration.ofSeconds(5))
        .until(() -> agent.kernel().flowMeta(t).orElseThrow().deadlineNs() != 0);
    Thread reader = new Thread(() -> {
      try (InputStream in = receiver.getInputStream()) {
        in.transferTo(OutputStream.nullOutputStream());
      } catch (Exception e) {
        // the test closes the connection
      }
    });
    reader.start();
    Thread writer = new Thread(() -> {
      byte[] chunk = new byte[65536];
      try {
        OutputStream out = sender.getOutputStream();
        while (!Thread.currentThread().isInterrupted()) {
          out.write(chunk);
        }
      } catch (Exception e) {
        // the test closes the connection
      }
    });
    writer.start();
    try {
      await().atMost(Duration.ofSeconds(20)).until(() -> orders.stream()
          .anyMatch(o -> o.getAction() == FlowAction.FLOW_ACTION_RESUME));
      FlowOrder suspend = orders.get(0);
      assertThat(suspend.getFlowId()).isEqualTo(reg.getFlowId());
      assertThat(suspend.getAction()).isEqualTo(FlowAction.FLOW_ACTION_SUSPEND);
      FlowOrder resume = orders.stream()
          .filter(o -> o.getAction() == FlowAction.FLOW_ACTION_RESUME).findFirst().orElseThrow();
      assertThat(resume.getFlowId()).isEqualTo(reg.getFlowId());
      assertThat(resume.getReason()).startsWith("resumed by the kernel");
      // quenching stays armed: the entry still carries the suspend mode
      assertThat(agent.kernel().flowMeta(t).orElseThrow().quench())
          .isEqualTo(FlowMeta.Quench.SUSPEND);
    } finally {
      writer.interrupt();
      sender.close();
      receiver.close();
      writer.join(5_000);
      reader.join(5_000);
      datcpctl("line-rate", "del");
    }
  }

  private static void datcpctl(String... args) throws Exception {
    List<String> cmd = new java.util.ArrayList<>();
    cmd.add(Path.of(KernelLock.library()).resolveSibling("datcpctl").toString());
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertThat(p.waitFor()).as("%s: %s", cmd, out).isZero();
  }

  /** Reads the kernel with no agent running. */
  static final class DatcpKernelProbe {
    static java.util.Optional<FlowMeta> meta(FlowTuple t) {
      return io.datcp.agent.kernel.DatcpKernel.attach(KernelLock.library()).flowMeta(t);
    }
  }
}
