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
 * @param quenched QUENCH: SUSPEND or KILL; CLOSED: the quench state at close
 * @param bytesAcked CLOSED: bytes acknowledged in the epoch
 * @param finished CLOSED: every byte of the epoch was acknowledged
 * @param resumeReason RESUME: why the kernel lifted the quench
 */
public record KernelEvent(FlowTuple key, Type type, int epoch, long fctNs, boolean met,
    double precedence, FlowMeta.Quench quenched, long bytesAcked, boolean finished,
    ResumeReason resumeReason) {

  /** An event without the CLOSED and RESUME fields (FINISHED, QUENCH). */
  public KernelEvent(FlowTuple key, Type type, int epoch, long fctNs, boolean met,
      double precedence, FlowMeta.Quench quenched) {
    this(key, type, epoch, fctNs, met, precedence, quenched, 0, false, ResumeReason.NONE);
  }

  /**
   * enum datcp_event_type: CLOSED = the socket closed (the kernel has already deleted the
   * flow's registration and statistics); RESUME = the kernel lifted a quench on its own.
   * UNKNOWN for types added to the kernel after this agent.
   */
  public enum Type {
    FINISHED, QUENCH, CLOSED, RESUME, UNKNOWN
  }

  /** enum datcp_resume_reason. */
  public enum ResumeReason {
    NONE, QUIET, TIMEOUT;

    static ResumeReason of(int code) {
      return code == 1 ? QUIET : code == 2 ? TIMEOUT : NONE;
    }
  }
}
