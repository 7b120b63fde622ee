package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.policy.QuenchMode;
import io.datcp.scheduler.serve.FlowPolicy;
import io.datcp.scheduler.serve.PolicyUpdate;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replays DATCP §4.4's MapReduce scenario (Fig. 14), scaled as in DESIGN.md (100 Mbit/s links,
 * 10 MB map outputs, times unchanged): job A has 4 maps of which 2 are done, job B 2 maps, both
 * done; their reduces share one node's downlink; tasks last 5 s. The paper gives B's flows a
 * 2 s deadline and A's 5 s (the task length); the planner must arrive at the same classes.
 */
class JobAbScenarioTest {
  private static final long MB = 1_000_000L;
  private static final long TASK = Duration.ofSeconds(5).toNanos();
  private static final String NODE = "node1";

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private SchedulerService scheduler;

  @BeforeEach
  void startJobs() {
    scheduler = TestServices.create(dir, clock, TestServices.dev());
    long t0 = clock.nanos();
    JobConf conf = new JobConf("default", "alice", "wordcount", JobPriority.NORMAL);
    scheduler.report(NODE, List.of(
        new JobEvent.ReduceStarted(t0, "jobA", 0, NODE, 4, 1, conf, 0),
        new JobEvent.MapCompleted(t0, "jobA", 0, 0, "m1", TASK, 10 * MB, 2),
        new JobEvent.MapCompleted(t0, "jobA", 0, 1, "m2", TASK, 10 * MB, 2),
        new JobEvent.ReduceStarted(t0, "jobB", 0, NODE, 2, 1, conf, 0),
        new JobEvent.MapCompleted(t0, "jobB", 0, 0, "m3", TASK, 10 * MB, 0),
        new JobEvent.MapCompleted(t0, "jobB", 0, 1, "m4", TASK, 10 * MB, 0)));
  }

  /** A scheduler of its own in {@code name} that knows only job B's reduce, started now. */
  private SchedulerService onlyJobB(String name) {
    SchedulerService s = TestServices.create(dir.resolve(name), clock, TestServices.dev());
    JobConf conf = new JobConf("default", "alice", "wordcount", JobPriority.NORMAL);
    s.report(NODE, List.of(new JobEvent.ReduceStarted(clock.nanos(), "jobB", 0, NODE, 2, 1, conf,
        0)));
    return s;
  }

  /** Job B's map 0 (10 MB for the reduce) indexed on m3; returns what m3's agent is sent. */
  private List<PolicyUpdate> firstMapIndexedAndWatched(SchedulerService s) {
    s.report("m3", List.of(new JobEvent.MapOutputIndexed(clock.nanos(), "jobB", 0, "m3",
        List.of(10 * MB))));
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    s.watch("m3", false, updates::add);
    return updates;
  }

  private static double seconds(FlowPolicy p) {
    return p.deadlineNanos() / 1e9;
  }

  @Test
  void jobBsFlowsGetThe2SecondClassAndJobAsThe5SecondClass() {
    FlowPolicy b = scheduler.lookup("m3", "jobB", 0, 10 * MB);
    FlowPolicy a = scheduler.lookup("m1", "jobA", 0, 10 * MB);

    assertThat(seconds(b)).isCloseTo(2.0, within(0.01));
    assertThat(seconds(a)).isCloseTo(5.0, within(0.01));
    assertThat(b.reason()).contains("maps all done", "rank 1 of 1");
    assertThat(a.reason()).contains("waiting for 2 maps", "median map 5.00 s");
    // §4.4: flows are suspended in flow quenching; A's flows have no importance, while B's,
    // first in the order, are held at precedence 10 (phi 1) from their first window and never
    // quenched (pausing them would delay the job all others wait behind)
    assertThat(List.of(a, b)).allSatisfy(p -> assertThat(p.mode()).isEqualTo(FlowMode.DATCP));
    assertThat(a.quenchMode()).isEqualTo(QuenchMode.SUSPEND);
    assertThat(b.quenchMode()).isEqualTo(QuenchMode.OFF);
    assertThat(b.reason()).contains("never quenched");
    // A waits for maps: phi 1 holds its precedence at its importance (0), however late it looks
    assertThat(a.importance()).isZero();
    assertThat(a.phi()).isEqualTo(1.0);
    assertThat(a.reason()).contains("waiting for maps: phi 1");
    assertThat(b.importance()).isEqualTo(10.0);
    assertThat(b.phi()).isEqualTo(1.0);
    assertThat(b.reason()).contains("first in the order: importance 10.0, phi 1");
    // Two B flows at 40 Mbit/s fill the 80 Mbit/s usable; A's two need 16 Mbit/s each.
    assertThat(b.desiredRateBitsPerSecond()).isCloseTo(40_000_000L, within(1000L));
    assertThat(a.desiredRateBitsPerSecond()).isCloseTo(16_000_000L, within(1000L));
  }

