package io.datcp.agent.scheduler;

import io.datcp.proto.v1.ShuffleEvent;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/**
 * What a scheduler that lost its job state must hear again of the map side on this host to plan
 * a running job: the partition sizes of each map output the shuffle service indexed here
 * (MapOutputIndexed, reported once per output) and the job's containers running here
 * (ContainersRunning, its latest count). {@link RunningReduces} makes a new leader know the job;
 * without the sizes it knows no bytes of it ("no bytes of this job known ... yet") and its flows
 * get no deadline until the job ends. Both are state, not increments: the scheduler keeps the
 * first index of a map (a second changes nothing) and the latest count of a host, so applying
 * them again on a scheduler that did not lose them is harmless.
 *
 * <p>Kept per job until it ends here (JobFinished forwarded, or the scheduler's job_finished)
 * or until nothing of it was heard on this host for {@link #IDLE_NANOS}: the shuffle service
 * hears of no job's end, and a job whose end reached no agent here would otherwise be sent again
 * after every outage until pushed out. Bounded in partition sizes, the unit the scheduler counts
 * (jobs.maxShuffleEntriesPerHost): beyond {@link #MAX_SIZES_PER_JOB} the job's oldest map output
 * goes, beyond {@link #MAX_SIZES} the job heard from least recently; the first drop is logged.
 */
final class MapSideState {
  private static final Logger LOG = Logger.getLogger(MapSideState.class.getName());
  /** Partition sizes kept over all jobs: the scheduler's default jobs.maxShuffleEntriesPerHost. */
  static final long MAX_SIZES = 500_000;
  /** Partition sizes kept per job (a job of 1,000 maps here and 250 reduces), half of all. */
  static final long MAX_SIZES_PER_JOB = 250_000;
  /** A job with nothing heard of it here for this long is forgotten: the scheduler's default
   *  jobs.idleTimeoutSeconds (an hour), after which it forgets a job without reports too. */
  static final long IDLE_NANOS = 3_600_000_000_000L;

  /** One job's map-side state on this host. */
  private static final class JobState {
    /** map id -> its MapOutputIndexed, oldest first; a newer index of a map replaces it. */
    final LinkedHashMap<Integer, ShuffleEvent> indexed = new LinkedHashMap<>();
    ShuffleEvent containers;
    long sizes;
    long heardNanos;
  }

  private final LongSupplier nanoTime;
  /** job id -> state, job heard from least recently first. */
  private final LinkedHashMap<String, JobState> jobs = new LinkedHashMap<>(16, 0.75f, true);
  private long sizes;
  private long dropped;
  private boolean dropLogged;

  MapSideState() {
    this(System::nanoTime);
  }

  MapSideState(LongSupplier nanoTime) {
    this.nanoTime = nanoTime;
  }

  /** Takes note of forwarded events. */
  synchronized void record(List<ShuffleEvent> batch) {
    long now = nanoTime.getAsLong();
    expire(now);
    for (ShuffleEvent e : batch) {
      switch (e.getEventCase()) {
        case MAP_OUTPUT_INDEXED -> {
          var m = e.getMapOutputIndexed();
          JobState job = heard(m.getJobId(), now);
          ShuffleEvent before = job.indexed.remove(m.getMapId());
          if (before != null) {
            resize(job, -before.getMapOutputIndexed().getPartitionBytesCount());
          }
          job.indexed.put(m.getMapId(), e);
          resize(job, m.getPartitionBytesCount());
          while (job.sizes > MAX_SIZES_PER_JOB && job.indexed.size() > 1) {
            dropOldestOutput(job, "per job");
          }
        }
        case CONTAINERS_RUNNING -> heard(e.getContainersRunning().getJobId(), now).containers = e;
        case JOB_FINISHED -> dropJob(e.getJobFinished().getJobId());
        default -> { }
      }
    }
    Iterator<JobState> oldest = jobs.values().iterator();
    while (sizes > MAX_SIZES && oldest.hasNext()) {
      JobState job = oldest.next();
      dropped += job.indexed.size();
      sizes -= job.sizes;
      oldest.remove();
      logDrop("over all jobs");
    }
  }

  private JobState heard(String jobId, long now) {
    JobState job = jobs.computeIfAbsent(jobId, k -> new JobState());
    job.heardNanos = now;
    return job;
  }

  private void resize(JobState job, long delta) {
    job.sizes += delta;
    sizes += delta;
  }

  private void dropOldestOutput(JobState job, String cap) {
    Iterator<ShuffleEvent> it = job.indexed.values().iterator();
    resize(job, -it.next().getMapOutputIndexed().getPartitionBytesCount());
    it.remove();
    dropped++;
    logDrop(cap);
  }

  private void logDrop(String cap) {
    if (!dropLogged) {
      dropLogged = true;
      LOG.warning("map output indexes to send again after an outage passed their cap " + cap
          + " (" + MAX_SIZES_PER_JOB + " partition sizes per job, " + MAX_SIZES + " over all);"
          + " the oldest are dropped: after a failover the scheduler estimates their sizes."
          + " Further drops are only counted (datcp_agent_reports_resend_dropped_total)");
    }
  }

  /** Forgets the jobs nothing was heard of for {@link #IDLE_NANOS}; oldest come first. */
  private void expire(long now) {
    Iterator<JobState> oldest = jobs.values().iterator();
    while (oldest.hasNext()) {
      JobState job = oldest.next();
      if (now - job.heardNanos <= IDLE_NANOS) {
        return;
      }
      sizes -= job.sizes;
      oldest.remove();
    }
  }

  /** Forgets {@code jobId}. */
  synchronized void dropJob(String jobId) {
    JobState job = jobs.remove(jobId);
    if (job != null) {
      sizes -= job.sizes;
    }
  }

  /** The events to send again: each job's indexes, then its latest container count. */
  synchronized List<ShuffleEvent> events() {
    expire(nanoTime.getAsLong());
    List<ShuffleEvent> all = new ArrayList<>();
    for (JobState job : jobs.values()) {
      all.addAll(job.indexed.values());
      if (job.containers != null) {
        all.add(job.containers);
      }
    }
    return all;
  }

  /** Map outputs dropped past a cap so far. */
  synchronized long dropped() {
    return dropped;
  }
}
