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
   * Refuses each event {@code host} may not send: marks it in {@code refused} and adds why to
   * {@code out}. Events already marked (invalid) are skipped, so they start nothing. The caller
   * holds the locks of every job the batch names.
   */
  void check(List<JobEvent> events, String host, boolean[] refused, List<Refused> out) {
    Set<String> started = new HashSet<>();
    for (int i = 0; i < events.size(); i++) {
      if (refused[i]) {
        continue;
      }
      String what = notPermitted(events.get(i), host, started);
      if (what != null) {
        refused[i] = true;
        out.add(new Refused(i, Refused.Reason.NOT_PERMITTED,
            "the reporting host may not report " + what));
      }
    }
  }

  /**
   * What of {@code event} an authenticated {@code host} may not send, or null when it may: a
   * reduce's events must come from the host it runs on (or is started on, earlier in the same
   * batch), a job's end from a host running one of its reduces, map-side events from the map's
   * own host. {@code startedInBatch} collects the job/reduce pairs started by permitted
   * ReduceStarted events earlier in the batch.
   */
  String notPermitted(JobEvent event, String host, Set<String> startedInBatch) {
    if (event instanceof JobEvent.ReduceStarted e) {
      if (!e.host().equals(host)) {
        return "ReduceStarted.host " + e.host();
      }
      Job job = registry.running(e.jobId());
      Job.Reduce r = job == null ? null : job.reduce(e.reduceId());
      if (r != null && !r.host().equals(host)) {
        return "reduce " + e.reduceId() + " of " + e.jobId() + ", which runs on another host";
      }
      startedInBatch.add(e.jobId() + "/" + e.reduceId());
      return null;
    }
    if (event instanceof JobEvent.MapOutputIndexed e) {
      return e.host().equals(host) ? null : "MapOutputIndexed.host " + e.host();
    }
    if (event instanceof JobEvent.ContainersRunning e) {
      return e.host().equals(host) ? null : "ContainersRunning.host " + e.host();
    }
    Job job = registry.running(event.jobId());
    if (job == null) {
      return null;
    }
    if (event instanceof JobEvent.JobFinished) {
      return job.hasReduceOn(host) || batchStartedAny(startedInBatch, event.jobId()) ? null
          : "the end of job " + event.jobId() + ", which runs no reduce on it";
    }
    int reduceId = reduceOf(event);
    Job.Reduce r = job.reduce(reduceId);
    boolean permitted = r == null ? startedInBatch.contains(event.jobId() + "/" + reduceId)
        : r.host().equals(host);
    return permitted ? null
        : "reduce " + reduceId + " of " + event.jobId() + ", which does not run on it";
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
}
