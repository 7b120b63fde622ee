package io.datcp.scheduler.flows;

import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** Whether DATCP quenching (Algorithm 2) hit a flow, and how. */
public enum QuenchOutcome {
  NONE, SUSPENDED, KILLED;

  @JsonValue
  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }
}
