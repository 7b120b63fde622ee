package io.datcp.scheduler.flows;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Flow outcomes per job for the dashboard: a bounded window of recent flows plus exact met/total
 * counts. Thread-safe.
 */
public final class FlowLog {
  /** Met and total flows of one job (or of all jobs). */
  public record Tally(long met, long total) {
    /** Share of flows that met their deadline, or -1 when none ended yet. */
    public double metRatio() {
      return total == 0 ? -1 : (double) met / total;
    }
  }

  private final int retainPerJob;
  private final Map<String, Deque<FlowOutcome>> byJob = new HashMap<>();
  private final Map<String, long[]> tallies = new HashMap<>();
  private long met;
  private long total;

  public FlowLog(int retainPerJob) {
    this.retainPerJob = retainPerJob;
  }

  public synchronized void add(FlowOutcome o) {
    Deque<FlowOutcome> q = byJob.computeIfAbsent(o.jobId(), j -> new ArrayDeque<>());
    q.addLast(o);
    if (q.size() > retainPerJob) {
      q.removeFirst();
    }
    long[] t = tallies.computeIfAbsent(o.jobId(), j -> new long[2]);
    t[1]++;
    total++;
    if (o.met()) {
      t[0]++;
      met++;
    }
  }

  /** The most recent {@code limit} flows of a job, oldest first. */
  public synchronized List<FlowOutcome> flows(String jobId, int limit) {
    Deque<FlowOutcome> q = byJob.get(jobId);
    if (q == null) {
      return List.of();
    }
    List<FlowOutcome> all = new ArrayList<>(q);
    return Collections.unmodifiableList(all.subList(Math.max(0, all.size() - limit), all.size()));
  }

  /** The most recent {@code limit} flows over all jobs, in no particular order across jobs. */
  public synchronized List<FlowOutcome> recent(int limit) {
    List<FlowOutcome> all = new ArrayList<>();
    for (Deque<FlowOutcome> q : byJob.values()) {
      all.addAll(q);
    }
    all.sort((a, b) -> Long.compare(a.startUnixNanos(), b.startUnixNanos()));
    return List.copyOf(all.subList(Math.max(0, all.size() - limit), all.size()));
  }

  public synchronized Tally tally(String jobId) {
    long[] t = tallies.get(jobId);
    return t == null ? new Tally(0, 0) : new Tally(t[0], t[1]);
  }

  public synchronized Tally overall() {
    return new Tally(met, total);
  }

  /** Forgets a job that dropped out of the finished-jobs history. */
  public synchronized void forget(String jobId) {
    byJob.remove(jobId);
    tallies.remove(jobId);
  }
}
