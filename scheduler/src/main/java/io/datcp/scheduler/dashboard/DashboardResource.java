package io.datcp.scheduler.dashboard;

import com.linecorp.armeria.common.HttpStatus;
import com.linecorp.armeria.server.HttpStatusException;
import com.linecorp.armeria.server.annotation.Default;
import com.linecorp.armeria.server.annotation.Get;
import com.linecorp.armeria.server.annotation.Param;
import com.linecorp.armeria.server.annotation.ProducesJson;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.jobs.JobView;
import io.datcp.scheduler.serve.FlowPolicy;
import io.datcp.scheduler.serve.JobViews;
import io.datcp.scheduler.serve.PlanViews;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The dashboard pages' data, under /api/v1/dashboard/: the overview's charts, a job's flows and
 * plans, a reducer host's plan. Read-only adapters over {@link JobViews} and {@link PlanViews}
 * that add what a page shows in words (outcomes, precedence classes). Serialised by the
 * server's Jackson converter.
 */
@ProducesJson
public final class DashboardResource {
  /** Ended flows a job page lists at most (the newest). */
  static final int JOB_FLOWS = 2000;
  /** Ended flows a host page draws at most (the newest). */
  static final int HOST_FLOWS = 200;
  /** A host page also shows the flows of jobs that finished this recently. */
  static final long RECENT_NANOS = TimeUnit.SECONDS.toNanos(60);

  /** A flow as its agent reported its end, with the outcome in words. */
  public record EndedFlow(FlowOutcome outcome, String words) {}

  /** A flow in flight with the policy it is told now and the class that gives it. */
  public record InFlight(String agentHost, int reduceId, long bytes, FlowPolicy policy,
      String precedenceClass) {}

  /**
   * One job on one reducer host, as the planner orders it (see {@link PlanViews.PlannedJob}).
   *
   * @param progress fetched / (fetched + remaining) of its reduces there, in [0, 1]
   */
  public record HostJob(String host, String jobId, String queue, String user, int rank,
      int mapsDone, int totalMaps, long shuffleStartUnixNanos, long firstFlowUnixNanos,
      long remainingBytes, long fetchedBytes, double progress, List<Integer> reduces,
      FlowPolicy policy, String precedenceClass, List<InFlight> flows) {}

  /** A reducer host's plan and the flows that ended there lately, oldest first. */
  public record HostPage(String host, long nowUnixNanos, List<HostJob> jobs,
      List<EndedFlow> ended) {}

  /**
   * A job with its plan on each host it still shuffles on and its ended flows, oldest first.
   *
   * @param mapCompletionsUnixNanos when its maps completed, sorted; empty once it ended
   */
  public record JobPage(long nowUnixNanos, JobView job, long[] mapCompletionsUnixNanos,
      List<HostJob> plans, List<EndedFlow> flows) {}

  public record Hosts(List<String> hosts) {}

  private final JobViews views;
  private final PlanViews plans;

  public DashboardResource(JobViews views, PlanViews plans) {
    this.views = views;
    this.plans = plans;
  }

  /** Finished jobs' completion times, their CDF and the met ratio over time, filtered. */
  @Get("/dashboard/overview")
  public Overview overview(@Param("queue") @Default("") String queue,
      @Param("user") @Default("") String user, @Param("since") @Default("0") long since,
      @Param("until") @Default("0") long until) {
    Overview.Filter filter = new Overview.Filter(queue, user, since, until);
    return Overview.of(views.jobs(), filter, plans.nowUnixNanos(),
        views.runningJobCount());
  }

  @Get("/dashboard/jobs/{id}")
  public JobPage job(@Param("id") String id) {
    JobView job = views.job(id).orElseThrow(() -> HttpStatusException.of(HttpStatus.NOT_FOUND));
    List<HostJob> on = new ArrayList<>();
    for (PlanViews.HostPlan p : plans.job(id)) {
      p.jobs().forEach(j -> on.add(hostJob(p.host(), j)));
    }
    List<EndedFlow> ended = new ArrayList<>();
    views.flows(id, JOB_FLOWS).forEach(o -> ended.add(new EndedFlow(o, FlowWords.outcome(o))));
    return new JobPage(plans.nowUnixNanos(), job, plans.mapCompletions(id), on, ended);
  }

  /** Hosts where a reduce is shuffling now. */
  @Get("/dashboard/hosts")
  public Hosts hosts() {
    return new Hosts(plans.reducerHosts());
  }

  @Get("/dashboard/hosts/{host}")
  public HostPage host(@Param("host") String host) {
    PlanViews.HostPlan plan = plans.host(host);
    List<HostJob> jobs = new ArrayList<>();
    plan.jobs().forEach(j -> jobs.add(hostJob(host, j)));
    List<String> ids = new ArrayList<>();
    plan.jobs().forEach(j -> ids.add(j.jobId()));
    ids.addAll(plans.finishedOn(host, plan.nowUnixNanos() - RECENT_NANOS));
    List<FlowOutcome> all = new ArrayList<>();
    for (String id : ids) {
      views.flows(id, HOST_FLOWS).stream().filter(o -> o.destinationHost().equals(host))
          .forEach(all::add);
    }
    all.sort((a, b) -> Long.compare(a.startUnixNanos(), b.startUnixNanos()));
    List<EndedFlow> ended = new ArrayList<>();
    all.subList(Math.max(0, all.size() - HOST_FLOWS), all.size())
        .forEach(o -> ended.add(new EndedFlow(o, FlowWords.outcome(o))));
    return new HostPage(host, plan.nowUnixNanos(), jobs, ended);
  }

  private static HostJob hostJob(String host, PlanViews.PlannedJob j) {
    List<InFlight> flows = new ArrayList<>();
    j.flows().forEach(f -> flows.add(new InFlight(f.agentHost(), f.reduceId(), f.bytes(),
        f.policy(), FlowWords.precedenceClass(f.policy()))));
    long total = j.fetchedBytes() + j.remainingBytes();
    return new HostJob(host, j.jobId(), j.queue(), j.user(), j.rank(), j.mapsDone(),
        j.totalMaps(), j.shuffleStartUnixNanos(), j.firstFlowUnixNanos(), j.remainingBytes(),
        j.fetchedBytes(), total == 0 ? 0 : (double) j.fetchedBytes() / total, j.reduces(),
        j.policy(), FlowWords.precedenceClass(j.policy()), flows);
  }
}
