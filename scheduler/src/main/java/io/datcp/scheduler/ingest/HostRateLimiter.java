package io.datcp.scheduler.ingest;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * A token bucket per reporting host, so one misbehaving host (a plugin or agent stuck in a
 * report loop) is refused without slowing anyone else. Hosts are identified by the name they
 * report under; the limit guards against faults, not against hosts lying about their name.
 */
public final class HostRateLimiter {
  private static final double NANOS_PER_SECOND = 1e9;
  /** Buckets idle this long are full again and can be dropped, nanoseconds. */
  private static final long IDLE_NANOS = 60_000_000_000L;

  private final double ratePerSecond;
  private final double burst;
  private final LongSupplier nanoTime;
  private final ConcurrentHashMap<String, Bucket> buckets = new ConcurrentHashMap<>();

  private static final class Bucket {
    double tokens;
    long last;

    Bucket(double tokens, long last) {
      this.tokens = tokens;
      this.last = last;
    }
  }

  /**
   * @param ratePerSecond sustained requests per second per host
   * @param burst requests a host may send at once after being idle
   * @param nanoTime monotonic clock, nanoseconds
   */
  public HostRateLimiter(double ratePerSecond, int burst, LongSupplier nanoTime) {
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.nanoTime = nanoTime;
  }

  /** Takes one token from {@code host}'s bucket; false when it is empty. */
  public boolean tryAcquire(String host) {
    long now = nanoTime.getAsLong();
    Bucket b = buckets.computeIfAbsent(host, h -> new Bucket(burst, now));
    synchronized (b) {
      b.tokens = Math.min(burst, b.tokens + (now - b.last) / NANOS_PER_SECOND * ratePerSecond);
      b.last = now;
      if (b.tokens < 1) {
        return false;
      }
      b.tokens -= 1;
    }
    if (buckets.size() > 100_000) {
      buckets.values().removeIf(o -> now - o.last > IDLE_NANOS);
    }
    return true;
  }
}
