package io.datcp.agent.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.agent.testing.KernelLock;
import io.datcp.agent.testing.KernelLockExtension;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The agent's kernel entries are its network namespace's: a neighbour on the same kernel (a
 * process in another container's namespace, here datcpctl run there) that registers or
 * deletes the same 4-tuple neither changes nor ends the agent's entry, and the agent neither
 * lists nor acts on the neighbour's entries (root; holds the kernel lock).
 */
@ExtendWith(KernelLockExtension.class)
class NamespaceFlowKeyTest {
  private static final String NS = "datcpagt-nk" + ProcessHandle.current().pid();
  private static final String CTL = Path.of(KernelLock.library()).resolveSibling("datcpctl")
      .toString();

  @Test
  void aNeighbourNamespaceNeitherChangesNorEndsTheAgentsEntryOnTheSame4Tuple() throws Exception {
    DatcpKernel kernel = DatcpKernel.load(KernelLock.library(), "test", List.of(), 0, "").kernel();
    FlowTuple shared = FlowTuple.of("192.0.2.31", 13562, "192.0.2.32", 40031);
    FlowTuple neighbours = FlowTuple.of("192.0.2.33", 13562, "192.0.2.34", 40033);
    FlowMeta mine = new FlowMeta(1_000_000, 0, kernel.nowNs(), 1, 1.0, 0.0, FlowMeta.Mode.DATCP,
        FlowMeta.Quench.OFF, 0);
    sh("ip", "netns", "add", NS);
    try {
      kernel.setFlow(shared, mine);
      neighbour("set", shared, "--size", "5", "--mode", "reno", "--epoch", "9");
      neighbour("set", neighbours, "--size", "5");

      assertThat(kernel.flowMeta(shared)).as("the agent's entry after the neighbour's set")
          .contains(mine);
      assertThat(neighbour("delete", shared)).as("the neighbour deletes its own entry").isZero();
      assertThat(neighbour("delete", shared)).as("and then has none: ours is not its")
          .isEqualTo(1);
      assertThat(kernel.flowMeta(shared)).as("the agent's entry after the neighbour's deletes")
          .contains(mine);
      assertThat(kernel.flows()).as("the agent lists its namespace's entries only")
          .containsEntry(shared, mine).doesNotContainKey(neighbours);
      assertThat(kernel.flowMeta(neighbours)).as("nor reads the neighbour's").isEmpty();
      assertThat(kernel.deleteFlow(neighbours)).as("nor deletes it").isFalse();
      assertThat(neighbour("get", neighbours)).as("the neighbour's entry stays").isZero();
    } finally {
      kernel.deleteFlow(shared);
      neighbour("delete", neighbours);
      sh("ip", "netns", "del", NS);
    }
  }

  /** datcpctl flow SUB in the neighbour's namespace (nsenter: ip netns exec hides bpffs). */
  private static int neighbour(String sub, FlowTuple t, String... opts) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("nsenter", "--net=/var/run/netns/" + NS, CTL,
        "flow", sub, "--src", t.source(), "--dst", t.destination()));
    cmd.addAll(List.of(opts));
    return run(cmd);
  }

  private static void sh(String... cmd) throws Exception {
    assertThat(run(List.of(cmd))).as("%s", List.of(cmd)).isZero();
  }

  private static int run(List<String> cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    int rc = p.waitFor();
    if (rc != 0) {
      System.err.println(cmd + ": " + out.strip());
    }
    return rc;
  }
}
