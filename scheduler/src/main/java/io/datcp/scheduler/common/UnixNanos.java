package io.datcp.scheduler.common;

import java.time.Clock;
import java.time.Instant;

/** Wall-clock time as the protocol carries it: nanoseconds since the Unix epoch. */
public final class UnixNanos {
  private UnixNanos() {}

  public static long now(Clock clock) {
    Instant i = clock.instant();
    return i.getEpochSecond() * 1_000_000_000L + i.getNano();
  }
}
