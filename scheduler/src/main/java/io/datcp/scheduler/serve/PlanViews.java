package io.datcp.scheduler.serve;

import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.plan.DeadlinePlanner.Deadline;
import io.datcp.scheduler.plan.LiveJobs;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.policy.PolicyDecision;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

/**
 * Operators' view of the plans (the dashboard's host and job pages): per reducer host, the jobs
 * in the planner's order with the policy their flows are told now and each flow in flight that
 * an agent looked up; a running job's map completions. Read-only: unlike a lookup it never
 * re-plans, learns maps or registers interest, so a stale plan is shown as it is.
 */
public final class PlanViews {
  /**
   * A flow an agent looked up and follows, with the policy an update would carry now.
   *
   * @param agentHost the agent that looked it up (the map output's host)
   * @param bytes the size it last asked about, bytes
   */
  public record FlowInFlight(String agentHost, int reduceId, long bytes, FlowPolicy policy) {}

  /**
   * One job on one reducer host.
   *
   * @param rank place in the host's smallest-remaining-shuffle-first order, 1 first; 0 when the
   *     job waits for maps (after every shuffle-bound job); -1 when the host has no plan for it
   *     (no bytes known yet)
   * @param firstFlowUnixNanos when its first flow to the host looked up a policy; 0 before
   * @param remainingBytes bytes its reduces there still fetch from maps that are done
   * @param fetchedBytes bytes its reduces there fetched
   * @param policy what a flow of the remaining bytes is told now (deadline, importance, phi,
   *     mode, quench mode, reason)
   */
  public record PlannedJob(String jobId, String queue, String user, int rank,
      int mapsDone, int totalMaps, long shuffleStartUnixNanos, long firstFlowUnixNanos,
      long remainingBytes, long fetchedBytes, List<Integer> reduces, FlowPolicy policy,
      List<FlowInFlight> flows) {}

  /**
   * A reducer host's downlink plan.
   *
   * @param jobs in the planner's order: shuffle-bound by rank, then waiting, then unplanned
   */
  public record HostPlan(String host, long nowUnixNanos, List<PlannedJob> jobs) {}

  private final LiveJobs live;
  private final PolicyBook policies;
  private final FlowPolicies flowPolicies;
  private final PolicyUpdateHub hub;

  public PlanViews(LiveJobs live, PolicyBook policies, FlowPolicies flowPolicies,
      PolicyUpdateHub hub) {
    this.live = live;
    this.policies = policies;
    this.flowPolicies = flowPolicies;
    this.hub = hub;
  }

  /** The clock's now, Unix nanoseconds. */
  public long nowUnixNanos() {
    return live.now();
  }

  /** Hosts where a running job has a reduce still shuffling, sorted. */
  public List<String> reducerHosts() {
    return List.copyOf(new TreeSet<>(live.registry().shufflingHosts()));
  }

  /** {@code host}'s plan; empty jobs when nothing shuffles there. */
  public HostPlan host(String host) {
    long now = live.now();
    List<PlannedJob> jobs = new ArrayList<>();
    for (Job j : List.copyOf(live.registry().shufflingOn(host))) {
      try (Stripes.Held held = live.locks().hold(j.id())) {
        if (!j.finished()) {
          planned(j, host, now).ifPresent(jobs::add);
        }
      }
    }
    jobs.sort(Comparator.comparingInt((PlannedJob p) -> p.rank() > 0 ? p.rank()
        : p.rank() == 0 ? Integer.MAX_VALUE - 1 : Integer.MAX_VALUE)
        .thenComparing(PlannedJob::jobId));
    return new HostPlan(host, now, jobs);
  }

  /** A running job's plan on each host it still shuffles on; empty when it is not running. */
  public List<HostPlan> job(String jobId) {
    long now = live.now();
    List<HostPlan> out = new ArrayList<>();
    try (Stripes.Held held = live.locks().hold(jobId)) {
      Job j = live.registry().running(jobId);
      if (j == null) {
        return List.of();
      }
      TreeSet<String> hosts = new TreeSet<>();
      j.reduces().forEach(r -> hosts.add(r.host()));
      for (String host : hosts) {
        planned(j, host, now).ifPresent(p -> out.add(new HostPlan(host, now, List.of(p))));
      }
    }
    return out;
  }

  /**
   * Jobs in the finished history that ended at or after {@code sinceUnixNanos} and had a reduce
   * on {@code host}, most recent first. Reads no job's views: a host page polls this every second.
   */
  public List<String> finishedOn(String host, long sinceUnixNanos) {
    List<Job> done = live.registry().finishedJobs();
    List<String> ids = new ArrayList<>();
    for (int i = done.size() - 1; i >= 0; i--) {
      Job j = done.get(i);
      if (j.finishUnixNanos() >= sinceUnixNanos && j.hasReduceOn(host)) {
        ids.add(j.id());
      }
    }
    return ids;
  }

  /**
   * When the running job's maps completed, sorted, Unix nanoseconds (see {@link
   * Job#mapCompletionTimes}); empty when it is not running.
   */
  public long[] mapCompletions(String jobId) {
    try (Stripes.Held held = live.locks().hold(jobId)) {
      Job j = live.registry().running(jobId);
      return j == null ? new long[0] : j.mapCompletionTimes();
    }
  }

  /** Caller holds the job's lock. */
  private Optional<PlannedJob> planned(Job j, String host, long now) {
    List<Job.Reduce> shuffling = j.shufflingOn(host);
    if (shuffling.isEmpty()) {
      return Optional.empty();
    }
    PolicyDecision decision = Decisions.of(j, policies);
    Deadline d = live.plan().planned(host, j.id());
    long remaining = 0;
    long fetched = 0;
    long firstFlow = 0;
    long shuffleStart = Long.MAX_VALUE;
    List<Integer> reduceIds = new ArrayList<>();
    List<FlowInFlight> flows = new ArrayList<>();
    for (Job.Reduce r : shuffling) {
      remaining += j.remainingBytes(r);
      fetched += r.fetchedBytes();
      shuffleStart = Math.min(shuffleStart, r.shuffleStartUnixNanos());
      if (r.firstFlowUnixNanos() != 0) {
        firstFlow = firstFlow == 0 ? r.firstFlowUnixNanos()
            : Math.min(firstFlow, r.firstFlowUnixNanos());
      }
      reduceIds.add(r.id());
      hub.interestIn(j.id(), r.id()).forEach((agent, byFlow) -> byFlow.forEach((ref, bytes) ->
          flows.add(new FlowInFlight(agent, r.id(), bytes, policy(j, host, ref, d, bytes, now,
              decision)))));
    }
    flows.sort(Comparator.comparing(FlowInFlight::agentHost)
        .thenComparingInt(FlowInFlight::reduceId));
    PolicyUpdateHub.FlowRef any = new PolicyUpdateHub.FlowRef(reduceIds.get(0), null);
    return Optional.of(new PlannedJob(j.id(), j.conf().queue(), j.conf().user(),
        d == null ? -1 : d.rank(), j.mapsDone(), j.totalMaps(), shuffleStart, firstFlow,
        remaining, fetched, reduceIds, policy(j, host, any, d, remaining, now, decision), flows));
  }

  private FlowPolicy policy(Job j, String host, PolicyUpdateHub.FlowRef ref, Deadline d,
      long bytes, long now, PolicyDecision decision) {
    return d == null
        ? flowPolicies.noDeadline(j.id(), ref, decision, "no bytes of this job known on " + host
            + " yet: no deadline until partition sizes are reported")
        : flowPolicies.policyFor(host, j.id(), ref, d, bytes, now, decision);
  }
}
