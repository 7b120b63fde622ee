package io.datcp.scheduler;

import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.common.UnixNanos;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.dashboard.JobMetrics;
import io.datcp.scheduler.flows.FlowKey;
import io.datcp.scheduler.flows.FlowLog;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.ingest.Ack;
import io.datcp.scheduler.ingest.Caller;
import io.datcp.scheduler.ingest.HostRateLimiter;
import io.datcp.scheduler.ingest.JobEnds;
import io.datcp.scheduler.ingest.Reports;
import io.datcp.scheduler.ingest.YarnApps;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobLimits;
import io.datcp.scheduler.jobs.JobRegistry;
import io.datcp.scheduler.jobs.JobView;
import io.datcp.scheduler.plan.LiveJobs;
import io.datcp.scheduler.plan.PlannerPolicy;
import io.datcp.scheduler.plan.Replanner;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.policy.PolicyRule;
import io.datcp.scheduler.serve.FlowPolicies;
import io.datcp.scheduler.serve.FlowPolicy;
import io.datcp.scheduler.serve.JobViews;
import io.datcp.scheduler.serve.PlanViews;
import io.datcp.scheduler.serve.Lookups;
import io.datcp.scheduler.serve.PolicyPushes;
import io.datcp.scheduler.serve.PolicyUpdateHub;
import io.datcp.scheduler.switches.SwitchBook;
import io.datcp.scheduler.switches.SwitchPort;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The scheduler's steps wired together from its configuration, and one front over them for
 * in-process tests and benchmarks. It holds no behaviour of its own: a report goes through
 * {@link Reports} (ingest: checks, dedup, the job model), {@link Replanner} (plan: deadlines
 * per reducer host) and {@link PolicyPushes} (serve: updates to agents); agents' lookups and
 * update streams are {@link Lookups}, operators' views {@link JobViews}. The adapters in
 * {@code api} take the steps themselves.
 *
 * <p>Concurrency: there is no global lock. Everything about one job (its state, the agents'
 * interest in its flows, its published demands) changes only under that job's lock, striped by
 * job id ({@link Stripes}); a call naming several jobs takes their stripes in index order. A
 * reducer host's plan is computed under that host's lock (held by {@link Replanner}) from the
 * demands its jobs published, so reports for jobs on different hosts never wait for each other.
 * Lock order: job stripes, then one host stripe; never a job stripe under a host stripe. Updates
 * are collected per call and delivered after its locks are released.
 */
public final class SchedulerService {
  private final Clock clock;
  private final Reports reports;
  private final JobEnds jobEnds;
  private final Lookups lookups;
  private final JobViews views;
  private final PlanViews planViews;
  private final PolicyPushes rules;
  private final SwitchBook switches;
  private final JobRegistry registry;
  private final FlowLog flowLog;
  private final Stripes jobLocks;

