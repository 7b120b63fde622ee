package io.datcp.scheduler.flows;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Flow outcomes per job for the dashboard: a bounded window of recent flows plus exact met/total
 * counts. Outcomes that name their {@link FlowKey} are kept by it: a second outcome of the same
 * flow replaces the first instead of counting twice. The scheduler adds outcomes of known jobs
 * only and forgets jobs that leave its history. Over all jobs it keeps at most {@code
 * retainTotal} units (flows.retainTotal), an outcome costing 1 plus the map ids its key names
 * (a key may name flows.maxMapIds of them, so counting outcomes alone would not bound memory):
 * beyond it a new outcome replaces its own job's oldest, or is only counted when its job has
 * too few kept, so agents flooding outcomes of jobs of their own cannot grow it, and the newest
 * flows of every job they did not flood stay. Thread-safe, with a
 * lock per job: agents' outcome reports run on the server's event loops, and one lock for the
 * whole log stalled them all whenever its holder was preempted.
 */
public final class FlowLog {
  /** Met and total flows of one job (or of all jobs). */
  public record Tally(long met, long total) {
    /** Share of flows that met their deadline, or -1 when none ended yet. */
    public double metRatio() {
      return total == 0 ? -1 : (double) met / total;
    }
  }

  /** One job's recent flows and counts; guarded by itself. */
  private static final class JobFlows {
    private final LinkedHashMap<Object, FlowOutcome> recent = new LinkedHashMap<>();
    private long sequence;
    private long met;
    private long total;
    /** Set by {@link #forget}: a concurrent add keeps nothing, so retained stays exact. */
    private boolean forgotten;
  }

  private final int retainPerJob;
  private final int retainTotal;
  /** Units kept over all jobs. */
  private final AtomicLong retained = new AtomicLong();
  private final Map<String, JobFlows> byJob = new ConcurrentHashMap<>();
  // Totals rise before met and met falls before totals, so a reader never sees met > total.
  private final LongAdder met = new LongAdder();
  private final LongAdder total = new LongAdder();

  /**
   * @param retainPerJob flows.retainPerJob
   * @param retainTotal flows.retainTotal
   */
  public FlowLog(int retainPerJob, int retainTotal) {
    this.retainPerJob = retainPerJob;
    this.retainTotal = retainTotal;
  }

  public void add(FlowOutcome o) {
    JobFlows j = byJob.computeIfAbsent(o.jobId(), id -> new JobFlows());
    synchronized (j) {
      if (j.forgotten) {
        return;
      }
      Object key = o.flow() != null ? o.flow() : (Object) (++j.sequence);
      FlowOutcome before = j.recent.remove(key);
      if (before != null) {
        if (before.met()) {
          j.met--;
          met.decrement();
        }
        j.total--;
        total.decrement();
      }
      if (before != null) {
        retained.addAndGet(-units(before));
      }
      long units = units(o);
      j.recent.put(key, o);
      if (retained.addAndGet(units) > retainTotal) {
        // the job's own oldest make room, the new one last of all
        while (retained.get() > retainTotal && !j.recent.isEmpty()) {
          dropOldest(j);
        }
      }
      if (j.recent.size() > retainPerJob) {
        dropOldest(j);
      }
      j.total++;
      total.increment();
      if (o.met()) {
        j.met++;
        met.increment();
      }
    }
  }

  /** Caller holds {@code j}'s monitor. */
  private void dropOldest(JobFlows j) {
    Iterator<FlowOutcome> oldest = j.recent.values().iterator();
    retained.addAndGet(-units(oldest.next()));
    oldest.remove();
  }

  private static long units(FlowOutcome o) {
    return 1 + (o.flow() == null ? 0 : o.flow().mapIds().size());
  }

  /** Units kept over all jobs (at most flows.retainTotal): 1 per outcome + 1 per map id. */
  public long retained() {
    return retained.get();
  }

  /** The most recent {@code limit} flows of a job, oldest first. */
  public List<FlowOutcome> flows(String jobId, int limit) {
    JobFlows j = byJob.get(jobId);
    if (j == null) {
      return List.of();
    }
    List<FlowOutcome> all;
    synchronized (j) {
      all = new ArrayList<>(j.recent.values());
    }
    return Collections.unmodifiableList(all.subList(Math.max(0, all.size() - limit), all.size()));
  }

  /** The most recent {@code limit} flows over all jobs, in no particular order across jobs. */
  public List<FlowOutcome> recent(int limit) {
    List<FlowOutcome> all = new ArrayList<>();
    for (JobFlows j : byJob.values()) {
      synchronized (j) {
        all.addAll(j.recent.values());
      }
    }
    all.sort((a, b) -> Long.compare(a.startUnixNanos(), b.startUnixNanos()));
    return List.copyOf(all.subList(Math.max(0, all.size() - limit), all.size()));
  }

  public Tally tally(String jobId) {
    JobFlows j = byJob.get(jobId);
    if (j == null) {
      return new Tally(0, 0);
    }
    synchronized (j) {
      return new Tally(j.met, j.total);
    }
  }

  /** Over all jobs ever added, including forgotten ones; may lag adds in progress. */
  public Tally overall() {
    long m = met.sum();
    return new Tally(m, total.sum());
  }

  /** Forgets a job that dropped out of the finished-jobs history. */
  public void forget(String jobId) {
    JobFlows j = byJob.remove(jobId);
    if (j != null) {
      synchronized (j) {
        j.forgotten = true;
        j.recent.values().forEach(o -> retained.addAndGet(-units(o)));
      }
    }
  }
}
