package io.datcp.agent.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.agent.testing.KernelLock;
import io.datcp.agent.testing.KernelLockExtension;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The agent reads the event ring of its own network namespace (agents in containers on one
 * kernel used to take each other's events from the shared ring): opening registers a ring for
 * the namespace, a restarted agent's replaces it and the old one's close leaves that in place,
 * the last close unregisters it (root; holds the kernel lock).
 */
@ExtendWith(KernelLockExtension.class)
class NamespaceEventRingTest {
  @Test
  void openingRegistersTheNamespacesRingAndOnlyTheCurrentOwnerUnregistersIt() throws Exception {
    DatcpKernel kernel = DatcpKernel.load(KernelLock.library(), "test", List.of(), 0, "").kernel();
    int before = rings();
    Kernel.Events first = kernel.openEvents(e -> {});
    assertThat(rings()).as("rings after the first agent opens").isEqualTo(before + 1);
    Kernel.Events second = kernel.openEvents(e -> {});
    assertThat(rings()).as("a second agent replaces the namespace's ring").isEqualTo(before + 1);
    first.close();
    assertThat(rings()).as("the replaced agent's close keeps the new ring").isEqualTo(before + 1);
    second.close();
    assertThat(rings()).as("the last close unregisters the ring").isEqualTo(before);
  }

  private static int rings() throws KernelException {
    Abi.Status st = new Abi.Status();
    int rc = LibDatcp.datcp_get_status(st);
    if (rc != 0) {
      throw new KernelException(rc, LibDatcp.datcp_last_error());
    }
    return st.netns_event_rings;
  }
}
