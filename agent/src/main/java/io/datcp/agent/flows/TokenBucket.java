package io.datcp.agent.flows;

import java.util.function.LongSupplier;

/** A token bucket: the flood guard of RegisterFlow. */
final class TokenBucket {
  private final double perNano;
  private final double burst;
  private final LongSupplier nanoTime;
  private double tokens;
  private long last;

  /**
   * @param ratePerSecond sustained calls per second
   * @param burst calls accepted at once after an idle time
   */
  TokenBucket(double ratePerSecond, int burst, LongSupplier nanoTime) {
    this.perNano = ratePerSecond / 1e9;
    this.burst = burst;
    this.nanoTime = nanoTime;
    this.tokens = burst;
    this.last = nanoTime.getAsLong();
  }

  /** Takes one token; false when the bucket is empty. */
  synchronized boolean tryAcquire() {
    long now = nanoTime.getAsLong();
    tokens = Math.min(burst, tokens + (now - last) * perNano);
    last = now;
    if (tokens < 1) {
      return false;
    }
    tokens -= 1;
    return true;
  }
}
