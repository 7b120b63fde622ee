package io.datcp.scheduler.bench;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The load benchmark's job start slots at a set rate: each job takes the next slot; a job whose
 * slot has passed starts at once and its lateness is the benchmark's own lag.
 */
final class JobSlots {
  private final long intervalNanos;
  private final AtomicLong next;
  /** Longest a job started after its slot while measuring: all workers were busy. */
  private final AtomicLong lagNanos = new AtomicLong();
  /** Lag is counted for slots from here on (System.nanoTime). */
  private volatile long measureFrom = Long.MAX_VALUE;

  JobSlots(double jobsPerSecond, long now) {
    intervalNanos = (long) (1e9 / jobsPerSecond);
    next = new AtomicLong(now);
  }

  /** Nanoseconds from {@code now} until the next job's slot; 0 when it is late. */
  long delay(long now) {
    long slot = next.getAndAdd(intervalNanos);
    long wait = slot - now;
    if (wait <= 0 && slot >= measureFrom) {
      lagNanos.accumulateAndGet(-wait, Math::max);
    }
    return Math.max(0, wait);
  }

  /**
   * Starts measuring at {@code now}. The slots start over from now if the warm-up fell behind
   * them (10,000 update streams opening, a cold JIT): those jobs are not owed, or their catch-up
   * would be measured. Only forward: slots handed out ahead of now (up to one per worker, waiting
   * on the timer) are kept, or the window's first second would start jobs twice over.
   */
  void measureFrom(long now) {
    measureFrom = now;
    next.accumulateAndGet(now, Math::max);
  }

  long lagNanos() {
    return lagNanos.get();
  }
}
