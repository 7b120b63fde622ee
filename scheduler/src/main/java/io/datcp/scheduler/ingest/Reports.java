package io.datcp.scheduler.ingest;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.common.LimitReachedException;
import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.flows.FlowLog;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobRegistry;
import io.datcp.scheduler.plan.LiveJobs;
import io.datcp.scheduler.serve.PolicyPushes;
import io.datcp.scheduler.serve.PolicyUpdateHub;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.ObjIntConsumer;

/**
 * The ingest step: report batches from the plugins ({@link #report}) and flow outcomes from the
 * agents ({@link #reportOutcomes}), each checked whole (size, rate per host) and event by event
 * (fields, what the authenticated caller may say, verified against YARN where a
 * ResourceManager is configured: a refused event costs the batch's others nothing, since an
 * agent's batch carries several tasks' events), deduplicated by batch id,
 * then applied to the job model; a report's changes re-plan the reducer hosts they touched and
 * the news is pushed to agents.
 */
public final class Reports {
  private final LiveJobs live;
  private final Authorization authorization;
  private final BatchDedup dedup;
  private final HostRateLimiter limiter;
  private final int maxEventsPerBatch;
  private final JobAttributes attributes;
  private final PolicyPushes pushes;
  private final PolicyUpdateHub hub;
  private final FlowLog flowLog;

  private final Counter eventsAccepted;
  private final Counter batchesRateLimited;
  private final Counter batchesInvalid;
  private final Counter eventsInvalid;
  private final Counter eventsNotPermitted;
  private final Counter eventsUnverified;
  private final Counter eventsOverLimit;
  private final Counter duplicates;
  private final Counter outcomesMet;
  private final Counter outcomesMissed;
  private final Counter outcomesIgnored;
  /** Told how many of an authenticated host's events a batch refused for a limit. */
  private volatile ObjIntConsumer<String> limitRefusals = (host, n) -> {};

  /**
   * @param dedupIdleNanos reports.dedupIdleSeconds
   * @param maxReportersPerHost reports.maxReportersPerHost
   * @param maxEventsPerBatch reports.maxEventsPerBatch
   * @param yarn the ResourceManager asked for job attributes and against which reports are
   *     verified; null: none (attributes come from reports or stay unknown; host checks only)
   * @param refreshMinIntervalNanos yarn.rm.refreshMinIntervalMillis
   */
  public Reports(LiveJobs live, HostRateLimiter limiter, long dedupIdleNanos,
      int maxReportersPerHost, int maxEventsPerBatch, YarnApps yarn,
      long refreshMinIntervalNanos, PolicyPushes pushes, PolicyUpdateHub hub, FlowLog flowLog,
      MeterRegistry meters) {
    this.live = live;
    this.authorization = new Authorization(live.registry(), yarn == null ? null
        : new Placements(yarn, refreshMinIntervalNanos, System::nanoTime));
    this.dedup = new BatchDedup(dedupIdleNanos, maxReportersPerHost);
    this.limiter = limiter;
    this.maxEventsPerBatch = maxEventsPerBatch;
    this.attributes = new JobAttributes(live.locks(), live.registry(), yarn, pushes, hub,
        live.clock());
    this.pushes = pushes;
    this.hub = hub;
    this.flowLog = flowLog;

    eventsAccepted = Counter.builder("datcp.report.events").description("Events applied")
        .register(meters);
    batchesRateLimited = Counter.builder("datcp.report.rejected").tag("reason", "rate")
        .description("Report batches refused").register(meters);
    batchesInvalid = Counter.builder("datcp.report.rejected").tag("reason", "invalid")
        .description("Report batches refused").register(meters);
    outcomesMet = Counter.builder("datcp.flows.ended").tag("deadline", "met")
        .description("Flows reported ended by agents").register(meters);
    outcomesMissed = Counter.builder("datcp.flows.ended").tag("deadline", "missed")
        .description("Flows reported ended by agents").register(meters);
    duplicates = Counter.builder("datcp.report.duplicates")
        .description("Retried batches acknowledged without applying them").register(meters);
    eventsInvalid = Counter.builder("datcp.report.events.refused").tag("reason", "invalid")
        .description("Events and outcomes refused on their own").register(meters);
    eventsNotPermitted = Counter.builder("datcp.report.events.refused")
        .tag("reason", "permission").description("Events and outcomes refused on their own")
        .register(meters);
    eventsUnverified = Counter.builder("datcp.report.events.unverified")
        .description("Events accepted on host checks alone: the ResourceManager did not answer")
        .register(meters);
    if (yarn != null) {
      FunctionCounter.builder("datcp.yarn.outages", yarn, YarnApps::outages)
          .description("Times the ResourceManager stopped answering").register(meters);
    }
    eventsOverLimit = Counter.builder("datcp.report.events.refused").tag("reason", "limit")
        .description("Events and outcomes refused on their own").register(meters);
    outcomesIgnored = Counter.builder("datcp.flows.ignored")
        .description("Flow outcomes of jobs the scheduler does not know").register(meters);
    Gauge.builder("datcp.jobs.running", live.registry(), JobRegistry::runningCount)
        .description("Jobs with a reduce reported and no finish").register(meters);
  }