  @Test
  void mapSideIndexesMakeAJobShuffleBoundBeforeItsReduceHearsAndItsDeadlineCountsFromItsFirstFlow()
      throws Exception {
    long t0 = clock.nanos();
    SchedulerService early = onlyJobB("early");
    // both maps' containers ended: their NodeManagers read the indexes; the reduce has not polled
    early.report("m3", List.of(new JobEvent.MapOutputIndexed(t0, "jobB", 0, "m3", List.of(10 * MB))));
    early.report("m4", List.of(new JobEvent.MapOutputIndexed(t0, "jobB", 1, "m4", List.of(10 * MB))));
    assertThat(early.job("jobB").orElseThrow().mapsDone()).isEqualTo(2);

    // the reduce polls a second later and its first fetch starts: 20 MB at 80 Mbit/s from now
    clock.advance(Duration.ofSeconds(1));
    FlowPolicy b = early.lookup("m3", "jobB", 0, 10 * MB);
    assertThat(seconds(b)).isCloseTo(2.0, within(0.01));
    assertThat(b.reason()).contains("maps all done", "rank 1 of 1");
    assertThat(b.importance()).isEqualTo(10.0);
    assertThat(b.quenchMode()).isEqualTo(QuenchMode.OFF);
    // and the deadline is kept from then on
    clock.advance(Duration.ofMillis(500));
    assertThat(seconds(early.lookup("m4", "jobB", 0, 10 * MB))).isCloseTo(1.5, within(0.01));
  }

  @Test
  void aJobThatBecomesFirstWithTheSameDeadlineStillTellsItsFlows() throws Exception {
    long t0 = clock.nanos();
    SchedulerService s = onlyJobB("class");
    List<PolicyUpdate> updates = firstMapIndexedAndWatched(s);
    // one of two maps known: waiting, 10 MB at the whole usable rate (the only job) -> 1 s
    FlowPolicy waiting = s.lookup("m3", "jobB", 0, 10 * MB);
    assertThat(waiting.reason()).contains("waiting for 1 maps");
    assertThat(seconds(waiting)).isCloseTo(1.0, within(0.01));

    // the other map ends with nothing for this reduce: shuffle-bound, first, still 1 s
    s.report("m4", List.of(new JobEvent.MapOutputIndexed(t0, "jobB", 1, "m4", List.of(0L))));
    assertThat(updates).singleElement().satisfies(u -> {
      assertThat(u.policy().importance()).isEqualTo(10.0);
      assertThat(u.policy().quenchMode()).isEqualTo(QuenchMode.OFF);
      assertThat((u.policy().deadlineUnixNanos() - t0) / 1e9).isCloseTo(1.0, within(0.01));
    });
  }

