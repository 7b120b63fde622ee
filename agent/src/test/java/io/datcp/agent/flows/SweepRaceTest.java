package io.datcp.agent.flows;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.agent.kernel.Kernel;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowRegistration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The periodic sweep drops idle connections while flows register on new ones: a connection
 * the sweep removes between a registration's lookup and its lock must not carry the flow (the
 * trace replay's agents, on a machine up for more than flows.connectionIdleMillis, failed
 * EndFlow and every later sweep with a NullPointerException on such a flow).
 */
class SweepRaceTest {
  private static final long HOURS_2 = 7_200_000_000_000L;

  @Test
  void aFlowRegisteredWhileTheSweepRunsCanBeEndedAndSwept() throws Exception {
    // a clock two hours past its origin: a connection never used counts as idle
    FlowRegistry registry = TestAgents.registry("race-host",
        Kernel.absent("test", () -> System.nanoTime() + HOURS_2), o -> { });
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> sweepFailed = new AtomicReference<>();
    Thread sweeper = new Thread(() -> {
      try {
        while (!stop.get()) {
          registry.sweep();
        }
      } catch (Throwable t) {
        sweepFailed.set(t);
      }
    }, "sweeper");
    sweeper.start();
    FlowRegistration base = TestAgents.registration("job_1700000000000_0302", 1, 1).build();
    int total = 200_000;
    try {
      for (int i = 0; i < total && sweepFailed.get() == null; i++) {
        FlowRegistration r = base.toBuilder().setSourceAddress(TestAgents.TEST_NET
            + (1 + i / 50_000)).setDestinationPort(10_000 + i % 50_000).build();
        long id = registry.register(r).getFlowId();
        assertThat(registry.end(id, FlowEndReason.FLOW_END_REASON_ABORTED)).isTrue();
      }
    } finally {
      stop.set(true);
      sweeper.join();
    }
    assertThat(sweepFailed.get()).isNull();
    registry.sweep();
    assertThat(registry.liveFlows()).isZero();
  }
}
