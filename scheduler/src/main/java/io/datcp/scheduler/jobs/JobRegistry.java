package io.datcp.scheduler.jobs;

import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.policy.PolicyDecision;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The live job model: running jobs by id plus a bounded history of finished ones. Not
 * thread-safe; {@link io.datcp.scheduler.SchedulerService} serialises access.
 */
public final class JobRegistry {
  private final Map<String, Job> running = new HashMap<>();
  private final LinkedHashMap<String, Job> finished = new LinkedHashMap<>();
  private final Map<String, List<Job>> shufflingByHost = new HashMap<>();
  private final int retainFinished;
  private final List<String> evicted = new ArrayList<>();

  public JobRegistry(int retainFinished) {
    this.retainFinished = retainFinished;
  }

  /**
   * Applies one event and adds the reducer hosts whose flows it may re-plan to {@code touched}.
   * Events for jobs the registry never saw start (a lost ReduceStarted) are ignored: the job's
   * flows then run without deadlines, which is the fail-open default. Returns the job, or null.
   */
  public Job apply(JobEvent event, Set<String> touched) {
    if (event instanceof JobEvent.ReduceStarted e) {
      Job job = running.computeIfAbsent(e.jobId(), id -> new Job(id, e.conf(), e.totalMaps(),
          e.totalReduces(),
          e.jobSubmitTimeUnixNanos() > 0 ? e.jobSubmitTimeUnixNanos() : e.timeUnixNanos()));
      if (job.reduce(e.reduceId()) == null) {
        job.reduceStarted(e.reduceId(), e.host(), e.timeUnixNanos());
        shufflingByHost.computeIfAbsent(e.host(), h -> new ArrayList<>()).add(job);
      }
      touched.add(e.host());
      return job;
    }
    Job job = running.get(event.jobId());
    if (job == null) {
      return null;
    }
    if (event instanceof JobEvent.MapCompleted e) {
      job.mapCompleted(e.reduceId(), e.mapId(), e.host(), e.runTimeNanos(), e.outputBytes(),
          e.mapsRunning(), e.timeUnixNanos());
      touchAll(job, touched);
    } else if (event instanceof JobEvent.FetchStarted e) {
      touch(job, e.reduceId(), touched);
    } else if (event instanceof JobEvent.FetchFinished e) {
      job.fetchFinished(e.reduceId(), e.mapIds(), e.bytes());
      touch(job, e.reduceId(), touched);
    } else if (event instanceof JobEvent.ShuffleFinished e) {
      touch(job, e.reduceId(), touched);
      Job.Reduce r = job.reduce(e.reduceId());
      job.shuffleFinished(e.reduceId(), e.timeUnixNanos());
      if (r != null && job.shufflingOn(r.host()).isEmpty()) {
        unindex(job, r.host());
      }
    } else if (event instanceof JobEvent.JobFinished e) {
      Set<String> hosts = new HashSet<>();
      touchAll(job, hosts);
      touched.addAll(hosts);
      job.finish(e.succeeded(), e.timeUnixNanos());
      hosts.forEach(h -> unindex(job, h));
      running.remove(job.id());
      finished.put(job.id(), job);
      trimFinished();
    }
    return job;
  }

  public Job running(String jobId) {
    return running.get(jobId);
  }

  /** A running or retained finished job. */
  public Job find(String jobId) {
    Job j = running.get(jobId);
    return j != null ? j : finished.get(jobId);
  }

  /** Running jobs with a reduce still shuffling on {@code host}. */
  public List<Job> shufflingOn(String host) {
    return shufflingByHost.getOrDefault(host, List.of());
  }

  public Collection<Job> runningJobs() {
    return running.values();
  }

  public Collection<Job> finishedJobs() {
    return finished.values();
  }

  /** The operator's decision for the job, cached until the rules change. */
  public static PolicyDecision decision(Job job, PolicyBook book) {
    long version = book.version();
    PolicyDecision d = job.cachedDecision(version);
    if (d == null) {
      d = book.decide(job.conf());
      job.cacheDecision(d, version);
    }
    return d;
  }

  /** Records a flow size seen in a lookup (estimate for outputs reported without sizes). */
  public static void sawLookup(Job job, long bytes) {
    job.sawLookup(bytes);
  }

  private void touch(Job job, int reduceId, Set<String> touched) {
    Job.Reduce r = job.reduce(reduceId);
    if (r != null) {
      touched.add(r.host());
    }
  }

  private void touchAll(Job job, Set<String> touched) {
    for (Job.Reduce r : job.reduces()) {
      if (r.shuffling()) {
        touched.add(r.host());
      }
    }
  }

  private void unindex(Job job, String host) {
    List<Job> jobs = shufflingByHost.get(host);
    if (jobs != null) {
      jobs.remove(job);
      if (jobs.isEmpty()) {
        shufflingByHost.remove(host);
      }
    }
  }

  private void trimFinished() {
    Iterator<String> oldest = finished.keySet().iterator();
    while (finished.size() > retainFinished && oldest.hasNext()) {
      evicted.add(oldest.next());
      oldest.remove();
    }
  }

  /** Ids of finished jobs dropped from the history since the last call. */
  public List<String> drainEvicted() {
    List<String> out = List.copyOf(evicted);
    evicted.clear();
    return out;
  }
}
