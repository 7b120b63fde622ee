package io.datcp.agent.kernel;

/**
 * One event of the congestion control's ring buffer (struct datcp_event).
 *
 * @param key the flow's 4-tuple
 * @param type what happened
 * @param epoch the flow (epoch) it happened to
 * @param fctNs FINISHED: completion time, nanoseconds
 * @param met FINISHED: deadline met (also true without a deadline)
 * @param precedence QUENCH: precedence P when quenched
 * @param quenched QUENCH: SUSPEND or KILL
 */
public record KernelEvent(FlowTuple key, Type type, int epoch, long fctNs, boolean met,
    double precedence, FlowMeta.Quench quenched) {

  /** enum datcp_event_type; UNKNOWN for types added to the kernel after this agent. */
  public enum Type {
    FINISHED, QUENCH, UNKNOWN
  }
}
