package io.datcp.agent.flows;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.agent.kernel.DatcpKernel;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.agent.testing.KernelLock;
import io.datcp.agent.testing.KernelLockExtension;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowRegistration;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * No kernel-map leak: flows registered and ended (100,000 in CI; agent/bench/run-bench.sh runs
 * a million through system property datcp.churn.flows)
 * through the agent's flow registry and the real kernel, 64 in flight at a time over 1,000
 * kept-alive connections, leave no entry of theirs behind (root; holds the kernel lock).
 */
@ExtendWith(KernelLockExtension.class)
class KernelChurnTest {
  private static final int CONNECTIONS = 1000;
  private static final int IN_FLIGHT = 64;

  @Test
  void registeringAndEndingFlowsLeavesTheFlowMapAsItWas() throws Exception {
    int total = Integer.getInteger("datcp.churn.flows", 100_000);
    DatcpKernel kernel = DatcpKernel.load(KernelLock.library(), "test churn", java.util.List.of(13562),
        100_000_000L, "").kernel();
    int before = kernel.flowCount();
    AtomicLong outcomes = new AtomicLong();
    FlowRegistry registry = TestAgents.registry("churn-host", kernel,
        o -> outcomes.incrementAndGet());
    FlowRegistration base = TestAgents.registration("job_1700000000000_0301", 1, 1).build();
    ArrayDeque<Long> live = new ArrayDeque<>();
    int peak = 0;
    long t0 = System.nanoTime();
    for (int i = 0; i < total; i++) {
      int conn = i % CONNECTIONS;
      FlowRegistration r = base.toBuilder().setSourceAddress(TestAgents.TEST_NET
          + (1 + conn / 250)).setDestinationPort(20000 + conn % 250).build();
      live.addLast(registry.register(r).getFlowId());
      if (live.size() > IN_FLIGHT) {
        assertThat(registry.end(live.removeFirst(), FlowEndReason.FLOW_END_REASON_ABORTED))
            .isTrue();
      }
      if (i % 100_000 == 0) {
        peak = Math.max(peak, kernel.flowCount() - before);
      }
    }
    while (!live.isEmpty()) {
      registry.end(live.removeFirst(), FlowEndReason.FLOW_END_REASON_ABORTED);
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    System.out.printf("churn: %d flows registered and ended in %.1f s (%.0f/s)%n", total,
        seconds, total / seconds);

    assertThat(peak).isBetween(1, IN_FLIGHT + 1);
    assertThat(kernel.flowCount()).isEqualTo(before);
    assertThat(kernel.flows().keySet().stream().map(FlowTuple::source)
        .filter(s -> s.startsWith(TestAgents.TEST_NET))).isEmpty();
    assertThat(registry.liveFlows()).isZero();
    assertThat(registry.connections()).isEqualTo(CONNECTIONS);
    assertThat(outcomes.get()).isEqualTo(total);
  }
}
