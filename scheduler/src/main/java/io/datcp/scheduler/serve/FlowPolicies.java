package io.datcp.scheduler.serve;

import io.datcp.scheduler.plan.DeadlinePlanner;
import io.datcp.scheduler.plan.DeadlinePlanner.Deadline;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.PolicyDecision;
import io.datcp.scheduler.policy.QuenchMode;

/**
 * What one flow is told, and why: its job's deadline on the reducer host (the plan) combined
 * with the operator's decision for the job (the rules), or with planner.policy=order the job's
 * place in the host's order as a precedence class. Pure: no state but the configuration.
 */
public final class FlowPolicies {
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

  private final double firstJobImportance;
  private final boolean waitingJobsYield;
  /** planner.policy=order: the order alone, as precedence classes (issue 16's prio). */
  private final boolean orderOnly;

  /**
   * @param firstJobImportance planner.firstJobImportance
   * @param waitingJobsYield planner.waitingJobsYield
   * @param orderOnly planner.policy=order
   */
  public FlowPolicies(double firstJobImportance, boolean waitingJobsYield, boolean orderOnly) {
    this.firstJobImportance = firstJobImportance;
    this.waitingJobsYield = waitingJobsYield;
    this.orderOnly = orderOnly;
  }

  /** The policy of a flow of {@code bytes} whose job has deadline {@code d} on {@code host}. */
  FlowPolicy policyFor(String host, String jobId, PolicyUpdateHub.FlowRef flow,
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

  /** The policy of a flow outside any plan, with {@code reason}. */
  FlowPolicy noDeadline(String jobId, PolicyUpdateHub.FlowRef flow,
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

  /** planner.policy=order: why a job on {@code host} planned as {@code d} gets its class. */
  static String orderReason(String host, Deadline d) {
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
}
