package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.kernel.FlowMeta;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.agent.testing.AgentClient;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.KernelLockExtension;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowMode;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.QuenchMode;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * LocalAgentService over the Unix socket, with the real kernel (root; holds the kernel lock):
 * registrations land in the datcp flow map, hostile ones change nothing, the scheduler's answer
 * replaces the default in the kernel.
 */
@ExtendWith(KernelLockExtension.class)
class LocalAgentServiceTest {
  @TempDir
  Path dir;
  private FakeScheduler scheduler;
  private AgentServer agent;
  private AgentClient client;

  @BeforeEach
  void start() throws Exception {
    scheduler = new FakeScheduler().start();
    agent = TestAgents.start(TestAgents.settings(dir, scheduler.target(), 13562));
    client = new AgentClient(dir.resolve("agent.sock"));
  }

  @AfterEach
  void stop() throws Exception {
    client.close();
    agent.close();
    scheduler.close();
    TestAgents.deleteTestEntries(-1);
  }

  @Test
  void registrationIsWrittenIntoTheKernelWithAnEpochPerResponse() throws Exception {
    FlowRegistration r = TestAgents.registration("job_1700000000000_0001", 1, 40001)
        .setBytes(123_456).build();
    FlowRegistered first = client.blocking().registerFlow(r);

    assertThat(first.getInKernel()).isTrue();
    assertThat(first.getEpoch()).isEqualTo(1);
    assertThat(first.getPolicy().getFlow().getEpoch()).isEqualTo(1);
    FlowMeta m = agent.kernel().flowMeta(TestAgents.tuple(r)).orElseThrow();
    assertThat(m.sizeBytes()).isEqualTo(123_456);
    assertThat(m.epoch()).isEqualTo(1);
    assertThat(m.mode()).isEqualTo(FlowMeta.Mode.DATCP);
    assertThat(m.startNs()).isPositive();

    // the next response on the kept-alive connection is a new flow: epoch 2
    FlowRegistered second = client.blocking().registerFlow(r.toBuilder().setBytes(7).build());
    assertThat(second.getEpoch()).isEqualTo(2);
    assertThat(second.getFlowId()).isNotEqualTo(first.getFlowId());
    assertThat(agent.kernel().flowMeta(TestAgents.tuple(r)).orElseThrow().epoch()).isEqualTo(2);

    // abandoning it deletes the kernel entry; a second EndFlow knows nothing of it
    assertThat(client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(second.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build()).getKnown()).isTrue();
    assertThat(agent.kernel().flowMeta(TestAgents.tuple(r))).isEmpty();
    assertThat(client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(second.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build()).getKnown()).isFalse();
    assertThat(agent.registry().liveFlows()).isZero();
  }

  @Test
  void hostileRegistrationsGetClearErrorsAndChangeNothing() throws Exception {
    FlowRegistration good = TestAgents.registration("job_1700000000000_0002", 2, 40002).build();
    client.blocking().registerFlow(good);
    int kernelBefore = agent.kernel().flowCount();
    FlowMeta metaBefore = agent.kernel().flowMeta(TestAgents.tuple(good)).orElseThrow();

    Map<FlowRegistration, String> hostile = Map.of(
        good.toBuilder().setBytes(-5).build(), "bytes: -5",
        good.toBuilder().setBytes(Long.MAX_VALUE).build(), "bytes: " + Long.MAX_VALUE,
        good.toBuilder().clearMapIds().build(), "map_ids: empty",
        good.toBuilder().setMapIds(0, -3).build(), "map_ids[0]: -3",
        good.toBuilder().setJobId("job_1; rm -rf /").build(), "job_id:",
        good.toBuilder().setReduceId(-1).build(), "reduce_id: -1",
        good.toBuilder().setSourceAddress("evil.example").build(), "source_address:",
        good.toBuilder().setDestinationAddress("").build(), "destination_address:",
        good.toBuilder().setSourcePort(70000).build(), "source_port: 70000",
        good.toBuilder().setDestinationPort(0).build(), "destination_port: 0");
    for (Map.Entry<FlowRegistration, String> e : hostile.entrySet()) {
      assertThatThrownBy(() -> client.blocking().registerFlow(e.getKey()))
          .isInstanceOfSatisfying(StatusRuntimeException.class, ex -> {
            assertThat(ex.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(ex.getStatus().getDescription()).startsWith(e.getValue());
          });
    }

    assertThat(agent.kernel().flowCount()).isEqualTo(kernelBefore);
    assertThat(agent.kernel().flowMeta(TestAgents.tuple(good)).orElseThrow())
        .isEqualTo(metaBefore);
    assertThat(agent.registry().liveFlows()).isEqualTo(1);
  }

  @Test
  void aTupleOwnedByAnotherJobsLiveFlowIsAlreadyExists() throws Exception {
    FlowRegistration a = TestAgents.registration("job_1700000000000_0003", 3, 40003).build();
    FlowRegistered ra = client.blocking().registerFlow(a);
    FlowMeta before = agent.kernel().flowMeta(TestAgents.tuple(a)).orElseThrow();

    FlowRegistration b = a.toBuilder().setJobId("job_1700000000000_0004").build();
    assertThatThrownBy(() -> client.blocking().registerFlow(b))
        .isInstanceOfSatisfying(StatusRuntimeException.class, ex -> {
          assertThat(ex.getStatus().getCode()).isEqualTo(Status.Code.ALREADY_EXISTS);
          assertThat(ex.getStatus().getDescription()).contains("job_1700000000000_0003");
        });
    assertThat(agent.kernel().flowMeta(TestAgents.tuple(a)).orElseThrow()).isEqualTo(before);

    // once job A's flow is over, the 4-tuple (a reused port) may carry job B
    client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(ra.getFlowId())
        .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build());
    assertThat(client.blocking().registerFlow(b).getEpoch()).isEqualTo(2);
  }

