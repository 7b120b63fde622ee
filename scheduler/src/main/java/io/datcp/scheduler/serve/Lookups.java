package io.datcp.scheduler.serve;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.flows.FlowKey;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobRegistry;
import io.datcp.scheduler.plan.DeadlinePlanner.Deadline;
import io.datcp.scheduler.plan.LiveJobs;
import io.datcp.scheduler.plan.Replanner;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.policy.PolicyDecision;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Agents' side of serving: a flow's policy with its explanation ({@link #lookup}), and the
 * stream of updates for the flows an agent looked up ({@link #watch}). A lookup also tells the
 * job model what it learnt (the flow started, its maps are done, its size), so it may re-plan
 * the flow's host; the re-plan's news is pushed like any other.
 */
public final class Lookups {
  private final LiveJobs live;
  private final PolicyBook policies;
  private final FlowPolicies flowPolicies;
  private final PolicyPushes pushes;
  private final PolicyUpdateHub hub;
  private final Timer lookupTimer;
  private final Counter slowWatchersClosed;

  public Lookups(LiveJobs live, PolicyBook policies, FlowPolicies flowPolicies,
      PolicyPushes pushes, PolicyUpdateHub hub, MeterRegistry meters) {
    this.live = live;
    this.policies = policies;
    this.flowPolicies = flowPolicies;
    this.pushes = pushes;
    this.hub = hub;
    lookupTimer = Timer.builder("datcp.policy.lookup").description("Flow policy lookups")
        .publishPercentiles(0.5, 0.99).register(meters);
    slowWatchersClosed = Counter.builder("datcp.policy.watchers.closed").tag("reason", "slow")
        .description("Update streams closed because the agent read too slowly")
        .register(meters);
    Gauge.builder("datcp.policy.watchers", hub, PolicyUpdateHub::watcherCount)
        .description("Open policy update streams").register(meters);
  }

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
    require(mapIds.stream().allMatch(m -> m >= 0), "mapIds", "must be map indexes >= 0");
    live.registry().limits().mapIds(mapIds, "mapIds");
    if (flow != null) {
      flow.validate("flow.");
      live.registry().limits().mapIds(flow.mapIds(), "flow.mapIds");
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
        try (Stripes.Held held = live.locks().hold(i.jobId())) {
          Job job = live.registry().running(i.jobId());
          Long bytes = hub.interestIn(agentHost, i.jobId(), i.flow());
          if (job != null && bytes != null) {
            long now = live.now();
            gate.sendDirect(PolicyUpdate.of(now, currentPolicy(job, i.flow(), bytes, now, out)));
          }
        }
      }
      gate.sendDirect(new PolicyUpdate(live.now(), null, false, true));
      gate.open();
    }
    hub.deliver(out);
    return gate::stop;
  }

  /**
   * Counts a switch-config stream of {@code host} against watch.maxStreamsPerHost (update
   * streams count in {@link #watch}); run the handle when it ends.
   */
  public Runnable switchStream(String host) {
    hub.openStream(host);
    AtomicBoolean closed = new AtomicBoolean();
    return () -> {
      if (closed.compareAndSet(false, true)) {
        hub.closeStream(host);
      }
    };
  }

  /** Interest units {@code agentHost} holds against lookups.maxInterestPerHost. */
  public long interestOf(String agentHost) {
    return hub.unitsOf(agentHost);
  }

  /** Counts an update stream closed because its agent read too slowly. */
  public void slowWatcherClosed() {
    slowWatchersClosed.increment();
  }

  /** Open policy update streams. */
  public int openWatches() {
    return hub.watcherCount();
  }

  private FlowPolicy explain(String agentHost, String jobId, PolicyUpdateHub.FlowRef flow,
      long bytes, List<Integer> mapIds) {
    long now = live.now();
    FlowPolicy answer;
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    try (Stripes.Held held = live.locks().hold(jobId)) {
      Job job = live.registry().running(jobId);
      if (job == null) {
        answer = flowPolicies.noDeadline(jobId, flow, policies.defaults(),
            "job not known to the scheduler (no running reduce reported): no deadline");
      } else {
        Job.Reduce reduce = job.reduce(flow.reduceId());
        if (reduce != null && reduce.shuffling()) {
          hub.interested(agentHost, jobId, flow, bytes);
          boolean first = JobRegistry.flowStarted(job, reduce, now);
          boolean learnt = live.registry().mapsServed(job, flow.reduceId(), agentHost, mapIds,
              bytes, now);
          if (JobRegistry.sawLookup(job, bytes) || first || learnt) {
            live.plan().publishDemands(job, null, now);
          }
          if (learnt) {
            // maps newly done move the job's demand wherever it shuffles
            live.plan().replan(Replanner.shufflingHosts(job), now, pushes.into(out));
          } else if (first) {
            // §4.4 counts the job's deadline from its flows' start: plan it afresh from now
            live.plan().replan(Set.of(reduce.host()), now, pushes.into(out));
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
    PolicyDecision decision = Decisions.of(job, policies);
    Job.Reduce reduce = job.reduce(flow.reduceId());
    if (reduce == null || !reduce.shuffling()) {
      return flowPolicies.noDeadline(job.id(), flow, decision,
          "reduce " + flow.reduceId() + " is not shuffling: no deadline");
    }
    Deadline d = live.plan().planned(reduce.host(), job.id());
    if (d == null || d.unixNanos() <= now) {
      // The plan went stale (bytes were fetched without a report yet): plan afresh from now.
      live.plan().replan(Set.of(reduce.host()), now, pushes.into(out));
      d = live.plan().planned(reduce.host(), job.id());
    }
    if (d == null) {
      return flowPolicies.noDeadline(job.id(), flow, decision, "no bytes of this job known on "
          + reduce.host() + " yet: no deadline until partition sizes are reported");
    }
    return flowPolicies.policyFor(reduce.host(), job.id(), flow, d, bytes, now, decision);
  }
}
