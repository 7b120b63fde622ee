package io.datcp.agent.scheduler;

import java.util.concurrent.ThreadLocalRandom;

/** Exponential back-off with jitter between reconnects. */
public final class Backoff {
  private final long minMillis;
  private final long maxMillis;
  private long next;

  public Backoff(long minMillis, long maxMillis) {
    this.minMillis = minMillis;
    this.maxMillis = maxMillis;
    this.next = minMillis;
  }

  /** The delay before the next try: doubles up to the maximum, +-20% jitter. */
  public long nextDelayMillis() {
    long d = next;
    next = Math.min(maxMillis, next * 2);
    return Math.max(1, (long) (d * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble())));
  }

  public void reset() {
    next = minMillis;
  }
}
