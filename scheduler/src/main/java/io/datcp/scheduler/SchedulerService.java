package io.datcp.scheduler;

import static io.datcp.scheduler.InvalidFieldException.require;

import io.datcp.scheduler.auth.NotPermittedException;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.flows.AchievedShare;
import io.datcp.scheduler.flows.DeadlinePlanner;
import io.datcp.scheduler.flows.DeadlinePlanner.Deadline;
import io.datcp.scheduler.flows.DeadlinePlanner.Demand;
import io.datcp.scheduler.flows.FlowKey;
import io.datcp.scheduler.flows.FlowLog;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.FlowPolicy;
import io.datcp.scheduler.flows.PlannerPolicy;
import io.datcp.scheduler.flows.PolicyUpdate;
import io.datcp.scheduler.flows.PolicyUpdateHub;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobConf;
import io.datcp.scheduler.jobs.JobRegistry;
import io.datcp.scheduler.jobs.JobView;
import io.datcp.scheduler.jobs.YarnApps;
import io.datcp.scheduler.limits.BatchDedup;
import io.datcp.scheduler.limits.HostRateLimiter;
import io.datcp.scheduler.limits.RateLimitedException;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.policy.PolicyDecision;
import io.datcp.scheduler.policy.PolicyRule;
import io.datcp.scheduler.policy.QuenchMode;
import io.datcp.scheduler.switches.SwitchBook;
import io.datcp.scheduler.switches.SwitchPort;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The one domain service behind the gRPC and REST adapters: it keeps the live job model from the
 * plugins' reports, plans per-host deadlines, answers agents' policy lookups, pushes policy
 * updates, records flow outcomes, and fronts the operator's policy rules.
 *
 * <p>Concurrency: there is no global lock. Everything about one job (its state, the agents'
 * interest in its flows, its published demands) changes only under that job's lock, striped by
 * job id ({@link Stripes}); a call naming several jobs takes their stripes in index order. A
 * reducer host's plan is computed under that host's lock from the demands its jobs published
 * (each a consistent snapshot of one job), so reports for jobs on different hosts never wait for
 * each other. Lock order: job stripes, then one host stripe; never a job stripe under a host
 * stripe. Updates are collected per call and delivered after its locks are released.
 */
public final class SchedulerService {
  /** A re-plan is pushed to agents only when a deadline moves by more than this, nanoseconds. */
  private static final long MIN_UPDATE_SHIFT_NANOS = 50_000_000L;
  /** ... and by more than this share of the time left to the old deadline. */
  private static final double MIN_UPDATE_SHIFT_SHARE = 0.1;

  /**
   * planner.policy=order: importance (phi 1) of the first shuffle-bound job's flows on a host,
   * the other shuffle-bound jobs', waiting jobs' and those of flows outside the order. With
   * kmod's classes (low P < 0.9, standard, high P >= 1.5) they are high (AF41), standard (CS0),
   * low (CS1) and standard: the ToR's three strict-priority bands serve the order.
   */
  private static final double ORDER_FIRST = 10;
  private static final double ORDER_SHUFFLE_BOUND = 1;
  private static final double ORDER_WAITING = 0;
  private static final double ORDER_OUTSIDE = 1;

  /** A job whose attributes the ResourceManager did not give is asked again after this. */
  private static final long YARN_RETRY_NANOS = 30_000_000_000L;

  /**
   * Who is calling: the host of its node credential ({@code authenticated}), or in development
   * mode without credentials the host the message names.
   */
  public record Caller(String host, boolean authenticated) {}

  /** What a report batch did. */
  public record Ack(int accepted, boolean duplicate) {}

  /**
   * Lock stripes, a power of two. Calls on the event loops that collide on a stripe wait for its
   * holder, for 10-36 ms when the machine is oversubscribed and the holder preempted (JFR at
   * 10,000 hosts with 256 stripes): with 4,096 (about 100 KB of locks) two of 32 concurrent jobs
   * share a stripe a sixteenth as often.
   */
  private static final int STRIPES = 4096;

  private final Stripes jobLocks = new Stripes(STRIPES);
  private final Stripes hostLocks = new Stripes(STRIPES);
  private final JobRegistry registry;
  private final BatchDedup dedup;
  private final YarnApps yarn;
  private final SwitchBook switches;
  private final long idleTimeoutNanos;
  private final long endPollNanos;
  /** Reducer host -> job -> deadline; written under the host's lock, read anywhere. */
  private final Map<String, Map<String, Deadline>> hostPlans = new ConcurrentHashMap<>();
  /**
   * Job -> reducer host -> its demand on that host's downlink, an immutable record replaced
   * under the job's lock after every change, so a host's plan never reads another job's state
   * while it changes.
   */
  private final Map<String, Map<String, Demand>> demands = new ConcurrentHashMap<>();
  private final PolicyUpdateHub hub = new PolicyUpdateHub();
  private final DeadlinePlanner planner;
  private final AchievedShare achieved;
  private final double firstJobImportance;
  private final boolean waitingJobsYield;
  /** planner.policy=order: the order alone, as precedence classes (issue 16's prio). */
  private final boolean orderOnly;
  private final PolicyBook policies;
  private final FlowLog flowLog;
  private final HostRateLimiter limiter;
  private final int maxEventsPerBatch;
  private final Clock clock;