  /**
   * @param yarn the ResourceManager, asked how jobs ended and, unless they come from reports
   *     (jobs.attributesFrom=reports), for job attributes; null when none is configured (then
   *     every job gets the default policy and ends only when reported or idle)
   */
  public SchedulerService(SchedulerConf conf, PolicyBook policies, Clock clock,
      HostRateLimiter limiter, MeterRegistry meters, YarnApps yarn) {
    this.clock = clock;
    Stripes jobLocks = new Stripes(Replanner.STRIPES);
    this.jobLocks = jobLocks;
    JobRegistry registry = new JobRegistry(conf.get(SchedulerConf.RETAIN_FINISHED_JOBS),
        conf.get(SchedulerConf.JOB_ATTRIBUTES_FROM).equals("reports"), limits(conf));
    FlowLog flowLog = new FlowLog(conf.get(SchedulerConf.RETAIN_FLOWS_PER_JOB),
        conf.get(SchedulerConf.RETAIN_FLOWS_TOTAL));
    this.flowLog = flowLog;
    PolicyUpdateHub hub = new PolicyUpdateHub(conf.get(SchedulerConf.MAX_INTEREST_PER_HOST),
        conf.get(SchedulerConf.MAX_INTEREST), conf.get(SchedulerConf.MAX_STREAMS_PER_HOST));
    boolean orderOnly = conf.get(SchedulerConf.PLANNER_POLICY) == PlannerPolicy.ORDER;
    Replanner plan = new Replanner(registry, conf.get(SchedulerConf.DOWNLINK_BITS_PER_SECOND),
        conf.get(SchedulerConf.TARGET_UTILISATION), orderOnly);
    FlowPolicies flowPolicies = new FlowPolicies(conf.get(SchedulerConf.FIRST_JOB_IMPORTANCE),
        conf.get(SchedulerConf.WAITING_JOBS_YIELD), orderOnly);
    this.switches = new SwitchBook(conf.switches(), this::nowUnixNanos);
    LiveJobs live = new LiveJobs(jobLocks, registry, plan, clock);
    this.rules = new PolicyPushes(live, policies, flowPolicies, hub, meters);
    this.reports = new Reports(live, limiter,
        TimeUnit.SECONDS.toNanos(conf.get(SchedulerConf.DEDUP_IDLE_SECONDS)),
        conf.get(SchedulerConf.MAX_REPORTERS_PER_HOST), conf.get(SchedulerConf.REPORT_MAX_EVENTS),
        yarn, TimeUnit.MILLISECONDS.toNanos(
            conf.get(SchedulerConf.YARN_RM_REFRESH_MIN_INTERVAL_MILLIS)),
        rules, hub, flowLog, meters);
    this.jobEnds = new JobEnds(live, yarn, rules, hub, flowLog,
        TimeUnit.SECONDS.toNanos(conf.get(SchedulerConf.JOB_IDLE_TIMEOUT_SECONDS)),
        TimeUnit.MILLISECONDS.toNanos(conf.get(SchedulerConf.JOB_END_POLL_MILLIS)), meters);
    this.lookups = new Lookups(live, policies, flowPolicies, rules, hub, meters);
    this.views = new JobViews(live, policies, flowLog);
    this.planViews = new PlanViews(live, policies, flowPolicies, hub);
    registry.onRetired(new JobMetrics(meters)::retired);
    Map<Replanner.Decision, Counter> decided = new EnumMap<>(Replanner.Decision.class);
    for (Replanner.Decision d : Replanner.Decision.values()) {
      decided.put(d, Counter.builder("datcp.planner.decisions").tag("decision", d.label)
          .description("Plan decisions sent to agents, by what changed for the job on a reducer"
              + " host's downlink").register(meters));
    }
    plan.onDecision(d -> decided.get(d).increment());
    this.registry = registry;
  }

  /** The per-job locks every call takes, for tests that hold one. */
  Stripes jobLocks() {
    return jobLocks;
  }

  /** The bounds on the job model, from their config keys. */
  public static JobLimits limits(SchedulerConf conf) {
    return new JobLimits(conf.get(SchedulerConf.MAX_RUNNING_JOBS),
        conf.get(SchedulerConf.MAX_MAPS), conf.get(SchedulerConf.MAX_REDUCES),
        conf.get(SchedulerConf.MAX_REDUCES_PER_HOST), conf.get(SchedulerConf.MAX_SHUFFLE_ENTRIES),
        conf.get(SchedulerConf.MAX_SHUFFLE_ENTRIES_PER_HOST), conf.get(SchedulerConf.MAX_MAP_IDS));
  }

  // ---- the steps, for the adapters ------------------------------------------------------------

  public Reports reports() {
    return reports;
  }

  public JobEnds jobEnds() {
    return jobEnds;
  }

  public Lookups lookups() {
    return lookups;
  }

  public JobViews views() {
    return views;
  }

