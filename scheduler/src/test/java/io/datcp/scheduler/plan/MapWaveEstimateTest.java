package io.datcp.scheduler.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobLimits;
import io.datcp.scheduler.jobs.JobRegistry;
import io.datcp.scheduler.jobs.MapEndEstimate;
import io.datcp.scheduler.plan.DeadlinePlanner.Deadline;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.Random;
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
  /**
   * Hand-worked: 20 maps of 8 s on 6 slots; at T0 + 20 s 4 are done (the last at 19 s), 6 run,
   * started 9, 7, 5, 3, 1 and 0 s ago, 10 have not started. The running ones end 0 (overdue:
   * now), 1, 3, 5, 7 and 8 s from now; the 10 others take those slots as they free, the first
   * six ending at 8, 9, 11, 13, 15, 16 s, the last four (on the slots free at 8, 9, 11, 13 s) at
   * 16, 17, 19, 21 s: the last map ends at T0 + 41 s. With only the earliest start all slots
   * free at 19 s and two waves follow (T0 + 35 s); after the last completion three waves of the
   * 16 maps left (T0 + 43 s).
   */
  @Test
  void eachRunningMapsStartListsTheMapsNotStartedOntoTheSlotsAsTheyFree() {
    long now = T0 + 20 * S;
    List<Long> starts = List.of(now, now - 9 * S, now - 5 * S, now - 1 * S, now - 7 * S,
        now - 3 * S);
    MapEndEstimate e = Replanner.mapEnd(sixSlotJob(20, 6, now - 9 * S, starts), now);

    assertThat(e.rule()).isEqualTo(MapEndEstimate.Rule.EACH_START);
    assertThat(e.mapWaveUnixNanos()).isEqualTo(T0 + 41 * S);
    assertThat(e.earliestStartUnixNanos()).isEqualTo(T0 + 35 * S);
    assertThat(e.lastCompletionUnixNanos()).isEqualTo(T0 + 43 * S);
    assertThat(e.waves()).isEqualTo(2);

    // 4 maps not started, fewer than the slots: they take the four that free first (0, 1, 3,
    // 5 s from now) and end 8 s later; the latest of those (13 s) is after the last running
    // map's end (8 s)
    assertThat(Replanner.mapEnd(sixSlotJob(14, 6, now - 9 * S, starts), now).mapWaveUnixNanos())
        .isEqualTo(now + 13 * S);
    // none not started: the running map that started last ends last, a median after its start
    assertThat(Replanner.mapEnd(sixSlotJob(10, 6, now - 9 * S, starts), now).mapWaveUnixNanos())
        .isEqualTo(now + 8 * S);
  }

  /** A start missing from the list (or no list, an older plugin) falls back to today's rules. */
  @Test
  void withoutEveryRunningMapsStartTheEarliestStartOrTheLastCompletionRuleIsUsed() {
    long now = T0 + 20 * S;
    MapEndEstimate fewer = Replanner.mapEnd(sixSlotJob(20, 6, now - 9 * S,
        List.of(now - 9 * S, now - 7 * S, now - 5 * S, now - 3 * S, now - S)), now);
    assertThat(fewer.rule()).isEqualTo(MapEndEstimate.Rule.EARLIEST_START);
    assertThat(fewer.mapWaveUnixNanos()).isEqualTo(T0 + 35 * S);

    MapEndEstimate none = Replanner.mapEnd(sixSlotJob(20, 6, 0, List.of()), now);
    assertThat(none.rule()).isEqualTo(MapEndEstimate.Rule.LAST_COMPLETION);
    assertThat(none.mapWaveUnixNanos()).isEqualTo(T0 + 43 * S);
    assertThat(none.earliestStartUnixNanos()).isZero();
  }

  /**
   * The closed form against list scheduling done the long way (each map not started takes the
   * earliest-free slot from a priority queue), over random running maps' starts (some overdue,
   * some a skewed clock puts after now), slots and maps not started.
   */
  @Test
  void theEachStartRuleIsListSchedulingOverTheSlots() {
    Random rnd = new Random(19);
    long now = T0 + 100 * S;
    for (int round = 0; round < 2_000; round++) {
      int slots = 1 + rnd.nextInt(12);
      int notStarted = rnd.nextInt(40);
      long median = (1 + rnd.nextInt(20)) * S;
      long[] starts = new long[slots];
      for (int i = 0; i < slots; i++) {
        starts[i] = now - (long) (rnd.nextDouble() * 3 * median) + rnd.nextInt(3) * S / 2;
      }
      java.util.Arrays.sort(starts);
      PriorityQueue<Long> free = new PriorityQueue<>();
      long last = Long.MIN_VALUE;
      for (long start : starts) {
        long end = Math.max(now, Math.min(start, now) + median);
        free.add(end);
        last = Math.max(last, end);
      }
      for (int m = 0; m < notStarted; m++) {
        long end = free.poll() + median;
        free.add(end);
        last = Math.max(last, end);
      }
      assertThat(Replanner.eachStart(starts, notStarted, median, now))
          .as("slots %d, not started %d, starts %s", slots, notStarted,
              java.util.Arrays.toString(starts)).isEqualTo(last);
    }
  }

  /**
   * A job of {@code maps} maps of 8 s: 4 done (reduce 0 reports each with its run time, the last
   * at T0 + 19 s), then a report counting {@code running} maps with their earliest and each
   * start.
   */
  private static Job sixSlotJob(int maps, int running, long since, List<Long> starts) {
    JobRegistry registry = new JobRegistry(10, true, LIMITS);
    registry.apply(new JobEvent.ReduceStarted(T0, "w", 0, HOST, maps, 1, CONF, T0),
        new HashSet<>(), T0);
    Job job = null;
    for (int m = 0; m < 4; m++) {
      long t = T0 + (16 + m) * S;
      job = registry.apply(new JobEvent.MapCompleted(t, "w", 0, m, "m" + m, 8 * S, MB,
          m < 3 ? -1 : running, 0, m < 3 ? 0 : since, m < 3 ? List.of() : starts),
          new HashSet<>(), t);
    }
    return job;
  }
}
