package io.datcp.scheduler.dashboard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.jobs.JobView;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.policy.PolicyDecision;
import io.datcp.scheduler.policy.QuenchMode;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The overview's series computed from job views, without a server. */
class OverviewTest {
  private static final long S = 1_000_000_000L;
  /** A finish time on a whole hour, so intervals start where the test expects. */
  private static final long T0 = 1_800_000_000L * S;
  private static final Overview.Filter ALL = new Overview.Filter("", "", 0, 0);

  private static JobView job(String id, String queue, long finish, long completionSeconds,
      long flows, long met) {
    long completion = completionSeconds * S;
    return new JobView(id, id, "alice", queue, JobPriority.NORMAL,
        finish == 0 ? "running" : "succeeded", 2, 2, 1, finish - completion, finish,
        finish == 0 ? 0 : completion, completion / 2, flows, met,
        flows == 0 ? -1 : (double) met / flows,
        new PolicyDecision(0, 0, FlowMode.DATCP, QuenchMode.SUSPEND, ""), List.of(), null, null,
        List.of());
  }

  @Test
  void cdfSortsCompletionTimesAndATieIsOneStep() {
    Overview o = Overview.of(List.of(job("a", "q", T0, 30, 1, 1), job("b", "q", T0 + S, 10, 1, 1),
        job("c", "q", T0 + 2 * S, 30, 1, 1), job("d", "q", T0 + 3 * S, 20, 1, 1)), ALL, 0, 0);
    assertThat(o.cdf()).containsExactly(new Overview.CdfPoint(10, 0.25),
        new Overview.CdfPoint(20, 0.5), new Overview.CdfPoint(30, 1.0));
  }

  @Test
  void runningJobsAreNotPointsButTheirQueuesAreNotChoicesEither() {
    Overview o = Overview.of(List.of(job("run", "late", 0, 5, 0, 0),
        job("done", "q", T0, 10, 2, 1)), ALL, 0, 1);
    assertThat(o.jobs()).extracting(Overview.JobPoint::id).containsExactly("done");
    assertThat(o.queues()).containsExactly("q");
    assertThat(o.runningJobs()).isEqualTo(1);
  }

  @Test
  void metRatioIsCountedOverFlowsPerIntervalOfFinishTime() {
    // span 100 s: 10 s intervals would be 11 (< 24), 5 s ones 21, 1 s ones 101
    Overview o = Overview.of(List.of(job("a", "q", T0, 10, 4, 4),
        job("b", "q", T0 + 2 * S, 10, 4, 0), job("c", "q", T0 + 100 * S, 10, 2, 1),
        job("d", "q", T0 + 101 * S, 10, 0, 0)), ALL, 0, 0);
    assertThat(o.bucketNanos()).isEqualTo(5 * S);
    // a and b share [T0, T0 + 5 s): 4 of 8 flows; c and d [T0 + 100 s, +5 s): 1 of 2
    assertThat(o.metRatio()).containsExactly(new Overview.MetRatioPoint(T0, 8, 4, 0.5),
        new Overview.MetRatioPoint(T0 + 100 * S, 2, 1, 0.5));
  }

  @Test
  void filtersNarrowByQueueUserAndFinishTimeAndRejectABackwardRange() {
    List<JobView> jobs = List.of(job("a", "prod", T0, 10, 1, 1),
        job("b", "adhoc", T0 + 10 * S, 10, 1, 1), job("c", "prod", T0 + 20 * S, 10, 1, 1));
    assertThat(Overview.of(jobs, new Overview.Filter("prod", "", T0 + 5 * S, 0), 0, 0).jobs())
        .extracting(Overview.JobPoint::id).containsExactly("c");
    assertThat(Overview.of(jobs, new Overview.Filter("", "", 0, T0 + 10 * S), 0, 0).jobs())
        .extracting(Overview.JobPoint::id).containsExactly("a", "b");
    assertThat(Overview.of(jobs, new Overview.Filter("", "bob", 0, 0), 0, 0).jobs()).isEmpty();
    assertThatThrownBy(() -> new Overview.Filter("", "", T0, T0 - 1))
        .isInstanceOf(InvalidFieldException.class).hasMessageContaining("until");
  }
}
