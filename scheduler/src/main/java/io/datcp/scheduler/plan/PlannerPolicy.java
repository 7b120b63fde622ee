package io.datcp.scheduler.plan;

import java.util.Locale;

/** What the planner's per-host job order turns into for the flows (planner.policy). */
public enum PlannerPolicy {
  /** Deadlines from the order (§4.4), importance, phi, mode and quench from the rules. */
  DEADLINE,
  /**
   * The order alone, as precedence classes of dctcp flows with no deadline and no quenching:
   * issue 16's prio baseline.
   */
  ORDER;

  @Override
  public String toString() {
    return name().toLowerCase(Locale.ROOT);
  }

  public static PlannerPolicy fromName(String name) {
    for (PlannerPolicy p : values()) {
      if (p.toString().equals(name)) {
        return p;
      }
    }
    throw new IllegalArgumentException(name);
  }
}
