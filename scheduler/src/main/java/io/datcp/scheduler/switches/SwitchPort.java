package io.datcp.scheduler.switches;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Map;
import java.util.TreeMap;

/**
 * Settings of one switch port (an egress interface of the switch host).
 *
 * @param iface interface name, or "*" for every port not named
 * @param rateBitsPerSecond link rate, bits/s
 * @param bufferBytes port buffer, bytes
 * @param redMinBytes RED thresholds on the instantaneous queue, bytes
 * @param redMaxP RED's max_p, a probability
 * @param kBytes step threshold K (step) or ideal threshold K_i (pfdct), bytes
 * @param dscpBand DSCP (0-63) -> strict-priority band (0 first); unlisted DSCPs go to band 1
 */
public record SwitchPort(@JsonProperty("interface") String iface, long rateBitsPerSecond, long bufferBytes, MarkMode mark,
    long redMinBytes, long redMaxBytes, double redMaxP, long kBytes,
    Map<Integer, Integer> dscpBand) {
  /** Strict-priority bands of the switch (kmod DATCP_BANDS). */
  public static final int BANDS = 3;
  /** kmod's DSCPs of the precedence classes (datcp_cc.bpf.c datcp_class_dscp). */
  public static final int DSCP_AF41 = 34;
  public static final int DSCP_CS0 = 0;
  public static final int DSCP_CS1 = 8;

  public SwitchPort {
    dscpBand = dscpBand == null ? null : Map.copyOf(new TreeMap<>(dscpBand));
  }

  /**
   * DATCP Table 1: 200 KB buffer, RED on the instantaneous queue between 80 and 120 KB with
   * max_p 1.0; high-precedence flows (AF41) first, standard (CS0) next, low (CS1) last.
   */
  public static SwitchPort table1(String iface, long rateBitsPerSecond) {
    return new SwitchPort(iface, rateBitsPerSecond, 200_000, MarkMode.RED, 80_000, 120_000, 1.0,
        30_000, Map.of(DSCP_AF41, 0, DSCP_CS0, 1, DSCP_CS1, 2));
  }

  /** Checks every field, naming the first bad one under {@code prefix}. */
  public void validate(String prefix) {
    require(iface != null && (iface.equals("*") || iface.matches("[A-Za-z0-9_.@-]{1,15}")),
        prefix, "interface", "must be an interface name (1-15 of A-Za-z0-9_.@-) or *");
    require(rateBitsPerSecond > 0, prefix, "rateBitsPerSecond", "must be positive (bits/s)");
    require(bufferBytes > 0, prefix, "bufferBytes", "must be positive (bytes)");
    require(mark != null, prefix, "mark", "must be none|red|step|pfdct");
    require(redMinBytes > 0 && redMinBytes < redMaxBytes, prefix, "redMinBytes",
        "must be positive and below redMaxBytes (bytes)");
    require(redMaxBytes <= bufferBytes, prefix, "redMaxBytes", "must not exceed bufferBytes");
    require(redMaxP >= 0 && redMaxP <= 1, prefix, "redMaxP", "must be in [0, 1]");
    require(kBytes > 0 && kBytes <= bufferBytes, prefix, "kBytes",
        "must be positive and not above bufferBytes (bytes)");
    require(dscpBand != null, prefix, "dscpBand", "is required");
    dscpBand.forEach((dscp, band) -> {
      require(dscp >= 0 && dscp <= 63, prefix, "dscpBand", "DSCP " + dscp + " not in 0-63");
      require(band >= 0 && band < BANDS, prefix, "dscpBand",
          "band " + band + " not in 0-" + (BANDS - 1));
    });
  }
}
