package io.datcp.agent.failopen;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Something the agent depends on at run time (the scheduler, the kernel) that may go away. The
 * agent degrades instead of failing, and says so once per outage: one log line when it starts,
 * one when it ends, however many calls fail in between. A dependency that comes and goes (a
 * scheduler whose answers miss their deadline now and then on a busy host) is logged at most
 * once a minute: outages that begin within a minute of the last one logged are counted, and
 * the next line says how many.
 */
public final class Outage {
  private static final long QUIET_NANOS = TimeUnit.MINUTES.toNanos(1);

  private final Logger log;
  private final String what;
  private final String consequence;
  private final LongSupplier clock;
  private final AtomicLong downSinceNanos = new AtomicLong();
  private final AtomicLong outages = new AtomicLong();
  /** When the last outage that was logged began; 0 before the first. */
  private volatile long loggedAtNanos;
  private volatile boolean currentLogged;
  private final AtomicLong unlogged = new AtomicLong();

  /**
   * @param what the dependency, e.g. "scheduler at host:9090"
   * @param consequence what the agent does meanwhile, e.g. "flows get the default policy"
   */
  public Outage(Logger log, String what, String consequence) {
    this(log, what, consequence, System::nanoTime);
  }

  Outage(Logger log, String what, String consequence, LongSupplier clock) {
    this.log = log;
    this.what = what;
    this.consequence = consequence;
    this.clock = clock;
  }

  /** A call failed; returns true if this starts an outage (logged unless within the quiet). */
  public boolean down(String reason) {
    long now = clock.getAsLong() | 1; // never 0, the "up" marker
    if (!downSinceNanos.compareAndSet(0, now)) {
      return false;
    }
    outages.incrementAndGet();
    long last = loggedAtNanos;
    currentLogged = last == 0 || now - last >= QUIET_NANOS;
    if (!currentLogged) {
      unlogged.incrementAndGet();
      return true;
    }
    loggedAtNanos = now;
    long skipped = unlogged.getAndSet(0);
    log.log(Level.WARNING, "{0} unavailable ({1}); {2} until it is back{3}", new Object[] {what,
        reason, consequence, skipped == 0 ? ""
            : " (" + skipped + " outages since the last one logged, each within a minute of it)"});
    return true;
  }

  /** A call succeeded; logs only if this ends an outage whose start was logged. */
  public void up() {
    long since = downSinceNanos.getAndSet(0);
    if (since != 0 && currentLogged) {
      log.log(Level.INFO, "{0} is back after {1} ms",
          new Object[] {what, String.valueOf((clock.getAsLong() - since) / 1_000_000)});
    }
  }

  public boolean isDown() {
    return downSinceNanos.get() != 0;
  }

  /** Outages since start, logged or not. */
  public long count() {
    return outages.get();
  }
}
