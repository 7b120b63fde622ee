package io.datcp.scheduler.serve;

import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.plan.DeadlinePlanner.Deadline;
import io.datcp.scheduler.plan.LiveJobs;
import io.datcp.scheduler.plan.Replanner;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.policy.PolicyDecision;
import io.datcp.scheduler.policy.PolicyRule;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Optional;

/**
 * Policy updates to agents: a job's new deadline on a host (from a re-plan) or its new rule
 * decision (attributes learnt, rules changed) becomes a {@link PolicyUpdate} for every agent
 * following one of its flows there, queued in the caller's outbox. Also the operator's rule
 * changes, which re-send every running job's policies.
 */
public final class PolicyPushes {
  private final LiveJobs live;
  private final PolicyBook policies;
  private final FlowPolicies flowPolicies;
  private final PolicyUpdateHub hub;
  private final Counter updatesSent;

  public PolicyPushes(LiveJobs live, PolicyBook policies, FlowPolicies flowPolicies,
      PolicyUpdateHub hub, MeterRegistry meters) {
    this.live = live;
    this.policies = policies;
    this.flowPolicies = flowPolicies;
    this.hub = hub;
    updatesSent = Counter.builder("datcp.policy.updates").description("Policy updates pushed")
        .register(meters);
    // Any scheduler's rule change, this one's or (HA mode) another's seen in ZooKeeper.
    policies.onChange(this::pushPolicyChange);
  }

  /** What a re-plan's news becomes: updates queued in {@code out}. */
  public Replanner.Moves into(PolicyUpdateHub.Outbox out) {
    return (job, host, d, now) -> pushJob(job, host, d, now, out);
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
    PolicyDecision decision = Decisions.of(job, policies);
    for (Job.Reduce r : job.reducesOn(host)) {
      hub.interestIn(job.id(), r.id()).forEach((agent, flows) -> flows.forEach((flow, bytes) -> {
        hub.queue(out, agent, PolicyUpdate.of(now, flowPolicies.policyFor(host, job.id(), flow,
            d, bytes, now, decision)));
        updatesSent.increment();
      }));
    }
  }

  /** Re-sends a job's current policies to every agent interested in it; holds its lock. */
  public void pushJobEverywhere(Job job, long now, PolicyUpdateHub.Outbox out) {
    for (String host : Replanner.shufflingHosts(job)) {
      Deadline d = live.plan().planned(host, job.id());
      if (d != null) {
        pushJob(job, host, d, now, out);
      }
    }
  }

  // ---- operator policy ------------------------------------------------------------------------

  public List<PolicyRule> listPolicies() {
    return policies.list();
  }

  public Optional<PolicyRule> getPolicy(String name) {
    return policies.get(name);
  }

  public PolicyRule putPolicy(PolicyRule rule) {
    return policies.put(rule);
  }

  public List<PolicyRule> replacePolicies(List<PolicyRule> rules) {
    return policies.replaceAll(rules);
  }

  public boolean deletePolicy(String name) {
    return policies.delete(name);
  }

  /** Importance, phi, mode or quench may have changed for any job: re-send interested flows. */
  private void pushPolicyChange() {
    long now = live.now();
    for (Job job : List.copyOf(live.registry().runningJobs())) {
      PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
      try (Stripes.Held held = live.locks().hold(job.id())) {
        if (!job.finished()) {
          pushJobEverywhere(job, now, out);
        }
      }
      hub.deliver(out);
    }
  }
}
