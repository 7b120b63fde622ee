package io.datcp.scheduler.policy;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** What DATCP quenching (Algorithm 2, §3.3) does to a flow that cannot meet its deadline. */
public enum QuenchMode {
  /** Pause and resume later; MapReduce's default, since every fetch must complete. */
  SUSPEND,
  KILL,
  /** Never quench (the scheduler's choice for the flows of the job it puts first). */
  OFF;

  @JsonValue
  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }

  @JsonCreator
  public static QuenchMode fromName(String name) {
    for (QuenchMode m : values()) {
      if (m.toString().equals(name)) {
        return m;
      }
    }
    throw new IllegalArgumentException("quench mode must be suspend|kill|off, not '" + name + "'");
  }
}