  /**
   * Applies a batch of events from {@code caller}. A batch over the size limit or over the
   * host's rate changes nothing (thrown at once); an invalid event, or one the caller may not
   * send, is refused on its own and the others are applied in order. A batch whose ({@code
   * reporterId}, {@code batchId}) was applied before is acknowledged as a duplicate and not
   * applied again. Completes at once unless the caller's claims need an answer from the
   * ResourceManager first (a host new to the verification cache); then when it answered.
   */
  public CompletableFuture<Ack> report(Caller caller, String reporterId, long batchId,
      List<JobEvent> events) {
    checkBatch(caller.host(), "reporterHost", events.size(), "events", reporterId);
    boolean[] refused = new boolean[events.size()];
    List<Refused> why = new ArrayList<>();
    Set<String> claimed = new HashSet<>();
    Map<String, Integer> claimedMaps = new HashMap<>();
    for (int i = 0; i < events.size(); i++) {
      try {
        String prefix = "events[" + i + "].";
        events.get(i).validate(prefix);
        live.registry().limits().check(events.get(i), prefix);
        claimed.add(events.get(i).jobId());
        if (events.get(i) instanceof JobEvent.MapOutputIndexed m) {
          claimedMaps.putIfAbsent(m.jobId(), m.mapId());
        }
      } catch (InvalidFieldException e) {
        refused[i] = true;
        why.add(new Refused(i, Refused.Reason.INVALID, e.getMessage()));
      }
    }
    return authorization.verify(caller, claimed, claimedMaps)
        .thenApply(v -> apply(caller, reporterId, batchId, events, refused, why));
  }

