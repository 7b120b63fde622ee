package io.datcp.agent.failopen;

import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Something the agent depends on at run time (the scheduler, the kernel) that may go away. The
 * agent degrades instead of failing, and says so once per outage: one log line when it starts,
 * one when it ends, however many calls fail in between.
 */
public final class Outage {
  private final Logger log;
  private final String what;
  private final String consequence;
  private final AtomicLong downSinceNanos = new AtomicLong();
  private final AtomicLong outages = new AtomicLong();

  /**
   * @param what the dependency, e.g. "scheduler at host:9090"
   * @param consequence what the agent does meanwhile, e.g. "flows get the default policy"
   */
  public Outage(Logger log, String what, String consequence) {
    this.log = log;
    this.what = what;
    this.consequence = consequence;
  }

  /** A call failed; logs only if this starts an outage. Returns true if it did. */
  public boolean down(String reason) {
    long now = System.nanoTime() | 1; // never 0, the "up" marker
    if (downSinceNanos.compareAndSet(0, now)) {
      outages.incrementAndGet();
      log.log(Level.WARNING, "{0} unavailable ({1}); {2} until it is back",
          new Object[] {what, reason, consequence});
      return true;
    }
    return false;
  }

  /** A call succeeded; logs only if this ends an outage. */
  public void up() {
    long since = downSinceNanos.getAndSet(0);
    if (since != 0) {
      log.log(Level.INFO, "{0} is back after {1} ms",
          new Object[] {what, (System.nanoTime() - since) / 1_000_000});
    }
  }

  public boolean isDown() {
    return downSinceNanos.get() != 0;
  }

  /** Outages since start. */
  public long count() {
    return outages.get();
  }
}
