package io.datcp.agent.flows;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.kernel.FlowMeta;
import io.datcp.proto.v1.FlowMode;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.QuenchMode;

/**
 * Turns the scheduler's policy (wall clock, proto enums) into the kernel's registration
 * (CLOCK_MONOTONIC, kmod enums), and replaces what is absurd in an answer by the default: a
 * wrong scheduler must not make a flow worse than plain TCP.
 */
final class PolicyTranslator {
  /** How far after now a deadline already past is written: the write itself takes time. */
  static final long OVERDUE_GRACE_NANOS = 50_000_000L;

  private final FlowMode defaultMode;
  private final QuenchMode defaultQuench;
  private final double defaultImportance;
  private final double defaultPhi;
  private final long maxDeadlineNanos;

  PolicyTranslator(AgentConf conf) {
    defaultMode = conf.get(AgentConf.DEFAULT_MODE);
    defaultQuench = conf.get(AgentConf.DEFAULT_QUENCH_MODE);
    defaultImportance = conf.get(AgentConf.DEFAULT_IMPORTANCE);
    defaultPhi = conf.get(AgentConf.DEFAULT_PHI);
    maxDeadlineNanos = conf.get(AgentConf.MAX_DEADLINE_MS) * 1_000_000L;
  }

  /** The policy of a flow the scheduler has not answered for (yet). */
  FlowPolicy defaultPolicy(String jobId, int reduceId) {
    return FlowPolicy.newBuilder().setJobId(jobId).setReduceId(reduceId)
        .setImportance(defaultImportance).setPhi(defaultPhi).setMode(defaultMode)
        .setQuenchMode(defaultQuench).setReason("agent default: no answer from the scheduler")
        .build();
  }

  /**
   * The answer with every out-of-range field replaced by the default; deadlines further than
   * policy.maxDeadlineMillis from now (either way) become "no deadline".
   */
  FlowPolicy sanitize(FlowPolicy p, long nowUnixNanos) {
    FlowPolicy.Builder b = p.toBuilder();
    if (!(p.getImportance() >= 0 && p.getImportance() <= 10)) {
      b.setImportance(defaultImportance);
    }
    if (!(p.getPhi() >= 0 && p.getPhi() <= 1)) {
      b.setPhi(defaultPhi);
    }
    if (p.getMode() == FlowMode.FLOW_MODE_UNSPECIFIED || p.getMode() == FlowMode.UNRECOGNIZED) {
      b.setMode(defaultMode);
    }
    if (p.getQuenchMode() == QuenchMode.QUENCH_MODE_UNSPECIFIED
        || p.getQuenchMode() == QuenchMode.UNRECOGNIZED) {
      b.setQuenchMode(defaultQuench);
    }
    long d = p.getDeadlineUnixNanos();
    if (d != 0 && (d < 0 || Math.abs(d - nowUnixNanos) > maxDeadlineNanos)) {
      b.setDeadlineUnixNanos(0).setDeadlineNanos(0).setDesiredRateBitsPerSecond(0);
    }
    return b.build();
  }

  /**
   * The kernel registration of a flow under a (sanitized) policy.
   *
   * @param startMono CLOCK_MONOTONIC registration time
   * @param nowMono CLOCK_MONOTONIC now, read next to nowUnix
   * @param nowUnix wall clock now, nanoseconds since the epoch
   */
  FlowMeta meta(FlowPolicy p, long size, int epoch, long startMono, long nowMono, long nowUnix) {
    long deadline = 0;
    if (p.getDeadlineUnixNanos() != 0) {
      // wall clock -> CLOCK_MONOTONIC; the kernel refuses a deadline already past, so such a
      // one lands just after now and the kernel's overdue give-up takes the flow
      deadline = Math.max(nowMono + (p.getDeadlineUnixNanos() - nowUnix),
          nowMono + OVERDUE_GRACE_NANOS);
    }
    return new FlowMeta(size, deadline, startMono, epoch, p.getImportance(), p.getPhi(),
        mode(p.getMode()), quench(p.getQuenchMode()));
  }

  /** FLOW_MODE_OFF is written as ECN reno: what datcp does for any socket without a policy. */
  static FlowMeta.Mode mode(FlowMode m) {
    switch (m) {
      case FLOW_MODE_DATCP:
        return FlowMeta.Mode.DATCP;
      case FLOW_MODE_PD2TCP:
        return FlowMeta.Mode.PD2TCP;
      case FLOW_MODE_D2TCP:
        return FlowMeta.Mode.D2TCP;
      case FLOW_MODE_DCTCP:
        return FlowMeta.Mode.DCTCP;
      default:
        return FlowMeta.Mode.RENO;
    }
  }

  static FlowMeta.Quench quench(QuenchMode q) {
    switch (q) {
      case QUENCH_MODE_SUSPEND:
        return FlowMeta.Quench.SUSPEND;
      case QUENCH_MODE_KILL:
        return FlowMeta.Quench.KILL;
      case QUENCH_MODE_OFF:
        return FlowMeta.Quench.OFF;
      default:
        return FlowMeta.Quench.OFF;
    }
  }
}