  private final Counter eventsAccepted;
  private final Counter batchesRateLimited;
  private final Counter batchesInvalid;
  private final Counter outcomesMet;
  private final Counter outcomesMissed;
  private final Timer lookupTimer;
  private final Counter updatesSent;
  private final Counter duplicates;
  private final Counter batchesNotPermitted;
  private final Counter outcomesIgnored;
  private final Counter jobsTimedOut;
  private final Counter slowWatchersClosed;

  /**
   * @param yarn the ResourceManager, asked how jobs ended and, unless they come from reports
   *     (jobs.attributesFrom=reports), for job attributes; null when none is configured (then
   *     every job gets the default policy and ends only when reported or idle)
   */
  public SchedulerService(SchedulerConf conf, PolicyBook policies, Clock clock,
      HostRateLimiter limiter, MeterRegistry meters, YarnApps yarn) {
    this.policies = policies;
    this.clock = clock;
    this.limiter = limiter;
    this.yarn = yarn;
    this.registry = new JobRegistry(conf.get(SchedulerConf.RETAIN_FINISHED_JOBS),
        conf.get(SchedulerConf.JOB_ATTRIBUTES_FROM).equals("reports"));
    this.dedup = new BatchDedup(
        TimeUnit.SECONDS.toNanos(conf.get(SchedulerConf.DEDUP_IDLE_SECONDS)));
    this.switches = new SwitchBook(conf.switches(), this::nowUnixNanos);
    this.idleTimeoutNanos = TimeUnit.SECONDS.toNanos(
        conf.get(SchedulerConf.JOB_IDLE_TIMEOUT_SECONDS));
    this.endPollNanos = TimeUnit.MILLISECONDS.toNanos(
        conf.get(SchedulerConf.JOB_END_POLL_MILLIS));
    this.flowLog = new FlowLog(conf.get(SchedulerConf.RETAIN_FLOWS_PER_JOB));
    this.maxEventsPerBatch = conf.get(SchedulerConf.REPORT_MAX_EVENTS);
    long downlink = conf.get(SchedulerConf.DOWNLINK_BITS_PER_SECOND);
    double utilisation = conf.get(SchedulerConf.TARGET_UTILISATION);
    this.planner = new DeadlinePlanner(downlink, utilisation);
    this.achieved = new AchievedShare(downlink, utilisation);
    this.firstJobImportance = conf.get(SchedulerConf.FIRST_JOB_IMPORTANCE);
    this.waitingJobsYield = conf.get(SchedulerConf.WAITING_JOBS_YIELD);
    this.orderOnly = conf.get(SchedulerConf.PLANNER_POLICY) == PlannerPolicy.ORDER;

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
    lookupTimer = Timer.builder("datcp.policy.lookup").description("Flow policy lookups")
        .publishPercentiles(0.5, 0.99).register(meters);
    updatesSent = Counter.builder("datcp.policy.updates").description("Policy updates pushed")
        .register(meters);
    duplicates = Counter.builder("datcp.report.duplicates")
        .description("Retried batches acknowledged without applying them").register(meters);
    batchesNotPermitted = Counter.builder("datcp.report.rejected").tag("reason", "permission")
        .description("Report batches refused").register(meters);
    outcomesIgnored = Counter.builder("datcp.flows.ignored")
        .description("Flow outcomes of jobs the scheduler does not know").register(meters);
    jobsTimedOut = Counter.builder("datcp.jobs.timedout")
        .description("Running jobs dropped after jobs.idleTimeoutSeconds").register(meters);
    slowWatchersClosed = Counter.builder("datcp.policy.watchers.closed").tag("reason", "slow")
        .description("Update streams closed because the agent read too slowly")
        .register(meters);
    Gauge.builder("datcp.jobs.running", this, s -> s.runningJobCount())
        .description("Jobs with a reduce reported and no finish").register(meters);
    Gauge.builder("datcp.policy.watchers", this, SchedulerService::openWatches)
        .description("Open policy update streams").register(meters);
  }

  // ---- reports from the reduce-side plugin --------------------------------------------------

