package io.datcp.scheduler.ingest;

import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.common.UnixNanos;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobRegistry;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.serve.PolicyPushes;
import io.datcp.scheduler.serve.PolicyUpdateHub;
import java.time.Clock;
import java.util.List;

/**
 * A job's queue, user, name and priority (what rules match on) as the ResourceManager tells
 * them: asked once a job is first reported, again after a while if YARN did not answer; the
 * answer re-sends the job's policies, since its rule may have changed.
 */
final class JobAttributes {
  /** A job whose attributes the ResourceManager did not give is asked again after this. */
  private static final long YARN_RETRY_NANOS = 30_000_000_000L;

  private final Stripes jobLocks;
  private final JobRegistry registry;
  private final YarnApps yarn;
  private final PolicyPushes pushes;
  private final PolicyUpdateHub hub;
  private final Clock clock;

  /** @param yarn the ResourceManager; null when none is configured (nothing is asked) */
  JobAttributes(Stripes jobLocks, JobRegistry registry, YarnApps yarn, PolicyPushes pushes,
      PolicyUpdateHub hub, Clock clock) {
    this.jobLocks = jobLocks;
    this.registry = registry;
    this.yarn = yarn;
    this.pushes = pushes;
    this.hub = hub;
    this.clock = clock;
  }

  /**
   * Adds {@code job} to {@code ask} when its attributes are unknown and not asked for recently.
   * Caller holds the job's lock.
   */
  void askIfUnknown(Job job, long now, List<String> ask) {
    if (yarn != null && !job.attributesKnown() && (job.attributesAskedUnixNanos() == 0
        || now - job.attributesAskedUnixNanos() > YARN_RETRY_NANOS)) {
      job.attributesAsked(now);
      ask.add(job.id());
    }
  }

  /** Asks the ResourceManager; the answer applies later. Call without locks. */
  void ask(String jobId) {
    yarn.attributes(jobId).thenAccept(conf -> conf.ifPresent(c -> fromYarn(jobId, c)));
  }

  private void fromYarn(String jobId, JobConf conf) {
    long now = UnixNanos.now(clock);
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    try (Stripes.Held held = jobLocks.hold(jobId)) {
      Job job = registry.find(jobId);
      if (job == null) {
        return;
      }
      job.attributes(conf);
      if (!job.finished()) {
        pushes.pushJobEverywhere(job, now, out);
      }
    }
    hub.deliver(out);
  }
}
