package io.datcp.agent.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The extension holds the machine-wide lock while a class's tests run, and a nested class runs
 * within its enclosing class's hold instead of waiting for it.
 */
@ExtendWith(KernelLockExtension.class)
class KernelLockExtensionTest {
  /** Whether another process (flock(1), non-blocking) finds the kernel lock taken. */
  static boolean heldElsewhere() throws Exception {
    Process p = new ProcessBuilder("flock", "-n", "/tmp/datcp-kernel.lock", "true")
        .redirectErrorStream(true).start();
    assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
    return p.exitValue() != 0;
  }

  @Test
  void theLockIsHeldWhileTheClassRuns() throws Exception {
    assertThat(heldElsewhere()).isTrue();
  }

  @Nested
  class Inner {
    @Test
    void aNestedClassRunsUnderItsEnclosingClassesHold() throws Exception {
      assertThat(heldElsewhere()).isTrue();
    }
  }
}