  /**
   * Applies a batch of events from {@code caller}; all or nothing: a batch over the size limit,
   * over the host's rate, with an invalid event or with an event the caller may not send
   * changes nothing. A batch whose ({@code reporterId}, {@code batchId}) was applied before is
   * acknowledged as a duplicate and not applied again.
   */
  public Ack report(Caller caller, String reporterId, long batchId, List<JobEvent> events) {
    checkBatch(caller.host(), "reporterHost", events.size(), "events");
    try {
      require(reporterId.length() <= 128, "reporterId", "longer than 128 characters");
      for (int i = 0; i < events.size(); i++) {
        events.get(i).validate("events[" + i + "].");
      }
    } catch (InvalidFieldException e) {
      batchesInvalid.increment();
      throw e;
    }
    long now = nowUnixNanos();
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    List<String> askYarn = new ArrayList<>();
    Set<String> jobIds = new HashSet<>();
    events.forEach(e -> jobIds.add(e.jobId()));
    try (Stripes.Held held = jobLocks.hold(jobIds)) {
      if (caller.authenticated()) {
        Set<String> started = new HashSet<>();
        try {
          events.forEach(e -> registry.authorize(e, caller.host(), started));
        } catch (NotPermittedException e) {
          batchesNotPermitted.increment();
          throw e;
        }
      }
      if (!firstTime(caller, reporterId, batchId)) {
        return new Ack(0, true);
      }
      Set<String> touched = new HashSet<>();
      Set<Job> changed = new HashSet<>();
      for (JobEvent e : events) {
        Job job = registry.apply(e, touched, now);
        if (job == null) {
          continue;
        }
        changed.add(job);
        if (job.finished()) {
          hub.jobFinished(out, job.id(), now);
        } else if (e instanceof JobEvent.FetchFinished f) {
          hub.notInterested(f.sourceHost(), f.jobId(), f.reduceId(),
              PolicyUpdateHub.fetched(f.reduceId(), f.sourceHost(), f.mapIds()));
        }
        if (yarn != null && !job.attributesKnown() && (job.attributesAskedUnixNanos() == 0
            || now - job.attributesAskedUnixNanos() > YARN_RETRY_NANOS)) {
          job.attributesAsked(now);
          askYarn.add(job.id());
        }
      }
      changed.forEach(j -> publishDemands(j, touched));
      changed.stream().filter(Job::finished).forEach(this::closeEpisodes);
      registry.drainEvicted().forEach(flowLog::forget);
      replan(touched, now, out);
    }
    hub.deliver(out);
    eventsAccepted.increment(events.size());
    askYarn.forEach(id -> yarn.attributes(id).thenAccept(
        conf -> conf.ifPresent(c -> attributesFromYarn(id, c))));
    return new Ack(events.size(), false);
  }

  /** Development shortcut: an unauthenticated batch without batch id. */
  public int report(String reporterHost, List<JobEvent> events) {
    return report(new Caller(reporterHost, false), "", 0, events).accepted();
  }

