package io.datcp.scheduler.api.rest;

import com.linecorp.armeria.server.annotation.Default;
import com.linecorp.armeria.server.annotation.Get;
import com.linecorp.armeria.server.annotation.Param;
import com.linecorp.armeria.server.annotation.ProducesJson;
import io.datcp.scheduler.serve.JobViews;
import io.datcp.scheduler.flows.FlowLog;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.jobs.JobView;
import java.util.List;

/** REST adapter for the read-only job and flow views (/api/v1/jobs, /api/v1/flows). */
@ProducesJson
public final class JobResource {
  /**
   * Deadline-met counts over every flow agents reported.
   *
   * @param deadlineMetRatio met / flows, -1 before any flow ended
   */
  public record Overall(long flows, long flowsMet, double deadlineMetRatio, int runningJobs) {}

  public record Jobs(Overall overall, List<JobView> jobs) {}

  public record Flows(List<FlowOutcome> flows) {}

  private final JobViews views;

  public JobResource(JobViews views) {
    this.views = views;
  }

  @Get("/jobs")
  public Jobs jobs() {
    FlowLog.Tally t = views.overallTally();
    return new Jobs(new Overall(t.total(), t.met(), t.metRatio(), views.runningJobCount()),
        views.jobs());
  }

  @Get("/jobs/{id}")
  public JobView job(@Param("id") String id) {
    return views.job(id)
        .orElseThrow(() -> new NotFoundException("id", "no job '" + id + "' is known"));
  }

  /** Recent flow outcomes, of one job when {@code job} is given. */
  @Get("/flows")
  public Flows flows(@Param("job") @Default("") String job,
      @Param("limit") @Default("1000") int limit) {
    return new Flows(views.flows(job.isEmpty() ? null : job, limit));
  }
}
