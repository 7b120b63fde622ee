package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.testing.AgentClient;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowRegistered;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fail-open without the kernel data path (kernel.enabled=false, or datcp could not be loaded):
 * registrations are answered, flows run as plain TCP, outcomes still reach the scheduler. No
 * root needed.
 */
class NoKernelTest {

  @Test
  void registrationsAreAnsweredAndOutcomesReportedWithoutTheKernel(@TempDir Path dir)
      throws Exception {
    try (FakeScheduler scheduler = new FakeScheduler().start()) {
      Map<String, String> s = TestAgents.settings(dir, scheduler.target(), 13562);
      s.put("kernel.enabled", "false");
      s.put("kernel.library", "no-such-library");
      try (AgentServer agent = TestAgents.start(s);
          AgentClient client = new AgentClient(dir.resolve("agent.sock"))) {
        FlowRegistered r = client.blocking().registerFlow(
            TestAgents.registration("job_1700000000000_0401", 1, 45001).build());
        assertThat(r.getInKernel()).isFalse();
        assertThat(r.getEpoch()).isEqualTo(1);
        assertThat(client.blocking().endFlow(FlowEnd.newBuilder().setFlowId(r.getFlowId())
            .setReason(FlowEndReason.FLOW_END_REASON_WRITTEN).build()).getKnown()).isTrue();

        await().atMost(Duration.ofSeconds(5)).until(() -> !scheduler.outcomes.isEmpty());
        FlowOutcome o = scheduler.outcomes.get(0).getOutcomes(0);
        assertThat(o.getFinishUnixNanos()).isGreaterThanOrEqualTo(o.getStartUnixNanos());
        assertThat(o.getMet()).isTrue();
        assertThat(agent.registry().liveFlows()).isZero();
      }
    }
  }
}
