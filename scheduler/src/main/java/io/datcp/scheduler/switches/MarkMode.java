package io.datcp.scheduler.switches;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** How a switch port marks ECN (kmod enum datcp_mark_mode). */
public enum MarkMode {
  NONE,
  /** RED on the instantaneous queue (DATCP Table 1). */
  RED,
  /** DCTCP step marking above K. */
  STEP,
  /** PFDCT dynamic threshold around K_i. */
  PFDCT;

  @JsonValue
  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }

  @JsonCreator
  public static MarkMode fromName(String name) {
    for (MarkMode m : values()) {
      if (m.toString().equals(name)) {
        return m;
      }
    }
    throw new IllegalArgumentException("mark must be none|red|step|pfdct, not '" + name + "'");
  }
}
