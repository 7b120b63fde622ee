package io.datcp.scheduler.ingest;

import io.datcp.scheduler.common.LimitReachedException;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Remembers which (reporter, batch id) pairs were applied, so a retried batch is acknowledged
 * without being applied twice. Memory is bounded: per reporter the highest batch id up to which
 * every batch was seen plus a window of {@link #WINDOW} ids above it; a batch id beyond the
 * window slides it (ids left behind count as seen); reporters idle for longer than the idle
 * time, or beyond {@link #MAX_REPORTERS}, are forgotten. A reporter is remembered per host
 * (host and reporter id): one host may have at most reports.maxReportersPerHost remembered, so
 * a host cycling through made-up reporter ids cannot push other hosts' reporters out (their
 * retried batches would be applied twice). Thread-safe.
 */
public final class BatchDedup {
  /** Batch ids tracked above the contiguous prefix, per reporter. */
  public static final int WINDOW = 1024;
  /** Reporters remembered at once; the least recently heard are forgotten first. */
  public static final int MAX_REPORTERS = 100_000;

  private static final class Seen {
    final String host;
    long contiguous;
    /** Bit i: batch contiguous + 1 + i was seen. */
    BitSet above = new BitSet();
    long lastNanos;

    Seen(String host) {
      this.host = host;
    }
  }

  private final long idleNanos;
  private final int maxPerHost;
  private final Map<String, Seen> reporters = new LinkedHashMap<>(16, 0.75f, true);
  private final Map<String, Integer> perHost = new HashMap<>();

  /**
   * @param idleNanos reports.dedupIdleSeconds
   * @param maxPerHost reports.maxReportersPerHost
   */
  public BatchDedup(long idleNanos, int maxPerHost) {
    this.idleNanos = idleNanos;
    this.maxPerHost = maxPerHost;
  }

  /**
   * True when batch {@code batchId} of {@code reporter} is new, and records it as applied; false
   * for a duplicate. Callers check everything else first: a recorded batch is never re-applied.
   */
  public synchronized boolean firstTime(String host, String reporterId, long batchId,
      long nowNanos) {
    forgetIdle(nowNanos);
    String reporter = host + "\n" + reporterId;
    Seen s = reporters.get(reporter);
    if (s == null) {
      int known = perHost.getOrDefault(host, 0);
      if (known >= maxPerHost) {
        throw new LimitReachedException("reports.maxReportersPerHost", maxPerHost,
            "reporter ids of " + host + " are remembered; reporter_id '" + reporterId
                + "' refused until one is idle for reports.dedupIdleSeconds");
      }
      perHost.put(host, known + 1);
      s = new Seen(host);
      reporters.put(reporter, s);
    }
    s.lastNanos = nowNanos;
    if (batchId <= s.contiguous) {
      return false;
    }
    long offset = batchId - s.contiguous - 1;
    if (offset >= WINDOW) {
      long shift = offset - WINDOW + 1;
      s.above = shift >= s.above.length() ? new BitSet()
          : s.above.get((int) shift, Math.max((int) shift, s.above.length()));
      s.contiguous += shift;
      offset = WINDOW - 1;
    }
    if (s.above.get((int) offset)) {
      return false;
    }
    s.above.set((int) offset);
    int run = s.above.nextClearBit(0);
    if (run > 0) {
      s.above = s.above.get(run, Math.max(run, s.above.length()));
      s.contiguous += run;
    }
    return true;
  }

  /** Reporters currently remembered. */
  public synchronized int size() {
    return reporters.size();
  }

  private void forgetIdle(long nowNanos) {
    Iterator<Seen> eldest = reporters.values().iterator();
    while (eldest.hasNext()) {
      Seen s = eldest.next();
      if (reporters.size() <= MAX_REPORTERS && nowNanos - s.lastNanos <= idleNanos) {
        break;
      }
      eldest.remove();
      perHost.computeIfPresent(s.host, (h, n) -> n <= 1 ? null : n - 1);
    }
  }
}
