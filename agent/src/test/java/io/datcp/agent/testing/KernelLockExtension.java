package io.datcp.agent.testing;

import java.io.IOException;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Holds the kernel lock ({@link KernelLock}) for a whole test class: taken before the class's
 * {@code @BeforeAll} methods and released after its {@code @AfterAll} methods, so that the
 * class's own set-up and tear-down of kernel state run under it too. Releasing unloads datcp
 * unless flows or switch ports of someone else remain. Use as
 * {@code @ExtendWith(KernelLockExtension.class)} on every test class that loads datcp, writes
 * its maps or configures switch ports.
 */
public final class KernelLockExtension implements BeforeAllCallback, AfterAllCallback {
  private static final ExtensionContext.Namespace NAMESPACE =
      ExtensionContext.Namespace.create(KernelLockExtension.class);

  @Override
  public void beforeAll(ExtensionContext context) throws IOException {
    ExtensionContext.Store store = context.getStore(NAMESPACE);
    // A nested class runs within its enclosing class's hold (the lookup sees the enclosing
    // context's store); a second flock(2) from this process would wait for the first forever.
    if (store.get(KernelLock.class, KernelLock.class) == null) {
      store.put(KernelLock.class, KernelLock.acquire());
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    // remove() sees only this context's store: a nested class leaves its enclosing class's hold
    KernelLock held = context.getStore(NAMESPACE).remove(KernelLock.class, KernelLock.class);
    if (held != null) {
      held.close();
    }
  }
}