  @Test
  void aFlowCarryingAMapsOutputMakesTheMapDoneBeforeAnyReportOfItArrives() throws Exception {
    long t0 = clock.nanos();
    SchedulerService s = onlyJobB("served");
    List<PolicyUpdate> updates = firstMapIndexedAndWatched(s);
    FlowPolicy first = s.lookup("m3", "jobB", 0, 10 * MB, List.of(0), null);
    assertThat(first.reason()).contains("waiting for 1 maps");
    assertThat(first.importance()).isZero();

    // map 1's host serves its output while its index report and the reduce's report of it still
    // sit in their agents' batches: the flow itself says the map is done
    FlowPolicy second = s.lookup("m4", "jobB", 0, 10 * MB, List.of(1), null);
    assertThat(second.reason()).contains("maps all done", "rank 1 of 1", "20.0 MB");
    assertThat(second.importance()).isEqualTo(10.0);
    assertThat(s.job("jobB").orElseThrow().mapsDone()).isEqualTo(2);
    // and the agent of the flow that started as a waiting job's hears that it now goes first
    assertThat(updates).singleElement().satisfies(u -> {
      assertThat(u.policy().importance()).isEqualTo(10.0);
      assertThat(u.policy().quenchMode()).isEqualTo(QuenchMode.OFF);
    });

    // the reports that arrive later count nothing twice; a map id the job does not have is no
    // evidence of anything
    s.report("m4", List.of(new JobEvent.MapOutputIndexed(t0, "jobB", 1, "m4", List.of(10 * MB))));
    s.report(NODE, List.of(new JobEvent.MapCompleted(t0, "jobB", 0, 1, "m4", 0, 10 * MB, 0)));
    s.lookup("m4", "jobB", 0, 10 * MB, List.of(7), null);
    assertThat(s.job("jobB").orElseThrow().mapsDone()).isEqualTo(2);
    assertThat(s.job("jobB").orElseThrow().reduces().get(0).remainingBytes()).isEqualTo(20 * MB);
  }

  @Test
  void whenJobAsLastMapsFinishItBecomesShuffleBoundAndAgentsWithFlowsInFlightHearOfIt() {
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    scheduler.watch("m1", false, updates::add);
    scheduler.lookup("m1", "jobA", 0, 10 * MB);
    scheduler.lookup("m3", "jobB", 0, 10 * MB);

    clock.advance(Duration.ofSeconds(2));
    long t2 = clock.nanos();
    scheduler.report(NODE, List.of(
        new JobEvent.FetchFinished(t2, "jobB", 0, "m3", List.of(0, 1), 20 * MB, t2),
        new JobEvent.ShuffleFinished(t2, "jobB", 0),
        new JobEvent.JobFinished(t2, "jobB", true)));
    clock.advance(Duration.ofSeconds(3));
    long t5 = clock.nanos();
    scheduler.report(NODE, List.of(
        new JobEvent.MapCompleted(t5, "jobA", 0, 2, "m5", TASK, 10 * MB, 0),
        new JobEvent.MapCompleted(t5, "jobA", 0, 3, "m6", TASK, 10 * MB, 0)));

    // m1's flow is still in flight: all four maps' outputs (40 MB) are now all that is left.
    assertThat(updates).singleElement().satisfies(u -> {
      assertThat(u.policy().jobId()).isEqualTo("jobA");
      assertThat(u.policy().reason()).contains("maps all done", "40.0 MB");
      assertThat((u.policy().deadlineUnixNanos() - t5) / 1e9).isCloseTo(4.0, within(0.01));
    });
    assertThat(seconds(scheduler.lookup("m5", "jobA", 0, 10 * MB))).isCloseTo(4.0, within(0.01));
  }

