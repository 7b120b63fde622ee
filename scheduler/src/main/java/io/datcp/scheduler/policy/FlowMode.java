package io.datcp.scheduler.policy;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** Congestion-control flavour an agent puts a flow on (kmod enum datcp_mode). */
public enum FlowMode {
  DATCP, PD2TCP, D2TCP, DCTCP,
  /** Plain TCP: the flow is left alone. */
  OFF;

  @JsonValue
  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }

  @JsonCreator
  public static FlowMode fromName(String name) {
    for (FlowMode m : values()) {
      if (m.toString().equals(name)) {
        return m;
      }
    }
    throw new IllegalArgumentException("mode must be one of " + Arrays.stream(values())
        .map(FlowMode::toString).collect(Collectors.joining("|")) + ", not '" + name + "'");
  }
}
