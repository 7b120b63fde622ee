package io.datcp.agent.testing;

import io.datcp.agent.AgentServer;
import io.datcp.agent.config.AgentConf;
import io.datcp.agent.kernel.DatcpKernel;
import io.datcp.agent.flows.FlowListener;
import io.datcp.agent.flows.FlowRegistry;
import io.datcp.agent.flows.Owner;
import io.datcp.agent.flows.PolicySource;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.agent.kernel.Kernel;
import io.datcp.agent.kernel.KernelException;
import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowRegistration;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/** Agents for tests: their own socket and state directory, the kmod build's libdatcp. */
public final class TestAgents {
  /** TEST-NET-1 (RFC 5737): synthetic 4-tuples that never carry traffic. */
  public static final String TEST_NET = "192.0.2.";

  private TestAgents() {}

  /**
   * Test settings: socket and state under dir, fast reconnects, metrics on a free port, the
   * scheduler reached in plaintext.
   */
  public static Map<String, String> settings(Path dir, String schedulerTarget, int shufflePort) {
    Map<String, String> m = new HashMap<>();
    m.put("agent.host", "test-host");
    m.put("local.socketPath", dir.resolve("agent.sock").toString());
    m.put("state.dir", dir.resolve("state").toString());
    m.put("kernel.library", KernelLock.library());
    m.put("kernel.shufflePorts", Integer.toString(shufflePort));
    m.put("scheduler.target", schedulerTarget);
    m.put("scheduler.plaintext", "true"); // the fake scheduler on loopback; TLS: SchedulerTlsTest
    m.put("scheduler.reconnectMinMillis", "50");
    m.put("scheduler.reconnectMaxMillis", "200");
    m.put("reports.flushMillis", "20");
    m.put("metrics.port", "0");
    m.put("metrics.host", "127.0.0.1");
    return m;
  }

  public static AgentServer start(Map<String, String> settings) throws IOException {
    return AgentServer.builder(AgentConf.fromMap(settings)).start();
  }

  /**
   * Starts an agent in its own JVM (to be killed with SIGKILL: {@link Process#destroyForcibly})
   * and returns once it is ready; its output goes to log. The caller destroys it.
   */
  public static Process startProcess(Map<String, String> settings, Path log)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(
        ProcessHandle.current().info().command().orElse("java"),
        "-cp", System.getProperty("java.class.path"), "io.datcp.agent.AgentMain"));
    settings.forEach((k, v) -> cmd.addAll(List.of("-D", k + "=" + v)));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    long until = System.nanoTime() + 60_000_000_000L;
    while (!Files.readString(log).contains("datcp agent ready")) {
      if (!p.isAlive() || System.nanoTime() > until) {
        p.destroyForcibly().waitFor();
        throw new IOException("agent process did not start: " + Files.readString(log));
      }
      Thread.sleep(50);
    }
    return p;
  }

  /**
   * A flow registry on kernel without a scheduler, its registration rate unlimited (tests
   * register far faster than local.registerRatePerSecond allows); outcomes go to outcomes.
   */
  public static FlowRegistry registry(String host, Kernel kernel,
      Consumer<FlowOutcome> outcomes) {
    return new FlowRegistry(AgentConf.fromMap(Map.of(
        "local.registerRatePerSecond", "1e12", "local.registerBurst", "1000000000")),
        host, kernel, PolicySource.NONE, new FlowListener() {
          @Override
          public void order(long flowId, Owner owner, String subscriber, FlowAction action,
              String reason) {}

          @Override
          public void outcome(FlowOutcome o) {
            outcomes.accept(o);
          }
        }, new SimpleMeterRegistry());
  }

  /** A well-formed registration on a synthetic TEST-NET tuple. */
  public static FlowRegistration.Builder registration(String job, int host, int dstPort) {
    return FlowRegistration.newBuilder().setJobId(job).setReduceId(0).addMapIds(1)
        .setBytes(1_000_000).setSourceAddress(TEST_NET + host).setSourcePort(13562)
        .setDestinationAddress(TEST_NET + 200).setDestinationPort(dstPort)
        .setDestinationHost("reducer-1");
  }

  public static FlowTuple tuple(FlowRegistration r) {
    return FlowTuple.of(r.getSourceAddress(), r.getSourcePort(), r.getDestinationAddress(),
        r.getDestinationPort());
  }

  /** Deletes every kernel entry on a TEST-NET or loopback tuple of the given port. */
  public static void deleteTestEntries(int loopbackPort) throws KernelException {
    DatcpKernel k = DatcpKernel.attach(KernelLock.library());
    for (FlowTuple t : k.flows().keySet()) {
      if (t.source().startsWith(TEST_NET) || t.srcPort() == loopbackPort) {
        k.deleteFlow(t);
      }
    }
  }
}