  /**
   * Refuses a lookup's claim that {@code caller} serves maps {@code mapIds} of {@code jobId}
   * (a lookup marks them done): completes once judged, exceptionally with {@link
   * NotPermittedException} or {@link InvalidFieldException} when refused, like a report's
   * MapOutputIndexed would be.
   */
  public CompletableFuture<Void> checkMapsServed(Caller caller, String jobId,
      List<Integer> mapIds) {
    if (mapIds.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    require(jobId != null && !jobId.isEmpty() && jobId.length() <= 128, "jobId",
        "must be a job id of 1-128 characters");
    return authorization.verify(caller, Set.of(jobId), Map.of(jobId, mapIds.get(0)))
        .thenRun(() -> authorization.checkMapsServed(caller, jobId, mapIds));
  }

  private Ack apply(Caller caller, String reporterId, long batchId, List<JobEvent> events,
      boolean[] refused, List<Refused> why) {
    if (!firstTime(caller, reporterId, batchId)) {
      return new Ack(0, true, List.of());
    }
    long now = live.now();
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    List<String> askYarn = new ArrayList<>();
    Set<String> touched = new HashSet<>();
    int applied = 0;
    int unverified = 0;
    // One job at a time under its lock alone: holding every job's lock for the whole batch made
    // a batch naming 1,000 jobs stall the calls of a fifth of all jobs while it was applied.
    for (Map.Entry<String, List<Integer>> job : byJob(events, JobEvent::jobId).entrySet()) {
      try (Stripes.Held held = live.locks().hold(job.getKey())) {
        unverified += authorization.check(events, job.getValue(), caller, refused, why);
        Set<Job> changed = new HashSet<>();
        for (int i : job.getValue()) {
          if (refused[i]) {
            continue;
          }
          JobEvent e = events.get(i);
          Job j;
          try {
            j = live.registry().apply(e, caller.host(), touched, now);
          } catch (LimitReachedException over) {
            why.add(new Refused(i, Refused.Reason.LIMIT, "events[" + i + "]: "
                + over.getMessage()));
            continue;
          }
          applied++;
          if (j == null) {
            continue;
          }
          changed.add(j);
          if (j.finished()) {
            hub.jobFinished(out, j.id(), now);
          } else if (e instanceof JobEvent.FetchFinished f) {
            hub.notInterested(f.sourceHost(), f.jobId(), f.reduceId(),
                PolicyUpdateHub.fetched(f.reduceId(), f.sourceHost(), f.mapIds()));
          }
          attributes.askIfUnknown(j, now, askYarn);
        }
        changed.forEach(j -> live.plan().publishDemands(j, touched, now));
        changed.stream().filter(Job::finished).forEach(live.plan()::closeEpisodes);
      }
    }
    live.registry().drainEvicted().forEach(flowLog::forget);
    // host locks only: a plan reads the demands the jobs published
    live.plan().replan(touched, now, pushes.into(out));
    hub.deliver(out);
    eventsAccepted.increment(applied);
    eventsUnverified.increment(unverified);
    askYarn.forEach(attributes::ask);
    return new Ack(applied, false, counted(caller, why));
  }

  /** Indexes of {@code items} per job, jobs in order of first appearance, each in batch order. */
  private static <T> Map<String, List<Integer>> byJob(List<T> items, Function<T, String> jobId) {
    Map<String, List<Integer>> byJob = new LinkedHashMap<>();
    for (int i = 0; i < items.size(); i++) {
      byJob.computeIfAbsent(jobId.apply(items.get(i)), k -> new ArrayList<>()).add(i);
    }
    return byJob;
  }

  /**
   * Records how flows ended; limited, refused one by one when invalid, and deduplicated like
   * shuffle reports. Outcomes of jobs the scheduler does not know (running or in its history)
   * are ignored (not refused: the job may have been forgotten).
   */
  public Ack reportOutcomes(Caller caller, String reporterId, long batchId,
      List<FlowOutcome> outcomes) {
    checkBatch(caller.host(), "agentHost", outcomes.size(), "outcomes", reporterId);
    boolean[] refused = new boolean[outcomes.size()];
    List<Refused> why = new ArrayList<>();
    for (int i = 0; i < outcomes.size(); i++) {
      try {
        FlowOutcome o = outcomes.get(i);
        String prefix = "outcomes[" + i + "].";
        o.validate(prefix);
        if (o.flow() != null) {
          live.registry().limits().mapIds(o.flow().mapIds(), prefix, "flow.mapIds");
        }
      } catch (InvalidFieldException e) {
        refused[i] = true;
        why.add(new Refused(i, Refused.Reason.INVALID, e.getMessage()));
      }
    }
    if (!firstTime(caller, reporterId, batchId)) {
      return new Ack(0, true, List.of());
    }
    int applied = 0;
    // one job at a time under its lock alone, as report batches are
    for (Map.Entry<String, List<Integer>> job : byJob(outcomes, FlowOutcome::jobId).entrySet()) {
      try (Stripes.Held held = live.locks().hold(job.getKey())) {
        for (int i : job.getValue()) {
          if (refused[i]) {
            continue;
          }
          FlowOutcome o = outcomes.get(i);
          if (live.registry().find(o.jobId()) == null) {
            outcomesIgnored.increment();
            continue;
          }
          flowLog.add(o);
          (o.met() ? outcomesMet : outcomesMissed).increment();
          Job running = live.registry().running(o.jobId());
          Job.Reduce reduce = running == null ? null : running.reduce(o.reduceId());
          if (reduce != null) {
            live.plan().flowEnded(reduce.host(), o.jobId(), o.bytes(), o.startUnixNanos(),
                o.finishUnixNanos());
          }
          PolicyUpdateHub.FlowRef ended = new PolicyUpdateHub.FlowRef(o.reduceId(), o.flow());
          hub.notInterested(caller.host(), o.jobId(), o.reduceId(), f -> f.equals(ended)
              || (f.reduceId() == o.reduceId() && (o.flow() == null || f.key() == null)));
          applied++;
        }
      }
    }
    return new Ack(applied, false, counted(caller, why));
  }

  /**
   * Where an authenticated host's events refused for a limit are told (the byte budget, which
   * refuses a host's calls whole while it has many: see NodeByteBudget#refusedForLimits).
   */
  public void onLimitRefusals(ObjIntConsumer<String> listener) {
    this.limitRefusals = listener;
  }

  /** Refusals in batch order, counted by reason (a duplicate's are not counted again). */
  private List<Refused> counted(Caller caller, List<Refused> why) {
    why.sort(Comparator.comparingInt(Refused::index));
    int overLimit = 0;
    for (Refused r : why) {
      if (r.reason() == Refused.Reason.LIMIT) {
        overLimit++;
      }
      (switch (r.reason()) {
        case INVALID -> eventsInvalid;
        case NOT_PERMITTED -> eventsNotPermitted;
        case LIMIT -> eventsOverLimit;
      }).increment();
    }
    if (overLimit > 0 && caller.authenticated()) {
      limitRefusals.accept(caller.host(), overLimit);
    }
    return why;
  }

  private void checkBatch(String host, String hostField, int size, String listField,
      String reporterId) {
    require(host != null && !host.isEmpty() && host.length() <= 255, hostField,
        "must be a host name of 1-255 characters");
    if (size > maxEventsPerBatch) {
      batchesInvalid.increment();
      throw new InvalidFieldException(listField,
          "batch of " + size + " exceeds the limit of " + maxEventsPerBatch);
    }
    if (reporterId.length() > 128) {
      batchesInvalid.increment();
      throw new InvalidFieldException("reporterId", "longer than 128 characters");
    }
    if (!limiter.tryAcquire(host)) {
      batchesRateLimited.increment();
      throw new RateLimitedException(host);
    }
  }

  private boolean firstTime(Caller caller, String reporterId, long batchId) {
    if (reporterId.isEmpty() || batchId == 0) {
      return true;
    }
    // Keyed by host too, so one node cannot burn another node's batch ids.
    if (dedup.firstTime(caller.host(), reporterId, batchId, System.nanoTime())) {
      return true;
    }
    duplicates.increment();
    return false;
  }
}
