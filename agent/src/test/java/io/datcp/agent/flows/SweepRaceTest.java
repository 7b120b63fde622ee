package io.datcp.agent.flows;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.kernel.FlowMeta;
import io.datcp.agent.kernel.FlowStats;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.agent.kernel.Kernel;
import io.datcp.agent.kernel.KernelException;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowRegistration;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
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
    Kernel absent = Kernel.absent("test");
    // a clock two hours past its origin: a connection never used counts as idle
    Kernel kernel = new Kernel() {
      @Override
      public boolean available() {
        return false;
      }

      @Override
      public long nowNs() {
        return System.nanoTime() + HOURS_2;
      }

      @Override
      public void setFlow(FlowTuple key, FlowMeta meta) throws KernelException {
        absent.setFlow(key, meta);
      }

      @Override
      public void resumeFlow(FlowTuple key) throws KernelException {
        absent.resumeFlow(key);
      }

      @Override
      public boolean deleteFlow(FlowTuple key) {
        return absent.deleteFlow(key);
      }

      @Override
      public Optional<FlowMeta> flowMeta(FlowTuple key) {
        return absent.flowMeta(key);
      }

      @Override
      public Optional<FlowStats> flowStats(FlowTuple key) {
        return absent.flowStats(key);
      }

      @Override
      public Map<FlowTuple, FlowMeta> flows() throws KernelException {
        return absent.flows();
      }

      @Override
      public int flowCount() throws KernelException {
        return absent.flowCount();
      }

      @Override
      public Events openEvents(Consumer<io.datcp.agent.kernel.KernelEvent> sink)
          throws KernelException {
        return absent.openEvents(sink);
      }
    };
    FlowRegistry registry = new FlowRegistry(AgentConf.fromMap(Map.of(
        "local.registerRatePerSecond", "1e12", "local.registerBurst", "1000000000")),
        "race-host", kernel, PolicySource.NONE, new FlowListener() {
          @Override
          public void order(long flowId, String subscriber, FlowAction action, String reason) {}

          @Override
          public void outcome(FlowOutcome o) {}
        }, new SimpleMeterRegistry());
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
