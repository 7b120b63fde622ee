package io.datcp.scheduler.serve;

import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.policy.PolicyDecision;

/** The operator's rule decision for a job, as lookups, pushes and views use it. */
final class Decisions {
  private Decisions() {}

  /**
   * The operator's decision for the job, cached in the job until the rules change; the default
   * policy while the job's attributes are unknown (never what the job claims about itself).
   */
  static PolicyDecision of(Job job, PolicyBook book) {
    if (!job.attributesKnown()) {
      return book.defaults();
    }
    long version = book.version();
    PolicyDecision d = job.cachedDecision(version);
    if (d == null) {
      d = book.decide(job.conf());
      job.cacheDecision(d, version);
    }
    return d;
  }
}
