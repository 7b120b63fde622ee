package io.datcp.agent.kernel;

/**
 * One emulated switch port (struct datcp_port_config) in natural units.
 *
 * @param rateBitsPerSecond link rate, bits/s
 * @param bufferBytes port buffer, bytes
 * @param mark how the port marks ECN
 * @param redMinBytes RED minimum threshold on the instantaneous queue, bytes
 * @param redMaxBytes RED maximum threshold, bytes
 * @param redMaxP RED max_p, probability in (0, 1]
 * @param kBytes step threshold K (STEP) or ideal threshold K_i (PFDCT), bytes
 * @param dscpBand band (0 served first) of each DSCP 0..63
 */
public record PortSettings(long rateBitsPerSecond, long bufferBytes, Mark mark, long redMinBytes,
    long redMaxBytes, double redMaxP, long kBytes, int[] dscpBand) {

  /** enum datcp_mark_mode, in its order. */
  public enum Mark {
    NONE, RED, STEP, PFDCT
  }
}