  @Test
  void theSchedulersAnswerReplacesTheDefaultInTheKernel() throws Exception {
    long deadlineUnix = unixNanos(Instant.now().plusSeconds(2));
    scheduler.answer = l -> FlowPolicy.newBuilder().setJobId(l.getJobId())
        .setReduceId(l.getReduceId()).setDeadlineUnixNanos(deadlineUnix).setImportance(3)
        .setPhi(0.5).setMode(FlowMode.FLOW_MODE_DATCP)
        .setQuenchMode(QuenchMode.QUENCH_MODE_KILL).setFlow(l.getFlow()).build();
    FlowRegistration r = TestAgents.registration("job_1700000000000_0005", 5, 40005).build();
    long monoBefore = agent.kernel().nowNs();
    long unixBefore = unixNanos(Instant.now());

    FlowRegistered reg = client.blocking().registerFlow(r);
    // answered at once with the default: no deadline yet
    assertThat(reg.getPolicy().getDeadlineUnixNanos()).isZero();

    FlowTuple t = TestAgents.tuple(r);
    await().atMost(Duration.ofSeconds(5)).until(
        () -> agent.kernel().flowMeta(t).map(FlowMeta::deadlineNs).orElse(0L) != 0);
    FlowMeta m = agent.kernel().flowMeta(t).orElseThrow();
    assertThat(m.importance()).isEqualTo(3.0);
    assertThat(m.phi()).isEqualTo(0.5);
    assertThat(m.quench()).isEqualTo(FlowMeta.Quench.KILL);
    assertThat(m.epoch()).isEqualTo(1);
    // wall-clock deadline converted to CLOCK_MONOTONIC: about 2 s after registration
    long expected = monoBefore + (deadlineUnix - unixBefore);
    assertThat(m.deadlineNs()).isBetween(expected - 50_000_000L, expected + 50_000_000L);
    assertThat(scheduler.lookups).singleElement().satisfies(l -> {
      assertThat(l.getAgentHost()).isEqualTo("test-host");
      assertThat(l.getBytes()).isEqualTo(r.getBytes());
      assertThat(l.getFlow().getEpoch()).isEqualTo(1);
    });

    // the next flow of the same reduce starts with the cached policy
    FlowRegistered next = client.blocking().registerFlow(
        r.toBuilder().setDestinationPort(40006).build());
    assertThat(next.getPolicy().getDeadlineUnixNanos()).isEqualTo(deadlineUnix);
  }

  @Test
  void absurdSchedulerAnswersAreReplacedByTheDefault() throws Exception {
    scheduler.answer = l -> FlowPolicy.newBuilder().setJobId(l.getJobId())
        .setReduceId(l.getReduceId()).setImportance(1e9).setPhi(-4)
        .setDeadlineUnixNanos(Long.MAX_VALUE).setMode(FlowMode.FLOW_MODE_DCTCP)
        .setFlow(l.getFlow()).build();
    FlowRegistration r = TestAgents.registration("job_1700000000000_0007", 7, 40007).build();
    client.blocking().registerFlow(r);
    FlowTuple t = TestAgents.tuple(r);

    await().atMost(Duration.ofSeconds(5)).until(() -> agent.kernel().flowMeta(t)
        .map(m -> m.mode() == FlowMeta.Mode.DCTCP).orElse(false));
    FlowMeta m = agent.kernel().flowMeta(t).orElseThrow();
    assertThat(m.importance()).isZero();
    assertThat(m.phi()).isZero();
    assertThat(m.deadlineNs()).isZero();
  }

  @Test
  void socketHasTheConfiguredMode() throws Exception {
    assertThat(PosixFilePermissions.toString(
        Files.getPosixFilePermissions(dir.resolve("agent.sock")))).isEqualTo("rw-rw----");
  }

  @Test
  void registrationFloodsAreRateLimited() throws Exception {
    client.close();
    agent.close();
    Map<String, String> s = TestAgents.settings(dir, "", 13562);
    s.put("local.registerRatePerSecond", "1");
    s.put("local.registerBurst", "3");
    agent = TestAgents.start(s);
    client = new AgentClient(dir.resolve("agent.sock"));
    for (int i = 0; i < 3; i++) {
      client.blocking().registerFlow(
          TestAgents.registration("job_1700000000000_0008", 8, 41000 + i).build());
    }
    int kernelBefore = agent.kernel().flowCount();
    assertThatThrownBy(() -> client.blocking().registerFlow(
        TestAgents.registration("job_1700000000000_0008", 8, 41010).build()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, ex -> assertThat(
            ex.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED));
    assertThat(agent.kernel().flowCount()).isEqualTo(kernelBefore);
    assertThat(agent.registry().liveFlows()).isEqualTo(3);
  }

  @Test
  void tooManyLiveFlowsIsResourceExhausted() throws Exception {
    client.close();
    agent.close();
    Map<String, String> s = TestAgents.settings(dir, "", 13562);
    s.put("local.maxLiveFlows", "2");
    agent = TestAgents.start(s);
    client = new AgentClient(dir.resolve("agent.sock"));
    List.of(42001, 42002).forEach(p -> client.blocking().registerFlow(
        TestAgents.registration("job_1700000000000_0009", 9, p).build()));
    assertThatThrownBy(() -> client.blocking().registerFlow(
        TestAgents.registration("job_1700000000000_0009", 9, 42003).build()))
        .hasMessageContaining("local.maxLiveFlows");
  }

  static long unixNanos(Instant t) {
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }
}
