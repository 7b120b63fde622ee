package io.datcp.scheduler.serve;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.flows.FlowLog;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobView;
import io.datcp.scheduler.jobs.MapEndEstimate;
import io.datcp.scheduler.plan.DeadlinePlanner.Deadline;
import io.datcp.scheduler.plan.LiveJobs;
import io.datcp.scheduler.policy.PolicyBook;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Operators' side of serving: jobs with their current deadlines and the reasons for them, and
 * the flows' outcomes, for the REST API and the dashboard. Read-only.
 */
public final class JobViews {
  private final LiveJobs live;
  private final PolicyBook policies;
  private final FlowLog flowLog;

  public JobViews(LiveJobs live, PolicyBook policies, FlowLog flowLog) {
    this.live = live;
    this.policies = policies;
    this.flowLog = flowLog;
  }

  /** Running jobs first (newest first), then finished ones (most recently finished first). */
  public List<JobView> jobs() {
    long now = live.now();
    List<JobView> out = new ArrayList<>();
    Set<String> listed = new HashSet<>();
    live.registry().runningJobs().stream()
        .sorted(Comparator.comparingLong(Job::startUnixNanos).reversed())
        .forEach(j -> {
          listed.add(j.id());
          out.add(lockedView(j, now));
        });
    // A job that finished meanwhile is in both; it is listed once.
    List<Job> done = live.registry().finishedJobs();
    for (int i = done.size() - 1; i >= 0; i--) {
      if (listed.add(done.get(i).id())) {
        out.add(lockedView(done.get(i), now));
      }
    }
    return out;
  }

  public Optional<JobView> job(String jobId) {
    long now = live.now();
    try (Stripes.Held held = live.locks().hold(jobId)) {
      Job j = live.registry().find(jobId);
      return j == null ? Optional.empty() : Optional.of(view(j, now));
    }
  }

  /** Recent flows of one job, or of all jobs when {@code jobId} is null. */
  public List<FlowOutcome> flows(String jobId, int limit) {
    require(limit > 0 && limit <= 100_000, "limit", "must be in [1, 100000]");
    return jobId == null ? flowLog.recent(limit) : flowLog.flows(jobId, limit);
  }

  public FlowLog.Tally overallTally() {
    return flowLog.overall();
  }

  public int runningJobCount() {
    return live.registry().runningCount();
  }

  private static String state(Job j) {
    if (!j.finished()) {
      return "running";
    }
    return j.timedOut() ? "timed out" : j.succeeded() ? "succeeded" : "failed";
  }

  private JobView lockedView(Job j, long now) {
    try (Stripes.Held held = live.locks().hold(j.id())) {
      return view(j, now);
    }
  }

  private JobView view(Job j, long now) {
    boolean orderOnly = live.plan().orderOnly();
    FlowLog.Tally t = flowLog.tally(j.id());
    List<JobView.ReduceView> reduces = new ArrayList<>();
    for (Job.Reduce r : j.reduces()) {
      Deadline d = r.shuffling() ? live.plan().planned(r.host(), j.id()) : null;
      // with the order policy flows get no deadline: the view shows the class instead
      reduces.add(new JobView.ReduceView(r.id(), r.host(), r.shuffleStartUnixNanos(),
          r.shuffleFinishUnixNanos(), r.fetchedBytes(), r.shuffling() ? j.remainingBytes(r) : 0,
          d == null || orderOnly ? 0 : d.unixNanos(),
          d == null ? "" : orderOnly ? FlowPolicies.orderReason(r.host(), d) : d.reason()));
    }
    List<MapEndEstimate> ends = j.mapEndEstimates();
    return new JobView(j.id(), j.conf().jobName(), j.conf().user(), j.conf().queue(),
        j.conf().priority(), state(j),
        j.totalMaps(), j.mapsDone(), j.totalReduces(), j.startUnixNanos(), j.finishUnixNanos(),
        j.finished() ? j.finishUnixNanos() - j.startUnixNanos() : 0, j.shuffleTimeNanos(now),
        t.total(), t.met(), t.metRatio(), Decisions.of(j, policies), reduces,
        ends.isEmpty() ? null : ends.get(0), ends.isEmpty() ? null : ends.get(ends.size() - 1),
        ends);
  }
}
