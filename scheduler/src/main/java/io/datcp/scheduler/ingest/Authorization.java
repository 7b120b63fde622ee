package io.datcp.scheduler.ingest;

import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobRegistry;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Authorization of a report batch (and of a lookup's map ids): what an authenticated host may
 * say about which jobs. Host checks from the node credential (a reduce's events come from the
 * reduce's host); with a ResourceManager, every claim a host makes about a job also needs YARN
 * to have placed a container of that job on that host ({@link Placements}); map ids must lie
 * in [0, maps), the count the job's first accepted reduce gave (verified against YARN like any
 * claim: only a host running one of the job's containers can set it, so a wrong count harms
 * only its own job). An unanswered ResourceManager fails open to the host checks.
 */
final class Authorization {
  private final JobRegistry registry;
  private final Placements placements;

  /** @param placements YARN's placements; null when no ResourceManager is configured */
  Authorization(JobRegistry registry, Placements placements) {
    this.registry = registry;
    this.placements = placements;
  }

  /**
   * Completes once {@code caller}'s claims about {@code jobIds} can be judged (at once when
   * they need no answer from YARN). Call before taking the jobs' locks.
   *
   * @param claimedMaps per job, a map whose output the caller says it serves, if any: where
   *     YARN no longer lists the caller's container of the job, the job's AM is asked
   */
  CompletableFuture<Void> verify(Caller caller, Collection<String> jobIds,
      Map<String, Integer> claimedMaps) {
    if (placements == null || !caller.authenticated() || jobIds.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    return placements.await(jobIds, caller.host(), claimedMaps);
  }

  /**
   * Refuses each of {@code events} at {@code indexes} (one job's, in batch order) that {@code
   * caller} may not send: marks it in {@code refused} and adds why to {@code out}. Events already
   * marked (invalid) are skipped, so they start nothing. The caller holds the job's lock. Returns
   * how many events it let through on host checks alone because the ResourceManager did not
   * answer.
   */
  int check(List<JobEvent> events, List<Integer> indexes, Caller caller, boolean[] refused,
      List<Refused> out) {
    Set<String> started = new HashSet<>();
    int unverified = 0;
    for (int i : indexes) {
      if (refused[i]) {
        continue;
      }
      JobEvent e = events.get(i);
      String invalid = outOfRange(e, "events[" + i + "].");
      if (invalid != null) {
        refused[i] = true;
        out.add(new Refused(i, Refused.Reason.INVALID, invalid));
        continue;
      }
      if (!caller.authenticated()) {
        continue;
      }
      Placements.Verdict yarn = placements == null ? null
          : placements.placed(e.jobId(), caller.host());
      String what = yarn == Placements.Verdict.NOT_PLACED
          ? "job " + e.jobId() + ": YARN placed no container of it on this host"
          : notPermitted(e, caller.host(), started);
      if (what != null) {
        refused[i] = true;
        out.add(new Refused(i, Refused.Reason.NOT_PERMITTED,
            "the reporting host may not report " + what));
      } else if (yarn == Placements.Verdict.UNVERIFIED) {
        unverified++;
      }
    }
    return unverified;
  }

  /**
   * Refuses a lookup's {@code mapIds} (maps whose output {@code caller} says it serves): beyond
   * the job's maps, INVALID_ARGUMENT; from a host YARN placed none of the job's containers on,
   * PERMISSION_DENIED. Call after {@link #verify}.
   */
  void checkMapsServed(Caller caller, String jobId, List<Integer> mapIds) {
    if (mapIds.isEmpty()) {
      return;
    }
    int maps = maps(jobId);
    if (maps >= 0 && mapIds.stream().anyMatch(m -> m >= maps)) {
      throw new InvalidFieldException("mapIds", "must be below " + maps + ", the job's maps");
    }
    if (caller.authenticated() && placements != null
        && placements.placed(jobId, caller.host()) == Placements.Verdict.NOT_PLACED) {
      throw new NotPermittedException("mapIds: YARN placed no container of job " + jobId
          + " on " + caller.host() + ", so it serves none of the job's maps");
    }
  }

  /** The job's maps, as its first accepted reduce gave them; -1 when unknown. */
  private int maps(String jobId) {
    Job job = registry.running(jobId);
    return job == null ? -1 : job.totalMaps();
  }

  /** Why {@code event}'s map or reduce ids lie outside the job's, or null when they do not. */
  private String outOfRange(JobEvent event, String prefix) {
    int maps = maps(event.jobId());
    if (maps < 0) {
      return null;
    }
    boolean beyond;
    if (event instanceof JobEvent.MapOutputIndexed e) {
      beyond = e.mapId() >= maps;
    } else if (event instanceof JobEvent.MapCompleted e) {
      beyond = e.mapId() >= maps;
    } else if (event instanceof JobEvent.MapLost e) {
      beyond = e.mapId() >= maps;
    } else if (event instanceof JobEvent.FetchStarted e) {
      beyond = e.mapIds().stream().anyMatch(m -> m >= maps);
    } else if (event instanceof JobEvent.FetchFinished e) {
      beyond = e.mapIds().stream().anyMatch(m -> m >= maps);
    } else {
      return null;
    }
    String field = event instanceof JobEvent.MapOutputIndexed
        || event instanceof JobEvent.MapCompleted || event instanceof JobEvent.MapLost ? "mapId"
        : "mapIds";
    return beyond ? prefix + field + ": must be below " + maps + ", the job's maps" : null;
  }

  /**
   * What of {@code event} an authenticated {@code host} may not send, or null when it may: a
   * reduce's events must come from the host it runs on (or is started on, earlier in the same
   * batch), a job's end from a host running one of its reduces, map-side events from the map's
   * own host. {@code startedInBatch} collects the job/reduce pairs started by permitted
   * ReduceStarted events earlier in the batch.
   */
  private String notPermitted(JobEvent event, String host, Set<String> startedInBatch) {
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
    } else if (event instanceof JobEvent.MapLost e) {
      // as MapCompleted: only a reduce of the job may say a map of it is lost (or done)
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
