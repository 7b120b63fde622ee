package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.kernel.FlowMeta;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.agent.testing.AgentClient;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.KernelLockExtension;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.FlowMode;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.QuenchMode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's part in issue 16's baselines, with the real kernel (root; holds the kernel lock):
 * dctcp runs agents without a scheduler whose default mode is dctcp; prio gets dctcp flows with
 * an importance, phi 1 and quenching off from the scheduler's order policy.
 */
@ExtendWith(KernelLockExtension.class)
class BaselineModesTest {
  @TempDir Path dir;

  @AfterEach
  void clean() throws Exception {
    TestAgents.deleteTestEntries(-1);
  }

  @Test
  void withoutASchedulerEveryFlowRunsTheDefaultModeDctcp() throws Exception {
    Map<String, String> s = TestAgents.settings(dir, "", 13562);
    s.put("policy.defaultMode", "dctcp");
    try (AgentServer agent = TestAgents.start(s);
        AgentClient client = new AgentClient(dir.resolve("agent.sock"))) {
      for (int i = 0; i < 3; i++) {
        FlowRegistration r = TestAgents.registration("job_1700000000000_050" + i, 50 + i,
            46000 + i).build();
        FlowRegistered registered = client.blocking().registerFlow(r);

        assertThat(registered.getInKernel()).isTrue();
        assertThat(registered.getPolicy().getMode()).isEqualTo(FlowMode.FLOW_MODE_DCTCP);
        FlowMeta m = agent.kernel().flowMeta(TestAgents.tuple(r)).orElseThrow();
        assertThat(m.mode()).isEqualTo(FlowMeta.Mode.DCTCP);
        assertThat(m.deadlineNs()).isZero();
        // importance 0, phi 0: the kernel's dctcp precedence is 1, the standard class
        assertThat(m.importance()).isZero();
        assertThat(m.phi()).isZero();
      }
    }
  }

  @Test
  void theOrderPoliciesDctcpClassWithQuenchingOffReachesTheKernel() throws Exception {
    try (FakeScheduler scheduler = new FakeScheduler().start()) {
      scheduler.answer = l -> FlowPolicy.newBuilder().setJobId(l.getJobId())
          .setReduceId(l.getReduceId()).setImportance(10).setPhi(1)
          .setMode(FlowMode.FLOW_MODE_DCTCP).setQuenchMode(QuenchMode.QUENCH_MODE_OFF)
          .setReason("order policy: rank 1").setFlow(l.getFlow()).build();
      Map<String, String> s = TestAgents.settings(dir, scheduler.target(), 13562);
      s.put("policy.defaultMode", "dctcp");
      try (AgentServer agent = TestAgents.start(s);
          AgentClient client = new AgentClient(dir.resolve("agent.sock"))) {
        FlowRegistration r = TestAgents.registration("job_1700000000000_0510", 60, 46010)
            .build();
        client.blocking().registerFlow(r);
        FlowTuple t = TestAgents.tuple(r);

        await().atMost(Duration.ofSeconds(5)).until(() -> agent.kernel().flowMeta(t)
            .map(m -> m.importance() == 10).orElse(false));
        FlowMeta m = agent.kernel().flowMeta(t).orElseThrow();
        assertThat(m.mode()).isEqualTo(FlowMeta.Mode.DCTCP);
        assertThat(m.phi()).isEqualTo(1.0);
        assertThat(m.quench()).isEqualTo(FlowMeta.Quench.OFF);
        assertThat(m.deadlineNs()).isZero();
      }
    }
  }
}
