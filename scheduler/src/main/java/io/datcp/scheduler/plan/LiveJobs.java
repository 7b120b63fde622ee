package io.datcp.scheduler.plan;

import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.common.UnixNanos;
import io.datcp.scheduler.jobs.JobRegistry;
import java.time.Clock;

/**
 * What every step after a report works on: the running jobs, the per-job locks that guard
 * them, their plans per reducer host, and the clock the deadlines are counted on.
 */
public record LiveJobs(Stripes locks, JobRegistry registry, Replanner plan, Clock clock) {

  /** The clock's now, Unix nanoseconds. */
  public long now() {
    return UnixNanos.now(clock);
  }
}
