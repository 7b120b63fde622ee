package io.datcp.scheduler.common;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * A token bucket per host, refilled at a rate up to a burst; a bucket may be taken into debt
 * ({@link #take}) or only while it holds enough ({@link #tryTake}). Buckets idle for a minute
 * are full again and are dropped once there are many hosts.
 */
public final class HostBuckets {
  private static final double NANOS_PER_SECOND = 1e9;
  /** Buckets idle this long are full again and can be dropped, nanoseconds. */
  private static final long IDLE_NANOS = 60_000_000_000L;
  /** Hosts with buckets before idle ones are dropped. */
  private static final int SWEEP_ABOVE = 100_000;

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

    /** Refills to now; call holding the bucket's monitor. */
    void refill(long now, double rate, double burst) {
      tokens = Math.min(burst, tokens + Math.max(0, now - last) / NANOS_PER_SECOND * rate);
      last = now;
    }
  }

  /**
   * @param ratePerSecond tokens added per second
   * @param burst the most a bucket holds (a new host's bucket starts full)
   * @param nanoTime monotonic clock, nanoseconds
   */
  public HostBuckets(double ratePerSecond, double burst, LongSupplier nanoTime) {
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.nanoTime = nanoTime;
  }

  /** Takes {@code n} tokens from {@code host}'s bucket when it holds them; false otherwise. */
  public boolean tryTake(String host, double n) {
    long now = nanoTime.getAsLong();
    Bucket b = bucket(host, now);
    synchronized (b) {
      b.refill(now, ratePerSecond, burst);
      if (b.tokens < n) {
        return false;
      }
      b.tokens -= n;
    }
    sweep(now);
    return true;
  }

  /** Takes {@code n} tokens from {@code host}'s bucket, into debt if need be. */
  public void take(String host, double n) {
    long now = nanoTime.getAsLong();
    Bucket b = bucket(host, now);
    synchronized (b) {
      b.refill(now, ratePerSecond, burst);
      b.tokens -= n;
    }
    sweep(now);
  }

  /** 0 when {@code host}'s bucket holds tokens now, else nanoseconds until it will (at least 1). */
  public long nanosUntilPositive(String host) {
    long now = nanoTime.getAsLong();
    Bucket b = bucket(host, now);
    synchronized (b) {
      b.refill(now, ratePerSecond, burst);
      return b.tokens > 0 ? 0 : 1 + (long) (-b.tokens / ratePerSecond * NANOS_PER_SECOND);
    }
  }

  private Bucket bucket(String host, long now) {
    return buckets.computeIfAbsent(host, h -> new Bucket(burst, now));
  }

  private void sweep(long now) {
    if (buckets.size() > SWEEP_ABOVE) {
      buckets.values().removeIf(o -> now - o.last > IDLE_NANOS);
    }
  }
}
