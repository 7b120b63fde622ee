package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.serve.PolicyUpdate;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 9 item 9: state a misbehaving or crashed client leaves behind is bounded. */
class BoundsTest {
  private static final long MB = 1_000_000L;
  private static final long S = 1_000_000_000L;

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));

  private void start(SchedulerService s, String job) {
    long t = clock.nanos();
    s.report("node1", List.of(new JobEvent.ReduceStarted(t, job, 0, "node1", 1, 1,
        new JobConf("q", "u", job, JobPriority.NORMAL), 0),
        new JobEvent.MapCompleted(t, job, 0, 0, "m1", S, 10 * MB, 0)));
  }

  @Test
  void aRunningJobWithoutReportsForTheIdleTimeoutLeaves() {
    SchedulerService s = TestServices.create(dir, clock,
        TestServices.dev(Map.of("jobs.idleTimeoutSeconds", "60")));
    start(s, "lost_1");
    start(s, "busy_1");
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    s.watch("m1", false, updates::add);
    s.lookup("m1", "lost_1", 0, 10 * MB);

    clock.advance(Duration.ofSeconds(45));
    s.report("node1", List.of(new JobEvent.FetchStarted(clock.nanos(), "busy_1", 0, "m1",
        List.of(0), 10 * MB)));
    assertThat(s.expireIdleJobs()).isZero();
    clock.advance(Duration.ofSeconds(30));

    assertThat(s.expireIdleJobs()).isEqualTo(1);
    assertThat(s.runningJobCount()).isEqualTo(1);
    assertThat(s.job("lost_1").orElseThrow().state()).isEqualTo("timed out");
    assertThat(updates).anySatisfy(u -> {
      assertThat(u.jobFinished()).isTrue();
      assertThat(u.policy().jobId()).isEqualTo("lost_1");
    });
  }

  @Test
  void aJobDroppedForIdlenessLeavesNoOpenEpisodeItsFlowsRateIsMeasured() {
    SchedulerService s = TestServices.create(dir, clock,
        TestServices.dev(Map.of("jobs.idleTimeoutSeconds", "60")));
    start(s, "lost_1");
    s.lookup("m1", "lost_1", 0, 10 * MB);
    long t = clock.nanos();
    // the flow of the first (and only) job on node1: 10 MB in 2 s
    s.reportOutcomes("m1", List.of(TestServices.outcome("lost_1", "m1", "node1", 10 * MB, t,
        t + 2 * S)));

    clock.advance(Duration.ofSeconds(61));
    assertThat(s.expireIdleJobs()).isEqualTo(1);
    assertThat(TestServices.newJobsPlan(s, "node1", clock.nanos()))
        .contains("40.0 Mbit/s (lowest of the 1 first-job shuffles measured");
  }

  @Test
  void outcomesOfJobsTheSchedulerDoesNotKnowAreNotKept() {
    SchedulerService s = TestServices.create(dir, clock, TestServices.dev());
    start(s, "known_1");
    long t = clock.nanos();
    List<FlowOutcome> outcomes = List.of(
        new FlowOutcome("known_1", 0, "m1", "node1", MB, t, t + S, t + S, true,
            QuenchOutcome.NONE, null),
        new FlowOutcome("made_up_1", 0, "m1", "node1", MB, t, t + S, t + S, true,
            QuenchOutcome.NONE, null));

    assertThat(s.reportOutcomes("m1", outcomes)).isEqualTo(1);
    assertThat(s.flows("made_up_1", 10)).isEmpty();
    assertThat(s.overallTally().total()).isEqualTo(1);
  }
}
