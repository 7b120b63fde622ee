package io.datcp.scheduler.dashboard;

import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.plan.DeadlinePlanner;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.serve.FlowPolicy;

/** What the dashboard says in words about a flow: its outcome and its precedence class. */
final class FlowWords {
  /** kmod's class bounds (datcp_cc.bpf.c datcp_class_dscp): low P < 0.9, high P >= 1.5. */
  private static final double LOW_BELOW = 0.9;
  private static final double HIGH_FROM = 1.5;
  /** kmod's urgency range: U_MIN 0.5 (datcp_core.h); U_max 10 in the tuned profile. */
  private static final double U_MIN = 0.5;
  private static final double U_MAX = 10;
  private static final double NANOS_PER_SECOND = 1e9;

  private FlowWords() {}

  /** How an agent reported the flow ended, in a sentence. */
  static String outcome(FlowOutcome o) {
    if (o.quench() == QuenchOutcome.KILLED) {
      return "killed by quenching (Algorithm 2): it could not make its deadline";
    }
    String quenched = o.quench() == QuenchOutcome.SUSPENDED
        ? "; suspended by quenching (Algorithm 2) on the way" : "";
    if (o.finishUnixNanos() == 0) {
      return "never finished" + quenched;
    }
    String took = "took " + s(o.finishUnixNanos() - o.startUnixNanos());
    if (o.deadlineUnixNanos() == 0) {
      return "no deadline (plain share): " + took + quenched;
    }
    long slack = o.deadlineUnixNanos() - o.finishUnixNanos();
    return (o.met() ? "met its deadline: " + took + ", " + s(slack) + " to spare"
        : "missed its deadline by " + s(-slack) + ": " + took + " of "
            + s(o.deadlineUnixNanos() - o.startUnixNanos()) + " allowed") + quenched;
  }

  /**
   * The kmod precedence class (and DSCP) of a flow told {@code p}: Algorithm 1's P = φI + (1−φ)U
   * over the urgency U the flow can take (1 in the dctcp mode).
   */
  static String precedenceClass(FlowPolicy p) {
    if (p.mode() == FlowMode.OFF) {
      return "none (plain TCP)";
    }
    if (p.mode() != FlowMode.DATCP && p.mode() != FlowMode.DCTCP) {
      return "none (" + p.mode() + " mode)";
    }
    double uLow = p.mode() == FlowMode.DCTCP ? 1 : U_MIN;
    double uHigh = p.mode() == FlowMode.DCTCP ? 1 : U_MAX;
    // Algorithm 1: P = phi * I + (1 - phi) * U
    double low = p.phi() * p.importance() + (1 - p.phi()) * uLow;
    double high = p.phi() * p.importance() + (1 - p.phi()) * uHigh;
    String lowClass = className(low);
    if (lowClass.equals(className(high))) {
      return lowClass;
    }
    return "by urgency: " + lowClass + " to " + className(high) + " (P "
        + DeadlinePlanner.decimal(low, 2) + "-" + DeadlinePlanner.decimal(high, 2) + ")";
  }

  private static String className(double precedence) {
    return precedence < LOW_BELOW ? "low (CS1)" : precedence >= HIGH_FROM ? "high (AF41)"
        : "standard (CS0)";
  }

  private static String s(long nanos) {
    return DeadlinePlanner.decimal(nanos / NANOS_PER_SECOND, 2) + " s";
  }
}
