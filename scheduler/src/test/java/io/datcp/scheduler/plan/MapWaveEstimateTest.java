package io.datcp.scheduler.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobLimits;
import io.datcp.scheduler.jobs.JobRegistry;
import io.datcp.scheduler.plan.DeadlinePlanner.Deadline;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The deadline of a job still waiting for maps (DATCP §2.2, §4.4: "map tasks within a job always
 * have similar lengths ... so job scheduler can speculate finish time of maps"), planned from
 * the reports the plugin sends, against a known map schedule: 8 maps of 4 s each in waves of 2
 * slots, so the last map ends 16 s after the first started. With the run times YARN knows (the
 * plugin's reduce 0 asks the AM) the planner aims at that end; with run time 0 (what YARN's
 * map-completion events carry) it can only fall back to the bytes at a fair share.
 */
class MapWaveEstimateTest {
  private static final long T0 = 1_700_000_000_000_000_000L;
  private static final long S = 1_000_000_000L;
  private static final long MB = 1_000_000L;
  private static final int MAPS = 8;
  private static final int SLOTS = 2;
  private static final long MAP_NANOS = 4 * S;
  /** When the last map really ends: 4 waves of 4 s. */
  private static final long REAL_LAST_MAP_END = T0 + MAPS / SLOTS * MAP_NANOS;
  private static final JobLimits LIMITS = new JobLimits(10_000, 100_000, 10_000, 1_000,
      2_000_000, 500_000, 1_000);
  private static final JobConf CONF = new JobConf("q", "u", "n", JobPriority.NORMAL);
  private static final String HOST = "node1";

  /** When map {@code m} finishes in the schedule. */
  private static long finish(int m) {
    return T0 + (m / SLOTS + 1) * MAP_NANOS;
  }

  /**
   * The job's deadline on the reducer's host once {@code done} maps have finished, as the
   * planner sets it from the reports the plugin sends: the map side indexes each output (1 MB
   * for the reduce), reduce 1 reports each map without a run time, and reduce 0, when
   * {@code withRunTimes}, with the AM's run time and running maps.
   */
  private static long deadlineAfter(int done, boolean withRunTimes) {
    JobRegistry registry = new JobRegistry(10, true, LIMITS);
    Replanner planner = new Replanner(registry, 100_000_000L, 0.8, false);
    for (int r = 0; r < 2; r++) {
      registry.apply(new JobEvent.ReduceStarted(T0 + S, "j", r, HOST, MAPS, 2, CONF, T0),
          new HashSet<>(), T0 + S);
    }
    Job job = null;
    for (int m = 0; m < done; m++) {
      long t = finish(m);
      registry.apply(new JobEvent.MapOutputIndexed(t, "j", m, "m" + m, List.of(MB, MB)),
          new HashSet<>(), t);
      registry.apply(new JobEvent.MapCompleted(t, "j", 1, m, "m" + m, 0, -1, -1),
          new HashSet<>(), t);
      // the maps running after a wave's end started then, freeing no slot before it
      int running = Math.min(SLOTS, MAPS - 1 - m);
      job = registry.apply(new JobEvent.MapCompleted(t, "j", 0, m, "m" + m,
          withRunTimes ? MAP_NANOS : 0, -1, withRunTimes ? running : -1, 0,
          withRunTimes && running > 0 ? t : 0), new HashSet<>(), t);
    }
    long now = finish(done - 1);
    planner.publishDemands(job, null, now);
    planner.replan(Set.of(HOST), now, (j, h, d, n) -> { });
    Deadline d = planner.planned(HOST, "j");
    System.out.printf(Locale.ROOT, "%d of %d maps done at %.1f s, %s run times: deadline %.2f s"
        + " (real last map end %.1f s): %s%n", done, MAPS, (now - T0) / 1e9,
        withRunTimes ? "with" : "without", (d.unixNanos() - T0) / 1e9,
        (REAL_LAST_MAP_END - T0) / 1e9, d.reason());
    return d.unixNanos();
  }

  @Test
  void withRunTimesTheDeadlineIsTheLastMapsRealEndAndCloserThanWithout() {
    // after each wave but the last: 2, 4 and 6 maps done, the rest still to run
    for (int done = SLOTS; done < MAPS; done += SLOTS) {
      long with = deadlineAfter(done, true);
      long without = deadlineAfter(done, false);
      assertThat((double) with).as("with run times, %d maps done", done)
          .isCloseTo(REAL_LAST_MAP_END, within(1e6));
      assertThat(Math.abs(with - REAL_LAST_MAP_END))
          .as("with run times closer to the last map's end, %d maps done", done)
          .isLessThan(Math.abs(without - REAL_LAST_MAP_END));
      // without them: the done maps' bytes for both reduces at a fair share (1 MB each at
      // 80 Mbit/s)
      assertThat((double) without).as("without run times, %d maps done", done)
          .isCloseTo(finish(done - 1) + 2 * done * MB * 8 * S / 80_000_000L, within(1e6));
    }
  }

  /**
   * The Docker A/B's job A (bench/results/docker-ab/ab-on.json): its 4 maps start together on 4
   * slots, two end after 10 s, two slow ones still run when the planner is asked. Counted from
   * the last completion, a wave of the median puts the last map 10 s later (T0 + 20 s), though
   * the running maps have run 10 s already; with the time they started (reduce 0 asks the AM)
   * the maps still to come are the running ones only, ending about when the median says
   * (T0 + 10 s, i.e. now): the deadline is then the bytes floor, as without any estimate.
   */
  @Test
  void mapsRunningSinceTheStartEndAboutAMedianAfterItNotAWaveAfterTheLastCompletion() {
    long since = deadlineOfJobA(T0);
    long unknown = deadlineOfJobA(0);
    long now = T0 + 10 * S;
    // both done maps' 1 MB for both reduces at a fair share of 80 Mbit/s
    long floor = now + 2 * 2 * MB * 8 * S / 80_000_000L;
    System.out.printf(Locale.ROOT, "job A at %.1f s: with the running maps' start %.2f s,"
        + " without it %.2f s, bytes floor %.2f s%n", (now - T0) / 1e9, (since - T0) / 1e9,
        (unknown - T0) / 1e9, (floor - T0) / 1e9);
    assertThat((double) since).as("with the running maps' start").isCloseTo(floor, within(1e6));
    assertThat((double) unknown).as("without it: one wave after the last completion")
        .isCloseTo(T0 + 20 * S, within(1e6));
  }

  /** Job A's deadline at T0 + 10 s: maps 0 and 1 done after 10 s, 2 and 3 running. */
  private static long deadlineOfJobA(long runningSince) {
    JobRegistry registry = new JobRegistry(10, true, LIMITS);
    Replanner planner = new Replanner(registry, 100_000_000L, 0.8, false);
    for (int r = 0; r < 2; r++) {
      registry.apply(new JobEvent.ReduceStarted(T0, "a", r, HOST, 4, 2, CONF, T0),
          new HashSet<>(), T0);
    }
    Job job = null;
    long t = T0 + 10 * S;
    for (int m = 0; m < 2; m++) {
      registry.apply(new JobEvent.MapOutputIndexed(t, "a", m, "m" + m, List.of(MB, MB)),
          new HashSet<>(), t);
      job = registry.apply(new JobEvent.MapCompleted(t, "a", 0, m, "m" + m, 10 * S, -1, 2, 0,
          runningSince), new HashSet<>(), t);
    }
    planner.publishDemands(job, null, t);
    planner.replan(Set.of(HOST), t, (j, h, d, n) -> { });
    Deadline d = planner.planned(HOST, "a");
    System.out.println(d.reason());
    return d.unixNanos();
  }
}
