package io.datcp.agent.kernel;

/**
 * What the agent writes for a flow (struct datcp_flow_meta), in natural units; the kernel's
 * fixed point is made by {@link DatcpKernel}.
 *
 * @param sizeBytes bytes of this flow (epoch); the size is always known to the agent
 * @param deadlineNs absolute CLOCK_MONOTONIC deadline, nanoseconds; 0 = none
 * @param startNs CLOCK_MONOTONIC start (registration), nanoseconds; 0 = when the kernel first
 *     sees the epoch
 * @param epoch flow number on its connection (from 1)
 * @param importance importance I of Algorithm 1, in [0, 10]
 * @param phi phi of Algorithm 1, in [0, 1]
 * @param mode congestion-control flavour
 * @param quench what Algorithm 2 does to the flow
 * @param resume the resume order counter (mod 256): a change lifts a quench, the quench stays
 *     armed; writers carry the kernel's current value so that a rewrite is not a resume
 */
public record FlowMeta(long sizeBytes, long deadlineNs, long startNs, int epoch,
    double importance, double phi, Mode mode, Quench quench, int resume) {

  /** A registration with resume counter 0 (a new epoch). */
  public FlowMeta(long sizeBytes, long deadlineNs, long startNs, int epoch, double importance,
      double phi, Mode mode, Quench quench) {
    this(sizeBytes, deadlineNs, startNs, epoch, importance, phi, mode, quench, 0);
  }

  /** enum datcp_mode. */
  public enum Mode {
    RENO(0), DATCP(1), DCTCP(2), D2TCP(3), PD2TCP(4);

    final int code;

    Mode(int code) {
      this.code = code;
    }

    static Mode of(int code) {
      for (Mode m : values()) {
        if (m.code == code) {
          return m;
        }
      }
      throw new IllegalArgumentException("unknown datcp_mode " + code);
    }
  }

  /** enum datcp_quench_mode. */
  public enum Quench {
    OFF(0), SUSPEND(1), KILL(2);

    final int code;

    Quench(int code) {
      this.code = code;
    }

    static Quench of(int code) {
      for (Quench q : values()) {
        if (q.code == code) {
          return q;
        }
      }
      throw new IllegalArgumentException("unknown datcp_quench_mode " + code);
    }
  }

  /** The same registration carrying resume counter r. */
  public FlowMeta withResume(int r) {
    return new FlowMeta(sizeBytes, deadlineNs, startNs, epoch, importance, phi, mode, quench,
        r & 0xff);
  }
}
