package io.datcp.scheduler.ingest;

import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.flows.FlowLog;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.plan.LiveJobs;
import io.datcp.scheduler.serve.PolicyPushes;
import io.datcp.scheduler.serve.PolicyUpdateHub;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Job ends nobody reported: those the ResourceManager knows of ({@link #pollJobEnds}) and jobs
 * idle for too long ({@link #expireIdleJobs}). Each ends the job as a reported JobFinished
 * would: agents are told, its demands withdrawn, its hosts re-planned.
 */
public final class JobEnds {
  private final LiveJobs live;
  private final YarnApps yarn;
  private final PolicyPushes pushes;
  private final PolicyUpdateHub hub;
  private final FlowLog flowLog;
  private final long idleTimeoutNanos;
  private final long endPollNanos;
  private final Counter jobsTimedOut;

  /**
   * @param yarn the ResourceManager; null when none is configured
   * @param idleTimeoutNanos jobs.idleTimeoutSeconds
   * @param endPollNanos jobs.endPollMillis
   */
  public JobEnds(LiveJobs live, YarnApps yarn, PolicyPushes pushes, PolicyUpdateHub hub,
      FlowLog flowLog, long idleTimeoutNanos, long endPollNanos, MeterRegistry meters) {
    this.live = live;
    this.yarn = yarn;
    this.pushes = pushes;
    this.hub = hub;
    this.flowLog = flowLog;
    this.idleTimeoutNanos = idleTimeoutNanos;
    this.endPollNanos = endPollNanos;
    jobsTimedOut = Counter.builder("datcp.jobs.timedout")
        .description("Running jobs dropped after jobs.idleTimeoutSeconds").register(meters);
  }

  /** Drops running jobs idle for longer than jobs.idleTimeoutSeconds; returns how many. */
  public int expireIdleJobs() {
    long now = live.now();
    int n = 0;
    for (Job job : List.copyOf(live.registry().runningJobs())) {
      PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
      try (Stripes.Held held = live.locks().hold(job.id())) {
        Set<String> touched = new HashSet<>();
        if (!live.registry().expireIfIdle(job, now, idleTimeoutNanos, touched)) {
          continue;
        }
        n++;
        hub.jobFinished(out, job.id(), now);
        live.plan().publishDemands(job, Set.of(), now);
        live.plan().closeEpisodes(job);
        live.registry().drainEvicted().forEach(flowLog::forget);
        live.plan().replan(touched, now, pushes.into(out));
      }
      hub.deliver(out);
    }
    jobsTimedOut.increment(n);
    return n;
  }

  /**
   * Asks the ResourceManager whether running jobs ended, and ends those it says did as a
   * reported JobFinished would, at YARN's finish time. Only jobs whose every known reduce
   * finished its shuffle are asked about (a job cannot end before its reduces), each at most
   * once per jobs.endPollMillis. Completes, with how many jobs it ended, once every answer is
   * applied; at once with 0 when no ResourceManager is configured.
   */
  public CompletableFuture<Integer> pollJobEnds() {
    if (yarn == null) {
      return CompletableFuture.completedFuture(0);
    }
    long now = live.now();
    List<CompletableFuture<Integer>> asked = new ArrayList<>();
    for (Job job : List.copyOf(live.registry().runningJobs())) {
      try (Stripes.Held held = live.locks().hold(job.id())) {
        // A tenth of slack: the schedule's delay runs on another clock than this one, and a
        // job asked a hair less than a period ago would otherwise wait a whole extra period.
        if (job.finished() || !job.shufflesDone() || (job.endAskedUnixNanos() != 0
            && now - job.endAskedUnixNanos() < endPollNanos - endPollNanos / 10)) {
          continue;
        }
        job.endAsked(now);
      }
      asked.add(yarn.end(job.id()).thenApply(
          end -> end.isPresent() && endFromYarn(job, end.get()) ? 1 : 0));
    }
    return CompletableFuture.allOf(asked.toArray(CompletableFuture[]::new))
        .thenApply(v -> asked.stream().mapToInt(CompletableFuture::join).sum());
  }

  /**
   * Ends {@code job} as a reported JobFinished at YARN's finish time would; false when it is no
   * longer running (a report or the idle sweep ended it while the ResourceManager answered).
   */
  private boolean endFromYarn(Job job, YarnApps.End end) {
    long now = live.now();
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    try (Stripes.Held held = live.locks().hold(job.id())) {
      if (live.registry().running(job.id()) != job) {
        return false;
      }
      Set<String> touched = new HashSet<>();
      live.registry().apply(
          new JobEvent.JobFinished(end.finishUnixNanos(), job.id(), end.succeeded()),
          touched, now);
      hub.jobFinished(out, job.id(), now);
      live.plan().publishDemands(job, touched, now);
      live.plan().closeEpisodes(job);
      live.registry().drainEvicted().forEach(flowLog::forget);
      live.plan().replan(touched, now, pushes.into(out));
    }
    hub.deliver(out);
    return true;
  }
}
