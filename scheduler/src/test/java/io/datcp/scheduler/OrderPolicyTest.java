package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.policy.PolicyRule;
import io.datcp.scheduler.policy.QuenchMode;
import io.datcp.scheduler.serve.FlowPolicy;
import io.datcp.scheduler.serve.PolicyUpdate;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * planner.policy=order, issue 16's prio baseline: the planner's job order on a reducer host
 * (shuffle-bound jobs smallest remaining shuffle first, then jobs waiting for maps) sets only the
 * flows' precedence classes; every flow is dctcp, with no deadline and no quenching.
 */
class OrderPolicyTest {
  private static final long MB = 1_000_000L;
  private static final long TASK = Duration.ofSeconds(5).toNanos();
  private static final String NODE = "node1";

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));

  /**
   * Three jobs reducing on node1: "small" (1 map, 10 MB, done) and "big" (2 maps, 20 MB, done)
   * are shuffle-bound, "waits" has 2 of 4 maps done.
   */
  private SchedulerService threeJobs(String name, Map<String, String> conf) {
    SchedulerService s = TestServices.create(dir.resolve(name), clock, TestServices.dev(conf));
    long t0 = clock.nanos();
    JobConf job = new JobConf("default", "alice", "sort", JobPriority.NORMAL);
    s.report(NODE, List.of(
        new JobEvent.ReduceStarted(t0, "small", 0, NODE, 1, 1, job, 0),
        new JobEvent.MapCompleted(t0, "small", 0, 0, "m1", TASK, 10 * MB, 0),
        new JobEvent.ReduceStarted(t0, "big", 0, NODE, 2, 1, job, 0),
        new JobEvent.MapCompleted(t0, "big", 0, 0, "m2", TASK, 10 * MB, 0),
        new JobEvent.MapCompleted(t0, "big", 0, 1, "m3", TASK, 10 * MB, 0),
        new JobEvent.ReduceStarted(t0, "waits", 0, NODE, 4, 1, job, 0),
        new JobEvent.MapCompleted(t0, "waits", 0, 0, "m4", TASK, 10 * MB, 2),
        new JobEvent.MapCompleted(t0, "waits", 0, 1, "m5", TASK, 10 * MB, 2)));
    return s;
  }

  private static void dctcpWithoutDeadlineOrQuench(FlowPolicy p) {
    assertThat(p.mode()).isEqualTo(FlowMode.DCTCP);
    assertThat(p.deadlineUnixNanos()).isZero();
    assertThat(p.deadlineNanos()).isZero();
    assertThat(p.desiredRateBitsPerSecond()).isZero();
    assertThat(p.quenchMode()).isEqualTo(QuenchMode.OFF);
    assertThat(p.phi()).isEqualTo(1.0);
    assertThat(p.rule()).isEmpty();
  }

  @Test
  void theOrderAloneSetsEachJobsClassAndRulesCannotOverrideIt() throws Exception {
    SchedulerService s = threeJobs("order", Map.of("planner.policy", "order",
        "policy.defaultMode", "datcp", "policy.defaultQuenchMode", "kill"));
    // a rule that would set every job's importance, mode and quench in deadline mode
    s.putPolicy(new PolicyRule("everyone", 1, "default", null, null, null, 5.0, 0.5,
        FlowMode.DATCP, QuenchMode.SUSPEND));

    FlowPolicy small = s.lookup("m1", "small", 0, 10 * MB);
    FlowPolicy big = s.lookup("m2", "big", 0, 10 * MB);
    FlowPolicy waits = s.lookup("m4", "waits", 0, 10 * MB);

    List.of(small, big, waits).forEach(OrderPolicyTest::dctcpWithoutDeadlineOrQuench);
    assertThat(small.importance()).isEqualTo(10.0);
    assertThat(big.importance()).isEqualTo(1.0);
    assertThat(waits.importance()).isZero();
    assertThat(small.reason()).contains("order policy", "rank 1", "high class");
    assertThat(big.reason()).contains("order policy", "rank 2", "standard class");
    assertThat(waits.reason()).contains("order policy", "waiting for maps", "low class");
    assertThat(List.of(small, big, waits)).allSatisfy(p -> assertThat(p.reason())
        .contains("dctcp, no deadline, never quenched").doesNotContain("rule"));
  }

  @Test
  void jobViewsShowTheClassInsteadOfADeadline() throws Exception {
    SchedulerService s = threeJobs("views", Map.of("planner.policy", "order"));
    s.lookup("m2", "big", 0, 10 * MB);

    assertThat(s.job("big").orElseThrow().reduces()).singleElement().satisfies(r -> {
      assertThat(r.deadlineUnixNanos()).isZero();
      assertThat(r.deadlineReason()).contains("order policy", "rank 2", "20.0 MB left",
          "standard class");
    });
  }

  /** Updates m4's agent (a flow of "waits") is sent when another of its maps ends 1 s later. */
  private List<PolicyUpdate> waitingJobsDeadlineMoves(SchedulerService s) {
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    s.watch("m4", false, updates::add);
    s.lookup("m4", "waits", 0, 10 * MB);
    clock.advance(Duration.ofSeconds(1));
    s.report(NODE, List.of(
        new JobEvent.MapCompleted(clock.nanos(), "waits", 0, 2, "m6", TASK, 10 * MB, 1)));
    return updates;
  }

  @Test
  void agentsHearWhenTheOrderChangesAJobsClassAndOnlyThen() throws Exception {
    // a moved deadline is news in deadline mode (the last map's end moved by a second)...
    assertThat(waitingJobsDeadlineMoves(threeJobs("deadline", Map.of()))).isNotEmpty();
    // ...but not in order mode, where the job stays in the waiting class
    SchedulerService s = threeJobs("order", Map.of("planner.policy", "order"));
    List<PolicyUpdate> big = new CopyOnWriteArrayList<>();
    s.watch("m2", false, big::add);
    assertThat(s.lookup("m2", "big", 0, 10 * MB).importance()).isEqualTo(1.0);
    assertThat(waitingJobsDeadlineMoves(s)).isEmpty();
    assertThat(big).isEmpty();

    // the small job ends: the big one is first now
    long t = clock.nanos();
    s.report(NODE, List.of(
        new JobEvent.FetchFinished(t, "small", 0, "m1", List.of(0), 10 * MB, t),
        new JobEvent.ShuffleFinished(t, "small", 0),
        new JobEvent.JobFinished(t, "small", true)));
    assertThat(big).singleElement().satisfies(u -> {
      assertThat(u.policy().jobId()).isEqualTo("big");
      assertThat(u.policy().importance()).isEqualTo(10.0);
      dctcpWithoutDeadlineOrQuench(u.policy());
      assertThat(u.policy().reason()).contains("rank 1", "high class");
    });
  }

  @Test
  void flowsOutsideTheOrderGetTheStandardClass() throws Exception {
    SchedulerService s = threeJobs("outside", Map.of("planner.policy", "order"));
    FlowPolicy unknown = s.lookup("m9", "job_never_reported", 0, 10 * MB);

    dctcpWithoutDeadlineOrQuench(unknown);
    assertThat(unknown.importance()).isEqualTo(1.0);
    assertThat(unknown.reason()).contains("not known", "order policy", "standard class");
  }

  @Test
  void deadlineIsTheDefaultPolicyAndPlansAsBefore() throws Exception {
    SchedulerService byDefault = threeJobs("default", Map.of());
    SchedulerService deadline = threeJobs("deadline", Map.of("planner.policy", "deadline"));
    for (String[] flow : new String[][] {{"m1", "small"}, {"m2", "big"}, {"m4", "waits"}}) {
      FlowPolicy a = byDefault.lookup(flow[0], flow[1], 0, 10 * MB);
      FlowPolicy b = deadline.lookup(flow[0], flow[1], 0, 10 * MB);
      assertThat(b).isEqualTo(a);
      assertThat(b.mode()).isEqualTo(FlowMode.DATCP);
      assertThat(b.deadlineUnixNanos()).isPositive();
      assertThat(b.reason()).doesNotContain("order policy");
    }
    // first job: importance 10, phi 1, never quenched; the others as the rules say (none here)
    FlowPolicy small = deadline.lookup("m1", "small", 0, 10 * MB);
    assertThat(small.importance()).isEqualTo(10.0);
    assertThat(small.quenchMode()).isEqualTo(QuenchMode.OFF);
    FlowPolicy big = deadline.lookup("m2", "big", 0, 10 * MB);
    assertThat(big.importance()).isZero();
    assertThat(big.phi()).isZero();
    assertThat(big.quenchMode()).isEqualTo(QuenchMode.SUSPEND);
  }
}
