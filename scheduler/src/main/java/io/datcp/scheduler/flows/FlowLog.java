package io.datcp.scheduler.flows;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Flow outcomes per job for the dashboard: a bounded window of recent flows plus exact met/total
 * counts. Outcomes that name their {@link FlowKey} are kept by it: a second outcome of the same
 * flow replaces the first instead of counting twice. The scheduler adds outcomes of known jobs
 * only and forgets jobs that leave its history, so memory stays bounded. Thread-safe.
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
  private final Map<String, LinkedHashMap<Object, FlowOutcome>> byJob = new HashMap<>();
  private long sequence;
  private final Map<String, long[]> tallies = new HashMap<>();
  private long met;
  private long total;

  public FlowLog(int retainPerJob) {
    this.retainPerJob = retainPerJob;
  }

  public synchronized void add(FlowOutcome o) {
    LinkedHashMap<Object, FlowOutcome> q = byJob.computeIfAbsent(o.jobId(),
        j -> new LinkedHashMap<>());
    long[] t = tallies.computeIfAbsent(o.jobId(), j -> new long[2]);
    FlowOutcome before = q.remove(o.flow() != null ? o.flow() : (Object) (++sequence));
    if (before != null) {
      t[1]--;
      total--;
      if (before.met()) {
        t[0]--;
        met--;
      }
    }
    q.put(o.flow() != null ? o.flow() : (Object) sequence, o);
    if (q.size() > retainPerJob) {
      Iterator<Object> oldest = q.keySet().iterator();
      oldest.next();
      oldest.remove();
    }
    t[1]++;
    total++;
    if (o.met()) {
      t[0]++;
      met++;
    }
  }

  /** The most recent {@code limit} flows of a job, oldest first. */
  public synchronized List<FlowOutcome> flows(String jobId, int limit) {
    LinkedHashMap<Object, FlowOutcome> q = byJob.get(jobId);
    if (q == null) {
      return List.of();
    }
    List<FlowOutcome> all = new ArrayList<>(q.values());
    return Collections.unmodifiableList(all.subList(Math.max(0, all.size() - limit), all.size()));
  }

  /** The most recent {@code limit} flows over all jobs, in no particular order across jobs. */
  public synchronized List<FlowOutcome> recent(int limit) {
    List<FlowOutcome> all = new ArrayList<>();
    for (LinkedHashMap<Object, FlowOutcome> q : byJob.values()) {
      all.addAll(q.values());
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
