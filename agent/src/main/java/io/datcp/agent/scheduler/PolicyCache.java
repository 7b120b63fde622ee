package io.datcp.agent.scheduler;

import io.datcp.proto.v1.FlowPolicy;
import java.util.Collection;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The last policy the scheduler gave for each (job, reduce): what a new flow of that reduce
 * starts with, before its own lookup is answered. Updates keep the latest decision time.
 */
final class PolicyCache {
  /** Bound on cached reduces; beyond it the cache starts over (the scheduler refills it). */
  private static final int MAX_ENTRIES = 100_000;

  private record Key(String jobId, int reduceId) {}

  /** stored: the cache's store count when it was put (see {@link #mark}). */
  private record Entry(long timeUnixNanos, FlowPolicy policy, long stored) {}

  private final ConcurrentHashMap<Key, Entry> entries = new ConcurrentHashMap<>();
  private final AtomicLong stores = new AtomicLong();

  FlowPolicy get(String jobId, int reduceId) {
    Entry e = entries.get(new Key(jobId, reduceId));
    return e == null ? null : e.policy();
  }

  /** Keeps p unless a later decision is cached; returns whether p is now the latest. */
  boolean put(FlowPolicy p, long timeUnixNanos) {
    if (entries.size() >= MAX_ENTRIES) {
      entries.clear();
    }
    Key k = new Key(p.getJobId(), p.getReduceId());
    Entry next = new Entry(timeUnixNanos, p, stores.incrementAndGet());
    Entry now = entries.merge(k, next,
        (old, neu) -> neu.timeUnixNanos() >= old.timeUnixNanos() ? neu : old);
    return now == next;
  }

  /** The job finished: its reduces get no more flows. */
  void dropJob(String jobId) {
    entries.keySet().removeIf(k -> k.jobId().equals(jobId));
  }

  /** Where a resync begins: what is put after it is newer than the resync's snapshot. */
  long mark() {
    return stores.get();
  }

  /**
   * A resync's snapshot replaces what was cached before the resync began ({@code since}, from
   * {@link #mark}); answers cached while the snapshot was on its way stay, unless the snapshot
   * has a decision for the same reduce.
   */
  void replaceAll(Collection<FlowPolicy> policies, long timeUnixNanos, long since) {
    entries.values().removeIf(e -> e.stored() <= since);
    for (FlowPolicy p : policies) {
      put(p, timeUnixNanos);
    }
  }
}