  /** Reducer hosts' plans as operators see them (dashboard). */
  public PlanViews planViews() {
    return planViews;
  }

  /** Operator rules; changes are pushed to agents. */
  public PolicyPushes rules() {
    return rules;
  }

  public SwitchBook switches() {
    return switches;
  }

  // ---- one front over them, for tests and benchmarks ------------------------------------------

  /** Waits for the ResourceManager where the caller's claims need it. */
  public Ack report(Caller caller, String reporterId, long batchId, List<JobEvent> events) {
    return reports.report(caller, reporterId, batchId, events).join();
  }

  /** Development shortcut: an unauthenticated batch without batch id. */
  public int report(String reporterHost, List<JobEvent> events) {
    return report(new Caller(reporterHost, false), "", 0, events).accepted();
  }

  public int expireIdleJobs() {
    return jobEnds.expireIdleJobs();
  }

  public CompletableFuture<Integer> pollJobEnds() {
    return jobEnds.pollJobEnds();
  }

  public FlowPolicy lookup(String agentHost, String jobId, int reduceId, long bytes,
      List<Integer> mapIds, FlowKey flow) {
    return lookups.lookup(agentHost, jobId, reduceId, bytes, mapIds, flow);
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

  public Runnable watch(String agentHost, boolean resync, PolicyUpdateHub.Sink sink) {
    return lookups.watch(agentHost, resync, sink);
  }

  public void slowWatcherClosed() {
    lookups.slowWatcherClosed();
  }

  public Ack reportOutcomes(Caller caller, String reporterId, long batchId,
      List<FlowOutcome> outcomes) {
    return reports.reportOutcomes(caller, reporterId, batchId, outcomes);
  }

  /** Development shortcut: unauthenticated outcomes without batch id. */
  public int reportOutcomes(String agentHost, List<FlowOutcome> outcomes) {
    return reportOutcomes(new Caller(agentHost, false), "", 0, outcomes).accepted();
  }

  public SwitchBook.SwitchConfig switchConfig(String name) {
    return switches.get(name);
  }

  public List<String> switchNames() {
    return switches.names();
  }

  public SwitchBook.SwitchConfig putSwitchConfig(String name, List<SwitchPort> ports) {
    return switches.put(name, ports);
  }

  public Runnable watchSwitch(String name, Consumer<SwitchBook.SwitchConfig> watcher) {
    return switches.watch(name, watcher);
  }

  public List<PolicyRule> listPolicies() {
    return rules.listPolicies();
  }

  public Optional<PolicyRule> getPolicy(String name) {
    return rules.getPolicy(name);
  }

  public PolicyRule putPolicy(PolicyRule rule) {
    return rules.putPolicy(rule);
  }

  public List<PolicyRule> replacePolicies(List<PolicyRule> rules) {
    return this.rules.replacePolicies(rules);
  }

  public boolean deletePolicy(String name) {
    return rules.deletePolicy(name);
  }

  public List<JobView> jobs() {
    return views.jobs();
  }

  public Optional<JobView> job(String jobId) {
    return views.job(jobId);
  }

  public List<FlowOutcome> flows(String jobId, int limit) {
    return views.flows(jobId, limit);
  }

  public FlowLog.Tally overallTally() {
    return views.overallTally();
  }

  public int openWatches() {
    return lookups.openWatches();
  }

  public int runningJobCount() {
    return views.runningJobCount();
  }

  /** Per-map state held against jobs.maxShuffleEntries. */
  public long shuffleEntries() {
    return registry.shuffleEntries();
  }

  /** Interest units {@code agentHost} holds against lookups.maxInterestPerHost. */
  public long interestOf(String agentHost) {
    return lookups.interestOf(agentHost);
  }

  /** Units of flow outcomes kept for the timeline, against flows.retainTotal. */
  public long retainedFlows() {
    return flowLog.retained();
  }

  public long nowUnixNanos() {
    return UnixNanos.now(clock);
  }
}