  /** Drops running jobs idle for longer than jobs.idleTimeoutSeconds; returns how many. */
  public int expireIdleJobs() {
    long now = nowUnixNanos();
    int n = 0;
    for (Job job : List.copyOf(registry.runningJobs())) {
      PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
      try (Stripes.Held held = jobLocks.hold(job.id())) {
        Set<String> touched = new HashSet<>();
        if (!registry.expireIfIdle(job, now, idleTimeoutNanos, touched)) {
          continue;
        }
        n++;
        hub.jobFinished(out, job.id(), now);
        publishDemands(job, Set.of());
        closeEpisodes(job);
        registry.drainEvicted().forEach(flowLog::forget);
        replan(touched, now, out);
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
    long now = nowUnixNanos();
    List<CompletableFuture<Integer>> asked = new ArrayList<>();
    for (Job job : List.copyOf(registry.runningJobs())) {
      try (Stripes.Held held = jobLocks.hold(job.id())) {
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

  // ---- agents ---------------------------------------------------------------------------------

  /**
   * The policy of one flow of {@code bytes} from a map host to reduce {@code reduceId}, carrying
   * the outputs of maps {@code mapIds} (when empty, those {@code flow} names), which are
   * therefore done; {@code flow} is its full identity when the agent knows it (else null). The
   * asking agent is sent updates of this flow's policy until the flow or the job ends.
   */
  public FlowPolicy lookup(String agentHost, String jobId, int reduceId, long bytes,
      List<Integer> mapIds, FlowKey flow) {
    require(agentHost != null && !agentHost.isEmpty() && agentHost.length() <= 255, "agentHost",
        "must be a host name of 1-255 characters");
    require(jobId != null && !jobId.isEmpty() && jobId.length() <= 128, "jobId",
        "must be a job id of 1-128 characters");
    require(reduceId >= 0, "reduceId", "must be >= 0");
    require(bytes >= 0, "bytes", "must be >= 0 (bytes)");
    require(mapIds.size() <= 100_000 && mapIds.stream().allMatch(m -> m >= 0), "mapIds",
        "must be at most 100000 map indexes >= 0");
    if (flow != null) {
      flow.validate("flow.");
      require(flow.jobId().equals(jobId) && flow.reduceId() == reduceId, "flow",
          "names job " + flow.jobId() + " reduce " + flow.reduceId() + ", not the lookup's");
    }
    long start = System.nanoTime();
    try {
      return explain(agentHost, jobId, new PolicyUpdateHub.FlowRef(reduceId, flow), bytes,
          mapIds.isEmpty() && flow != null ? flow.mapIds() : mapIds);
    } finally {
      lookupTimer.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
    }
  }

  /** A lookup whose maps are those of {@code flow}, if named. */
  public FlowPolicy lookup(String agentHost, String jobId, int reduceId, long bytes,
      FlowKey flow) {
    return lookup(agentHost, jobId, reduceId, bytes, List.of(), flow);
  }

  /** A lookup that does not name the flow's full identity. */
  public FlowPolicy lookup(String agentHost, String jobId, int reduceId, long bytes) {
    return lookup(agentHost, jobId, reduceId, bytes, null);
  }

  /**
   * Streams policy updates for flows {@code agentHost} looked up; run the handle to stop. With
   * {@code resync}, the stream first gets the current policy of every such flow still in
   * flight, then an update with snapshotEnd, then live updates.
   */
  public Runnable watch(String agentHost, boolean resync, PolicyUpdateHub.Sink sink) {
    require(agentHost != null && !agentHost.isEmpty() && agentHost.length() <= 255, "agentHost",
        "must be a host name of 1-255 characters");
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    // Registered first with its gate closed: live updates decided from now on wait behind the
    // snapshot's end, and each flow's snapshot entry is taken under its job's lock, after
    // every update decided before it, so no live update overtakes the snapshot.
    PolicyUpdateHub.Gate gate = hub.watch(agentHost, sink, resync);
    if (resync) {
      for (PolicyUpdateHub.Interest i : hub.interestOf(agentHost)) {
        try (Stripes.Held held = jobLocks.hold(i.jobId())) {
          Job job = registry.running(i.jobId());
          Long bytes = hub.interestIn(agentHost, i.jobId(), i.flow());
          if (job != null && bytes != null) {
            long now = nowUnixNanos();
            gate.sendDirect(PolicyUpdate.of(now, currentPolicy(job, i.flow(), bytes, now, out)));
          }
        }
      }
      gate.sendDirect(new PolicyUpdate(nowUnixNanos(), null, false, true));
      gate.open();
    }
    hub.deliver(out);
    return gate::stop;
  }

  /** Counts an update stream closed because its agent read too slowly. */
  public void slowWatcherClosed() {
    slowWatchersClosed.increment();
  }

  /**
   * Records how flows ended; all or nothing, limited and deduplicated like shuffle reports.
   * Outcomes of jobs the scheduler does not know (running or in its history) are ignored.
   */
  public Ack reportOutcomes(Caller caller, String reporterId, long batchId,
      List<FlowOutcome> outcomes) {
    checkBatch(caller.host(), "agentHost", outcomes.size(), "outcomes");
    try {
      require(reporterId.length() <= 128, "reporterId", "longer than 128 characters");
      for (int i = 0; i < outcomes.size(); i++) {
        outcomes.get(i).validate("outcomes[" + i + "].");
      }
    } catch (InvalidFieldException e) {
      batchesInvalid.increment();
      throw e;
    }
    int applied = 0;
    Set<String> jobIds = new HashSet<>();
    outcomes.forEach(o -> jobIds.add(o.jobId()));
    try (Stripes.Held held = jobLocks.hold(jobIds)) {
      if (!firstTime(caller, reporterId, batchId)) {
        return new Ack(0, true);
      }
      for (FlowOutcome o : outcomes) {
        if (registry.find(o.jobId()) == null) {
          outcomesIgnored.increment();
          continue;
        }
        flowLog.add(o);
        (o.met() ? outcomesMet : outcomesMissed).increment();
        Job running = registry.running(o.jobId());
        Job.Reduce reduce = running == null ? null : running.reduce(o.reduceId());
        if (reduce != null) {
          achieved.flowEnded(reduce.host(), o.jobId(), o.bytes(), o.startUnixNanos(),
              o.finishUnixNanos());
        }
        PolicyUpdateHub.FlowRef ended = new PolicyUpdateHub.FlowRef(o.reduceId(), o.flow());
        hub.notInterested(caller.host(), o.jobId(), o.reduceId(), f -> f.equals(ended)
            || (f.reduceId() == o.reduceId() && (o.flow() == null || f.key() == null)));
        applied++;
      }
    }
    return new Ack(applied, false);
  }

  /** Development shortcut: unauthenticated outcomes without batch id. */
  public int reportOutcomes(String agentHost, List<FlowOutcome> outcomes) {
    return reportOutcomes(new Caller(agentHost, false), "", 0, outcomes).accepted();
  }

  // ---- switches -------------------------------------------------------------------------------

  public SwitchBook.SwitchConfig switchConfig(String name) {
    return switches.get(name);
  }

  public List<String> switchNames() {
    return switches.names();
  }

  /** Replaces one switch's port settings and pushes them to its agents. */
  public SwitchBook.SwitchConfig putSwitchConfig(String name, List<SwitchPort> ports) {
    return switches.put(name, ports);
  }

  /** The switch's configuration now and on every change; run the handle to stop. */
  public Runnable watchSwitch(String name, Consumer<SwitchBook.SwitchConfig> watcher) {
    require(name != null && !name.isEmpty() && name.length() <= 64, "switchName",
        "must be a switch name of 1-64 characters");
    return switches.watch(name, watcher);
  }

  // ---- operator policy ------------------------------------------------------------------------

  public List<PolicyRule> listPolicies() {
    return policies.list();
  }

  public Optional<PolicyRule> getPolicy(String name) {
    return policies.get(name);
  }

  public PolicyRule putPolicy(PolicyRule rule) {
    PolicyRule stored = policies.put(rule);
    pushPolicyChange();
    return stored;
  }

  public List<PolicyRule> replacePolicies(List<PolicyRule> rules) {
    List<PolicyRule> stored = policies.replaceAll(rules);
    pushPolicyChange();
    return stored;
  }

  public boolean deletePolicy(String name) {
    boolean deleted = policies.delete(name);
    if (deleted) {
      pushPolicyChange();
    }
    return deleted;
  }

  // ---- views ----------------------------------------------------------------------------------

  /** Running jobs first (newest first), then finished ones (most recently finished first). */
  public List<JobView> jobs() {
    long now = nowUnixNanos();
    List<JobView> out = new ArrayList<>();
    Set<String> listed = new HashSet<>();
    registry.runningJobs().stream()
        .sorted(Comparator.comparingLong(Job::startUnixNanos).reversed())
        .forEach(j -> {
          listed.add(j.id());
          out.add(lockedView(j, now));
        });
    // A job that finished meanwhile is in both; it is listed once.
    List<Job> done = registry.finishedJobs();
    for (int i = done.size() - 1; i >= 0; i--) {
      if (listed.add(done.get(i).id())) {
        out.add(lockedView(done.get(i), now));
      }
    }
    return out;
  }

  public Optional<JobView> job(String jobId) {
    long now = nowUnixNanos();
    try (Stripes.Held held = jobLocks.hold(jobId)) {
      Job j = registry.find(jobId);
      return j == null ? Optional.empty() : Optional.of(view(j, now));
    }
  }

  /** Recent flows of one job, or of all jobs when {@code jobId} is null. */
  public List<FlowOutcome> flows(String jobId, int limit) {
    require(limit > 0 && limit <= 100_000, "limit", "must be in [1, 100000]");
    return jobId == null ? flowLog.recent(limit) : flowLog.flows(jobId, limit);
  }

  public FlowLog.Tally overallTally() {
    return flowLog.overall();
  }

  /** Open policy update streams. */
  public int openWatches() {
    return hub.watcherCount();
  }

  public int runningJobCount() {
    return registry.runningCount();
  }

  public long nowUnixNanos() {
    Instant i = clock.instant();
    return i.getEpochSecond() * 1_000_000_000L + i.getNano();
  }

  // ---- internals ------------------------------------------------------------------------------

  private void checkBatch(String host, String hostField, int size, String listField) {
    require(host != null && !host.isEmpty() && host.length() <= 255, hostField,
        "must be a host name of 1-255 characters");
    if (size > maxEventsPerBatch) {
      batchesInvalid.increment();
      throw new InvalidFieldException(listField,
          "batch of " + size + " exceeds the limit of " + maxEventsPerBatch);
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
    if (dedup.firstTime(caller.host() + "\n" + reporterId, batchId, System.nanoTime())) {
      return true;
    }
    duplicates.increment();
    return false;
  }

  private void attributesFromYarn(String jobId, JobConf conf) {
    long now = nowUnixNanos();
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    try (Stripes.Held held = jobLocks.hold(jobId)) {
      Job job = registry.find(jobId);
      if (job == null) {
        return;
      }
      job.attributes(conf);
      if (!job.finished()) {
        pushJobEverywhere(job, now, out);
      }
    }
    hub.deliver(out);
  }

  /**
   * Ends {@code job} as a reported JobFinished at YARN's finish time would; false when it is no
   * longer running (a report or the idle sweep ended it while the ResourceManager answered).
   */
  private boolean endFromYarn(Job job, YarnApps.End end) {
    long now = nowUnixNanos();
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    try (Stripes.Held held = jobLocks.hold(job.id())) {
      if (registry.running(job.id()) != job) {
        return false;
      }
      Set<String> touched = new HashSet<>();
      registry.apply(new JobEvent.JobFinished(end.finishUnixNanos(), job.id(), end.succeeded()),
          touched, now);
      hub.jobFinished(out, job.id(), now);
      publishDemands(job, touched);
      closeEpisodes(job);
      registry.drainEvicted().forEach(flowLog::forget);
      replan(touched, now, out);
    }
    hub.deliver(out);
    return true;
  }

  private FlowPolicy explain(String agentHost, String jobId, PolicyUpdateHub.FlowRef flow,
      long bytes, List<Integer> mapIds) {
    long now = nowUnixNanos();
    FlowPolicy answer;
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    try (Stripes.Held held = jobLocks.hold(jobId)) {
      Job job = registry.running(jobId);
      if (job == null) {
        answer = noDeadline(jobId, flow, policies.defaults(),
            "job not known to the scheduler (no running reduce reported): no deadline");
      } else {
        Job.Reduce reduce = job.reduce(flow.reduceId());
        if (reduce != null && reduce.shuffling()) {
          hub.interested(agentHost, jobId, flow, bytes);
          boolean first = JobRegistry.flowStarted(job, reduce, now);
          boolean learnt = JobRegistry.mapsServed(job, flow.reduceId(), agentHost, mapIds, bytes,
              now);
          if (JobRegistry.sawLookup(job, bytes) || first || learnt) {
            publishDemands(job, null);
          }
          if (learnt) {
            // maps newly done move the job's demand wherever it shuffles
            replan(shufflingHosts(job), now, out);
          } else if (first) {
            // §4.4 counts the job's deadline from its flows' start: plan it afresh from now
            replan(Set.of(reduce.host()), now, out);
          }
        }
        answer = currentPolicy(job, flow, bytes, now, out);
      }
    }
    hub.deliver(out);
    return answer;
  }

  /**
   * The policy a flow of a running job gets now; re-plans its host when the plan is stale.
   * Caller holds the job's lock.
   */
  private FlowPolicy currentPolicy(Job job, PolicyUpdateHub.FlowRef flow, long bytes, long now,
      PolicyUpdateHub.Outbox out) {
    PolicyDecision decision = JobRegistry.decision(job, policies);
    Job.Reduce reduce = job.reduce(flow.reduceId());
    if (reduce == null || !reduce.shuffling()) {
      return noDeadline(job.id(), flow, decision,
          "reduce " + flow.reduceId() + " is not shuffling: no deadline");
    }
    Deadline d = planned(reduce.host(), job.id());
    if (d == null || d.unixNanos() <= now) {
      // The plan went stale (bytes were fetched without a report yet): plan afresh from now.
      replan(Set.of(reduce.host()), now, out);
      d = planned(reduce.host(), job.id());
    }
    if (d == null) {
      return noDeadline(job.id(), flow, decision, "no bytes of this job known on "
          + reduce.host() + " yet: no deadline until partition sizes are reported");
    }
    return policyFor(reduce.host(), job.id(), flow, d, bytes, now, decision);
  }

  private Deadline planned(String host, String jobId) {
    Map<String, Deadline> plan = hostPlans.get(host);
    return plan == null ? null : plan.get(jobId);
  }

  private FlowPolicy policyFor(String host, String jobId, PolicyUpdateHub.FlowRef flow,
      Deadline d, long bytes, long now, PolicyDecision decision) {
    if (orderOnly) {
      return ordered(jobId, flow, orderImportance(d), orderReason(host, d));
    }
    if (decision.mode() == FlowMode.OFF) {
      return noDeadline(jobId, flow, decision,
          "mode off by rule '" + decision.rule() + "': plain TCP");
    }
    long deadline = d.unixNanos();
    String reason = d.reason();
    // A flow cannot beat its own size at the usable link rate; asking for more only quenches it.
    long own = now + DeadlinePlanner.transferNanos(bytes, d.usableBitsPerSecond());
    if (own > deadline) {
      deadline = own;
      reason = reason + "; raised to this flow's own transfer time";
    }
    long relative = Math.max(1, deadline - now);
    // §3.1: R_desired = V_total / T_deadline.
    long desired = (long) Math.ceil(bytes * 8.0 * 1e9 / relative);
    double importance = decision.importance();
    double phi = decision.phi();
    QuenchMode quench = decision.quenchMode();
    if (d.first() && firstJobImportance > importance) {
      // Algorithm 1: P = phi * I + (1 - phi) * U; phi 1 holds the first job's flows at P = I
      // from their first window, where urgency alone climbs too late for a 2 s deadline
      importance = firstJobImportance;
      phi = 1;
      // Algorithm 2 quenches a flow that cannot make its deadline to free the link for others;
      // the first job's flows are the ones the others wait behind, so pausing them only delays all
      quench = QuenchMode.OFF;
      reason = reason + "; first in the order: importance " + DeadlinePlanner.decimal(importance, 1)
          + ", phi 1, never quenched";
    } else if (d.waiting() && waitingJobsYield) {
      // §4.4: rushing a job that waits for maps buys nothing; phi 1 keeps its precedence at its
      // importance, where urgency would climb against the shuffle-bound jobs' flows
      phi = 1;
      reason = reason + "; waiting for maps: phi 1 (precedence = importance "
          + DeadlinePlanner.decimal(importance, 1) + ")";
    }
    return new FlowPolicy(jobId, flow.reduceId(), deadline, relative, desired,
        importance, phi, decision.mode(), quench, reason, decision.rule(), flow.key());
  }

  private FlowPolicy noDeadline(String jobId, PolicyUpdateHub.FlowRef flow,
      PolicyDecision decision, String reason) {
    if (orderOnly) {
      return ordered(jobId, flow, ORDER_OUTSIDE, reason + "; order policy: outside the order: "
          + orderClass(ORDER_OUTSIDE));
    }
    return new FlowPolicy(jobId, flow.reduceId(), 0, 0, 0, decision.importance(),
        decision.phi(), decision.mode(), decision.quenchMode(), reason, decision.rule(),
        flow.key());
  }

  /**
   * planner.policy=order: a flow of importance {@code importance} with phi 1, so that its
   * precedence class is the order's alone; dctcp (the transport of the dctcp baseline), no
   * deadline and no quenching. Rules and the policy defaults are not consulted: a rule's
   * importance would override the order, and the baseline is the ordering alone.
   */
  private static FlowPolicy ordered(String jobId, PolicyUpdateHub.FlowRef flow, double importance,
      String reason) {
    return new FlowPolicy(jobId, flow.reduceId(), 0, 0, 0, importance, 1, FlowMode.DCTCP,
        QuenchMode.OFF, reason, "", flow.key());
  }

  private static double orderImportance(Deadline d) {
    return d.first() ? ORDER_FIRST : d.waiting() ? ORDER_WAITING : ORDER_SHUFFLE_BOUND;
  }

  private static String orderReason(String host, Deadline d) {
    String place = d.waiting()
        ? "waiting for maps, so after every shuffle-bound job on " + host
        : "maps all done: rank " + d.rank() + " on " + host + " by smallest remaining shuffle ("
            + DeadlinePlanner.decimal(d.ownBytes() / 1e6, 1) + " MB left)";
    return "order policy: " + place + ": " + orderClass(orderImportance(d));
  }

  /** kmod's class of a dctcp flow of this importance with phi 1. */
  private static String orderClass(double importance) {
    String cls = importance >= 1.5 ? "high class (AF41)"
        : importance >= 0.9 ? "standard class (CS0)" : "low class (CS1)";
    return "importance " + DeadlinePlanner.decimal(importance, 1) + ", phi 1: " + cls
        + "; dctcp, no deadline, never quenched";
  }

  /**
   * Re-plans {@code hosts}, one host lock at a time, from the demands their jobs published, and
   * queues deadlines that moved materially for interested agents.
   */
  private void replan(Set<String> hosts, long now, PolicyUpdateHub.Outbox out) {
    for (String host : hosts) {
      try (Stripes.Held held = hostLocks.hold(host)) {
        Map<String, Deadline> old = hostPlans.getOrDefault(host, Map.of());
        List<Demand> on = demandsOn(host);
        Map<String, Deadline> plan = planner.plan(host, on, now, old, achieved.usable(host));
        for (Demand demand : on) {
          Deadline d = plan.get(demand.jobId());
          if (demand.flowing() && d != null && !d.first()) {
            achieved.plannedBehind(host, demand.jobId());
          }
        }
        if (plan.isEmpty()) {
          hostPlans.remove(host);
        } else {
          hostPlans.put(host, plan);
        }
        plan.forEach((jobId, d) -> {
          Deadline before = old.get(jobId);
          // a job that became first or stopped waiting changes importance, phi and quench even
          // when its deadline stays where it was; with the order policy nothing else is news
          if (before == null || before.first() != d.first() || before.waiting() != d.waiting()
              || (!orderOnly && movedMaterially(before.unixNanos(), d.unixNanos(), now))) {
            pushJob(registry.running(jobId), host, d, now, out);
          }
        });
      }
    }
  }

  /**
   * {@code job} ended and its demands are withdrawn: its episodes on every host it reduced on
   * become samples of the first job's rate, before the hosts are re-planned. Each under the
   * host's lock, so that a plan that still read the job's demand has marked it behind by then,
   * and no later plan reopens an episode nothing would close. Caller holds the job's lock.
   */
  private void closeEpisodes(Job job) {
    Set<String> hosts = new HashSet<>();
    for (Job.Reduce r : job.reduces()) {
      hosts.add(r.host());
    }
    for (String host : hosts) {
      try (Stripes.Held held = hostLocks.hold(host)) {
        achieved.jobEnded(host, job.id());
      }
    }
  }

  private static boolean movedMaterially(long before, long after, long now) {
    long shift = Math.abs(after - before);
    return shift > MIN_UPDATE_SHIFT_NANOS
        && shift > MIN_UPDATE_SHIFT_SHARE * Math.max(0, before - now);
  }

  /** The published demands of the jobs shuffling on {@code host}. */
  private List<Demand> demandsOn(String host) {
    List<Demand> on = new ArrayList<>();
    for (Job job : registry.shufflingOn(host)) {
      Demand d = demands.getOrDefault(job.id(), Map.of()).get(host);
      if (d != null) {
        on.add(d);
      }
    }
    return on;
  }

  /**
   * Republishes {@code job}'s demand on the hosts it shuffles on (none once it finished):
   * computed afresh on {@code changed} hosts (null: all), kept on the others, unless its map
   * slots come from container counts, which every reduce start or shuffle end moves. Each
   * host's demand is one immutable record, replaced whole, so a plan reads a consistent one;
   * a report that touched one host costs O(1), not O(the job's reduces). Caller holds the
   * job's lock.
   */
  private void publishDemands(Job job, Set<String> changed) {
    if (job.finished()) {
      demands.remove(job.id());
      return;
    }
    Map<String, Demand> byHost = demands.computeIfAbsent(job.id(),
        j -> new ConcurrentHashMap<>());
    if (changed == null || job.mapSlotsFromContainers() >= 0) {
      Set<String> shuffling = new HashSet<>();
      for (Job.Reduce r : job.reduces()) {
        if (r.shuffling()) {
          shuffling.add(r.host());
        }
      }
      byHost.keySet().retainAll(shuffling);
      shuffling.forEach(h -> byHost.put(h, demand(job, h)));
      return;
    }
    for (String h : changed) {
      if (job.shufflingOn(h).isEmpty()) {
        byHost.remove(h);
      } else {
        byHost.put(h, demand(job, h));
      }
    }
  }

  private static Demand demand(Job job, String host) {
    long remaining = 0;
    for (Job.Reduce r : job.shufflingOn(host)) {
      remaining += job.remainingBytes(r);
    }
    int mapsLeft = Math.max(0, job.totalMaps() - job.mapsDone());
    long median = job.medianMapRunTimeNanos();
    long waves = 0;
    long lastMapFinish = 0;
    if (mapsLeft > 0 && median >= 0) {
      // §2.2: remaining maps run in waves over the slots the job holds; each wave takes about
      // the median map length, starting when the last map finished and freed a slot.
      int fromContainers = job.mapSlotsFromContainers();
      int slots = job.mapsRunning() > 0 ? job.mapsRunning()
          : fromContainers > 0 ? fromContainers : mapsLeft;
      waves = (mapsLeft + slots - 1) / slots;
      lastMapFinish = job.lastMapCompletionUnixNanos() + waves * median;
    }
    return new Demand(job.id(), remaining, mapsLeft, lastMapFinish, waves, median,
        job.flowingOn(host));
  }

  /**
   * Queues {@code job}'s new deadline on {@code host} for every agent following one of its flows
   * there. Runs under the host's lock, without the job's: it reads only what is safe to read
   * concurrently (interest, reduce hosts, the policy decision).
   */
  private void pushJob(Job job, String host, Deadline d, long now, PolicyUpdateHub.Outbox out) {
    if (job == null) {
      return;
    }
    PolicyDecision decision = JobRegistry.decision(job, policies);
    for (Job.Reduce r : job.reducesOn(host)) {
      hub.interestIn(job.id(), r.id()).forEach((agent, flows) -> flows.forEach((flow, bytes) -> {
        hub.queue(out, agent, PolicyUpdate.of(now, policyFor(host, job.id(), flow, d, bytes,
            now, decision)));
        updatesSent.increment();
      }));
    }
  }

  /** Importance, phi, mode or quench may have changed for any job: re-send interested flows. */
  private void pushPolicyChange() {
    long now = nowUnixNanos();
    for (Job job : List.copyOf(registry.runningJobs())) {
      PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
      try (Stripes.Held held = jobLocks.hold(job.id())) {
        if (!job.finished()) {
          pushJobEverywhere(job, now, out);
        }
      }
      hub.deliver(out);
    }
  }

  /** Hosts where {@code job} has a reduce still shuffling. */
  private static Set<String> shufflingHosts(Job job) {
    Set<String> hosts = new HashSet<>();
    for (Job.Reduce r : job.reduces()) {
      if (r.shuffling()) {
        hosts.add(r.host());
      }
    }
    return hosts;
  }

  /** Re-sends a job's current policies to every agent interested in it; holds its lock. */
  private void pushJobEverywhere(Job job, long now, PolicyUpdateHub.Outbox out) {
    for (String host : shufflingHosts(job)) {
      Deadline d = planned(host, job.id());
      if (d != null) {
        pushJob(job, host, d, now, out);
      }
    }
  }

  private static String state(Job j) {
    if (!j.finished()) {
      return "running";
    }
    return j.timedOut() ? "timed out" : j.succeeded() ? "succeeded" : "failed";
  }

  private JobView lockedView(Job j, long now) {
    try (Stripes.Held held = jobLocks.hold(j.id())) {
      return view(j, now);
    }
  }

  private JobView view(Job j, long now) {
    FlowLog.Tally t = flowLog.tally(j.id());
    List<JobView.ReduceView> reduces = new ArrayList<>();
    for (Job.Reduce r : j.reduces()) {
      Deadline d = r.shuffling() ? planned(r.host(), j.id()) : null;
      // with the order policy flows get no deadline: the view shows the class instead
      reduces.add(new JobView.ReduceView(r.id(), r.host(), r.shuffleStartUnixNanos(),
          r.shuffleFinishUnixNanos(), r.fetchedBytes(), r.shuffling() ? j.remainingBytes(r) : 0,
          d == null || orderOnly ? 0 : d.unixNanos(),
          d == null ? "" : orderOnly ? orderReason(r.host(), d) : d.reason()));
    }
    return new JobView(j.id(), j.conf().jobName(), j.conf().user(), j.conf().queue(),
        j.conf().priority(), state(j),
        j.totalMaps(), j.mapsDone(), j.totalReduces(), j.startUnixNanos(), j.finishUnixNanos(),
        j.finished() ? j.finishUnixNanos() - j.startUnixNanos() : 0, j.shuffleTimeNanos(now),
        t.total(), t.met(), t.metRatio(), JobRegistry.decision(j, policies), reduces);
  }
}