  @Test
  void theNextRoundPlansAtTheRateJobBsFlowsAchievedNotAtThePrior() {
    FlowPolicy first = scheduler.lookup("m3", "jobB", 0, 10 * MB);
    assertThat(first.reason()).contains("80.0 Mbit/s", "nothing measured yet");
    scheduler.lookup("m4", "jobB", 0, 10 * MB);
    // B's two flows ran side by side and took 2.5 s: 20 MB at 64 Mbit/s; A's flows, behind B
    // while they ran, measure nothing
    long t0 = clock.nanos();
    long end = t0 + Duration.ofMillis(2500).toNanos();
    scheduler.reportOutcomes("m3", List.of(
        new FlowOutcome("jobB", 0, "m3", NODE, 10 * MB, t0, first.deadlineUnixNanos(), end, false,
            QuenchOutcome.NONE, null),
        new FlowOutcome("jobB", 0, "m4", NODE, 10 * MB, t0, first.deadlineUnixNanos(), end, false,
            QuenchOutcome.NONE, null)));
    scheduler.lookup("m1", "jobA", 0, 10 * MB);
    scheduler.reportOutcomes("m1", List.of(new FlowOutcome("jobA", 0, "m1", NODE, 10 * MB, t0,
        0, end + Duration.ofSeconds(3).toNanos(), true, QuenchOutcome.NONE, null)));
    clock.advance(Duration.ofMillis(2500));
    long t1 = clock.nanos();
    scheduler.report(NODE, List.of(
        new JobEvent.FetchFinished(t1, "jobB", 0, "m3", List.of(0, 1), 20 * MB, t1 - t0),
        new JobEvent.ShuffleFinished(t1, "jobB", 0),
        new JobEvent.JobFinished(t1, "jobB", true)));

    // the next pair's first job: 20 MB at the 64 Mbit/s measured is 2.5 s, not 2 s
    JobConf conf = new JobConf("default", "alice", "wordcount", JobPriority.NORMAL);
    scheduler.report(NODE, List.of(
        new JobEvent.ReduceStarted(t1, "jobC", 0, NODE, 2, 1, conf, 0),
        new JobEvent.MapCompleted(t1, "jobC", 0, 0, "m3", TASK, 10 * MB, 0),
        new JobEvent.MapCompleted(t1, "jobC", 0, 1, "m4", TASK, 10 * MB, 0)));
    FlowPolicy c = scheduler.lookup("m3", "jobC", 0, 10 * MB);
    assertThat(seconds(c)).isCloseTo(2.5, within(0.01));
    assertThat(c.reason()).contains("64.0 Mbit/s", "first-job shuffles measured",
        "on this host");
  }

  @Test
  void anAgentStopsHearingOfAFlowOnceItsFetchFinished() {
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    scheduler.watch("m1", false, updates::add);
    scheduler.lookup("m1", "jobA", 0, 10 * MB);
    clock.advance(Duration.ofSeconds(1));
    long t1 = clock.nanos();

    scheduler.report(NODE, List.of(
        new JobEvent.FetchFinished(t1, "jobA", 0, "m1", List.of(0), 10 * MB, t1),
        new JobEvent.MapCompleted(t1, "jobA", 0, 2, "m5", TASK, 10 * MB, 0),
        new JobEvent.MapCompleted(t1, "jobA", 0, 3, "m6", TASK, 10 * MB, 0)));

    assertThat(updates).isEmpty();
  }

  @Test
  void jobViewsShowShuffleAndCompletionTimes() {
    clock.advance(Duration.ofSeconds(2));
    long t2 = clock.nanos();
    scheduler.report(NODE, List.of(new JobEvent.ShuffleFinished(t2, "jobB", 0),
        new JobEvent.JobFinished(t2, "jobB", true)));

    var b = scheduler.job("jobB").orElseThrow();
    assertThat(b.state()).isEqualTo("succeeded");
    assertThat(b.shuffleTimeNanos()).isEqualTo(2_000_000_000L);
    assertThat(b.completionTimeNanos()).isEqualTo(2_000_000_000L);
    var a = scheduler.job("jobA").orElseThrow();
    assertThat(a.state()).isEqualTo("running");
    assertThat(a.reduces()).singleElement().satisfies(r -> {
      assertThat(r.remainingBytes()).isEqualTo(20 * MB);
      assertThat(r.deadlineReason()).contains("waiting for 2 maps");
    });
  }

  @Test
  void withFirstJobImportanceZeroAllFlowsHaveNoImportanceAsInThePaper() throws Exception {
    SchedulerService paper = TestServices.create(dir.resolve("paper"), clock,
        TestServices.dev(java.util.Map.of("planner.firstJobImportance", "0")));
    long t0 = clock.nanos();
    JobConf conf = new JobConf("default", "alice", "wordcount", JobPriority.NORMAL);
    paper.report(NODE, List.of(
        new JobEvent.ReduceStarted(t0, "jobB", 0, NODE, 2, 1, conf, 0),
        new JobEvent.MapCompleted(t0, "jobB", 0, 0, "m3", TASK, 10 * MB, 0),
        new JobEvent.MapCompleted(t0, "jobB", 0, 1, "m4", TASK, 10 * MB, 0)));

    FlowPolicy b = paper.lookup("m3", "jobB", 0, 10 * MB);
    assertThat(b.importance()).isZero();
    assertThat(b.phi()).isZero();
    assertThat(seconds(b)).isCloseTo(2.0, within(0.01));
  }
}
