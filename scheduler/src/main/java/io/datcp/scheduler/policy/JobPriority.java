package io.datcp.scheduler.policy;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;
import java.util.Locale;

/** MapReduce job priority (mapreduce.job.priority), lowest first so ordinal order is rank order. */
public enum JobPriority {
  VERY_LOW, LOW, NORMAL, HIGH, VERY_HIGH;

  @JsonValue
  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }

  @JsonCreator
  public static JobPriority fromName(String name) {
    for (JobPriority p : values()) {
      if (p.toString().equals(name)) {
        return p;
      }
    }
    throw new IllegalArgumentException(
        "priority must be very_low|low|normal|high|very_high, not '" + name + "'");
  }
}
