package io.datcp.scheduler.ingest;

import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobRegistry;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Authorization of a report batch: what an authenticated host may say about which jobs. Today
 * the host checks of the node credentials (a reduce's events come from the reduce's host);
 * the place where checks against YARN (is this container this job's?) go next.
 */
final class Authorization {
  private final JobRegistry registry;

  Authorization(JobRegistry registry) {
    this.registry = registry;
  }

  /**
   * Refuses the whole batch when {@code host} may not send one of its events; the caller holds
   * the locks of every job the batch names.
   */
  void check(List<JobEvent> events, String host) {
    Set<String> started = new HashSet<>();
    events.forEach(e -> authorize(e, host, started));
  }

  /**
   * Refuses an event an authenticated {@code host} may not send: a reduce's events must come
   * from the host it runs on (or is started on, earlier in the same batch), a job's end from a
   * host running one of its reduces, map-side events from the map's own host.
   * {@code startedInBatch} collects job/reduce pairs started earlier in the batch.
   */
  void authorize(JobEvent event, String host, Set<String> startedInBatch) {
    if (event instanceof JobEvent.ReduceStarted e) {
      permit(e.host().equals(host), "ReduceStarted.host " + e.host());
      Job job = registry.running(e.jobId());
      Job.Reduce r = job == null ? null : job.reduce(e.reduceId());
      permit(r == null || r.host().equals(host), "reduce " + e.reduceId() + " of "
          + e.jobId() + ", which runs on another host");
      startedInBatch.add(e.jobId() + "/" + e.reduceId());
      return;
    }
    if (event instanceof JobEvent.MapOutputIndexed e) {
      permit(e.host().equals(host), "MapOutputIndexed.host " + e.host());
      return;
    }
    if (event instanceof JobEvent.ContainersRunning e) {
      permit(e.host().equals(host), "ContainersRunning.host " + e.host());
      return;
    }
    Job job = registry.running(event.jobId());
    if (job == null) {
      return;
    }
    if (event instanceof JobEvent.JobFinished) {
      permit(job.hasReduceOn(host) || batchStartedAny(startedInBatch, event.jobId()),
          "the end of job " + event.jobId() + ", which runs no reduce on it");
      return;
    }
    int reduceId = reduceOf(event);
    Job.Reduce r = job.reduce(reduceId);
    permit(r == null ? startedInBatch.contains(event.jobId() + "/" + reduceId)
        : r.host().equals(host), "reduce " + reduceId + " of " + event.jobId()
        + ", which does not run on it");
  }

  private static boolean batchStartedAny(Set<String> startedInBatch, String jobId) {
    return startedInBatch.stream().anyMatch(k -> k.startsWith(jobId + "/"));
  }

  private static int reduceOf(JobEvent event) {
    if (event instanceof JobEvent.MapCompleted e) {
      return e.reduceId();
    } else if (event instanceof JobEvent.FetchStarted e) {
      return e.reduceId();
    } else if (event instanceof JobEvent.FetchFinished e) {
      return e.reduceId();
    } else if (event instanceof JobEvent.ShuffleFinished e) {
      return e.reduceId();
    }
    throw new IllegalArgumentException(event.getClass().getSimpleName());
  }

  private static void permit(boolean ok, String what) {
    if (!ok) {
      throw new NotPermittedException("the reporting host may not report " + what);
    }
  }
}
