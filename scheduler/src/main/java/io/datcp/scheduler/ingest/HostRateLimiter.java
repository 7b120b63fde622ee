package io.datcp.scheduler.ingest;

import io.datcp.scheduler.common.HostBuckets;
import java.util.function.LongSupplier;

/**
 * A token bucket per reporting host, so one misbehaving host (a plugin or agent stuck in a
 * report loop) is refused without slowing anyone else. Hosts are identified by the name they
 * report under; the limit guards against faults, not against hosts lying about their name.
 */
public final class HostRateLimiter {
  private final HostBuckets buckets;

  /**
   * @param ratePerSecond sustained requests per second per host
   * @param burst requests a host may send at once after being idle
   * @param nanoTime monotonic clock, nanoseconds
   */
  public HostRateLimiter(double ratePerSecond, int burst, LongSupplier nanoTime) {
    this.buckets = new HostBuckets(ratePerSecond, burst, nanoTime);
  }

  /** Takes one token from {@code host}'s bucket; false when it is empty. */
  public boolean tryAcquire(String host) {
    return buckets.tryTake(host, 1);
  }
}
