package io.datcp.scheduler.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.datcp.scheduler.plan.DeadlinePlanner.Deadline;
import io.datcp.scheduler.plan.DeadlinePlanner.Demand;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeadlinePlannerTest {
  private static final long NOW = 1_700_000_000_000_000_000L;
  private static final long S = 1_000_000_000L;
  private static final long MB = 1_000_000L;
  /** 100 Mbit/s at 80 % target utilisation: 80 Mbit/s usable. */
  private final DeadlinePlanner planner = new DeadlinePlanner(100_000_000L, 0.8);

  private static double seconds(Deadline d) {
    return (d.unixNanos() - NOW) / 1e9;
  }

  private static Demand shuffleBound(String job, long bytes) {
    return new Demand(job, bytes, 0, 0, 0, -1, true);
  }

  @Test
  void aLoneShuffleBoundJobGetsItsBytesAtTheUsableRate() {
    Map<String, Deadline> plan = planner.plan("h1", List.of(shuffleBound("j", 20 * MB)), NOW);

    assertThat(seconds(plan.get("j"))).isCloseTo(2.0, within(1e-6));
    assertThat(plan.get("j").reason()).contains("rank 1 of 1", "h1", "20.0 MB", "80.0 Mbit/s");
  }

  @Test
  void shuffleBoundJobsAreOrderedSmallestRemainingShuffleFirst() {
    Map<String, Deadline> plan = planner.plan("h1", List.of(
        shuffleBound("big", 30 * MB), shuffleBound("small", 10 * MB),
        shuffleBound("mid", 20 * MB)), NOW);

    // Each job gets the time for its own bytes plus those of every smaller job ahead of it.
    assertThat(seconds(plan.get("small"))).isCloseTo(1.0, within(1e-6));
    assertThat(seconds(plan.get("mid"))).isCloseTo(3.0, within(1e-6));
    assertThat(seconds(plan.get("big"))).isCloseTo(6.0, within(1e-6));
    assertThat(plan.get("small").reason()).contains("rank 1 of 3");
    assertThat(plan.get("big").reason()).contains("rank 3 of 3", "60.0 MB");
  }

  @Test
  void theOrderNeedsLessThanTheWholeLinkForLaterJobs() {
    Map<String, Deadline> plan = planner.plan("h1", List.of(
        shuffleBound("a", 10 * MB), shuffleBound("b", 10 * MB)), NOW);

    // Desired rates realise the order through DATCP alone: the first job needs the usable
    // link, the second half of it.
    double rateA = 10 * MB * 8 / seconds(plan.get("a"));
    double rateB = 10 * MB * 8 / seconds(plan.get("b"));
    assertThat(rateA).isCloseTo(80e6, within(1.0));
    assertThat(rateB).isCloseTo(40e6, within(1.0));
  }

  @Test
  void equalShufflesAreOrderedByJobIdSoPlansAreStable() {
    Map<String, Deadline> plan = planner.plan("h1", List.of(
        shuffleBound("job_2", 10 * MB), shuffleBound("job_1", 10 * MB)), NOW);

    assertThat(plan.get("job_1").unixNanos()).isLessThan(plan.get("job_2").unixNanos());
  }

  @Test
  void aJobWaitingForMapsGetsTheEstimatedEndOfItsLastMap() {
    Demand waiting = new Demand("a", 20 * MB, 2, NOW + 5 * S, 1, 5 * S, true);
    Map<String, Deadline> plan = planner.plan("h1",
        List.of(waiting, shuffleBound("b", 20 * MB)), NOW);

    assertThat(seconds(plan.get("a"))).isCloseTo(5.0, within(1e-6));
    assertThat(plan.get("a").reason())
        .contains("waiting for 2 maps", "1 wave(s)", "median map 5.00 s", "floor");
  }

  @Test
  void theReasonSaysWhenTheRunningMapsStarted() {
    Demand running = new Demand("a", 20 * MB, 3, NOW + 7 * S, 1, 5 * S, true, NOW - 3 * S,
        false);
    Deadline d = planner.plan("h1", List.of(running), NOW).get("a");

    assertThat(seconds(d)).isCloseTo(7.0, within(1e-6));
    assertThat(d.reason()).contains("waiting for 3 maps", "started 3.00 s ago",
        "median map 5.00 s after their start", "then 1 wave(s) of the rest");

    Demand each = new Demand("a", 20 * MB, 3, NOW + 7 * S, 1, 5 * S, true, NOW - 3 * S, true);
    assertThat(planner.plan("h1", List.of(each), NOW).get("a").reason()).contains(
        "started 3.00 s ago", "median map 5.00 s after each one's start",
        "the rest take their slots as they free (1 round(s))");
  }

  @Test
  void aWaitingJobIsNeverTighterThanItsBytesAtAFairShare() {
    // Last map ends in 1 s, but 40 MB at half of 80 Mbit/s takes 8 s.
    Demand waiting = new Demand("a", 40 * MB, 1, NOW + S, 1, S, true);
    Map<String, Deadline> plan = planner.plan("h1",
        List.of(waiting, shuffleBound("b", 10 * MB)), NOW);

    assertThat(seconds(plan.get("a"))).isCloseTo(8.0, within(1e-6));
    assertThat(plan.get("a").reason()).contains("raised to the floor", "fair share", "(1/2)");
  }

  @Test
  void aMapEstimateAlreadyPastFallsBackToTheFloor() {
    Demand late = new Demand("a", 10 * MB, 1, NOW - S, 1, S, true);
    Map<String, Deadline> plan = planner.plan("h1", List.of(late), NOW);

    assertThat(seconds(plan.get("a"))).isCloseTo(1.0, within(1e-6));
  }

  @Test
  void aJobWithNoCompletedMapGetsTheFairShareFloor() {
    Demand unknown = new Demand("a", 10 * MB, 4, 0, 0, -1, true);
    Map<String, Deadline> plan = planner.plan("h1",
        List.of(unknown, shuffleBound("b", 10 * MB)), NOW);

    assertThat(seconds(plan.get("a"))).isCloseTo(2.0, within(1e-6));
    assertThat(plan.get("a").reason()).contains("unknown length");
  }

  @Test
  void waitingJobsDoNotDelayShuffleBoundOnes() {
    Map<String, Deadline> plan = planner.plan("h1", List.of(
        new Demand("w", 100 * MB, 3, NOW + 30 * S, 1, 30 * S, true), shuffleBound("b", 10 * MB)), NOW);

    assertThat(seconds(plan.get("b"))).isCloseTo(1.0, within(1e-6));
  }

  @Test
  void transferTimeIsBytesOverRate() {
    assertThat(DeadlinePlanner.transferNanos(10 * MB, 80e6)).isEqualTo(S);
    assertThat(DeadlinePlanner.transferNanos(0, 80e6)).isZero();
  }

  @Test
  void timePassingWithoutNewsDoesNotMoveAShuffleBoundDeadlineLater() {
    Map<String, Deadline> first = planner.plan("h1", List.of(shuffleBound("b", 20 * MB)), NOW);
    // a second later nothing has been reported fetched yet: the deadline stays where it was,
    // or the flows would never look behind and DATCP would never hurry them
    Map<String, Deadline> later = planner.plan("h1", List.of(shuffleBound("b", 20 * MB)),
        NOW + S, first);

    assertThat(later.get("b").unixNanos()).isEqualTo(first.get("b").unixNanos());
    assertThat(later.get("b").reason()).contains("kept");
  }

  @Test
  void aDeadlinePlannedBeforeTheJobsFirstFlowIsProvisional() {
    // the map side reported the outputs; the reduce fetches a second later (its poll)
    Map<String, Deadline> early = planner.plan("h1",
        List.of(new Demand("b", 20 * MB, 0, 0, 0, -1, false)), NOW);
    assertThat(early.get("b").reason()).contains("provisional");
    Map<String, Deadline> flowing = planner.plan("h1", List.of(shuffleBound("b", 20 * MB)),
        NOW + S, early);

    assertThat((flowing.get("b").unixNanos() - NOW) / 1e9).isCloseTo(3.0, within(1e-6));
    assertThat(flowing.get("b").reason()).doesNotContain("kept", "provisional");
  }

  @Test
  void aJobThatGetsAheadMovesTheDeadlinesBehindItLater() {
    Map<String, Deadline> first = planner.plan("h1", List.of(shuffleBound("b", 20 * MB)), NOW);
    Map<String, Deadline> later = planner.plan("h1", List.of(shuffleBound("b", 20 * MB),
        shuffleBound("c", 5 * MB)), NOW + S / 2, first);

    assertThat((later.get("b").unixNanos() - NOW) / 1e9).isCloseTo(3.0, within(1e-6));
    assertThat(later.get("b").reason()).contains("rank 2 of 2");
  }

  @Test
  void aJobAheadThatLeavesMayBringADeadlineEarlierButNeverLater() {
    Map<String, Deadline> first = planner.plan("h1", List.of(shuffleBound("c", 5 * MB),
        shuffleBound("b", 20 * MB)), NOW);
    assertThat(seconds(first.get("b"))).isCloseTo(2.5, within(1e-6));

    Map<String, Deadline> cDone = planner.plan("h1", List.of(shuffleBound("b", 20 * MB)),
        NOW + S / 10, first);
    assertThat(seconds(cDone.get("b"))).isCloseTo(2.1, within(1e-6));
    Map<String, Deadline> cDoneLate = planner.plan("h1", List.of(shuffleBound("b", 20 * MB)),
        NOW + 2 * S, first);
    assertThat(seconds(cDoneLate.get("b"))).isCloseTo(2.5, within(1e-6));
  }

  @Test
  void aJobWithNoBytesKnownYetGetsNoDeadlineAndTakesNoShare() {
    // maps done but no partition size reported yet: a deadline of "now" would make its flows
    // overdue at once (they would give up), and keeping it would pin that mistake
    Map<String, Deadline> first = planner.plan("h1", List.of(shuffleBound("b", 0),
        new Demand("a", 0, 4, 0, 0, -1, true), shuffleBound("c", 20 * MB)), NOW);
    assertThat(first).containsOnlyKeys("c");
    assertThat(seconds(first.get("c"))).isCloseTo(2.0, within(1e-6));

    Map<String, Deadline> known = planner.plan("h1", List.of(shuffleBound("b", 10 * MB)),
        NOW + S, first);
    assertThat(seconds(known.get("b"))).isCloseTo(2.0, within(1e-6));
  }

  @Test
  void bytesDiscoveredLaterMoveTheDeadlineLater() {
    // the first plan went by a guess (one flow's 10 MB); the map side then reports 30 MB
    Map<String, Deadline> first = planner.plan("h1", List.of(shuffleBound("b", 10 * MB)), NOW);
    Map<String, Deadline> sized = planner.plan("h1", List.of(shuffleBound("b", 30 * MB)), NOW,
        first);

    assertThat(seconds(sized.get("b"))).isCloseTo(3.0, within(1e-6));
  }

  @Test
  void reasonNumbersReadAsPrintfWouldPrintThem() {
    java.util.Random rnd = new java.util.Random(7);
    for (int i = 0; i < 100_000; i++) {
      double v = switch (i % 3) {
        case 0 -> rnd.nextInt(1_000_000) / 1000.0;
        case 1 -> rnd.nextDouble() * 1e4;
        default -> i / 3 / 100.0;
      };
      assertThat(DeadlinePlanner.decimal(v, 1)).isEqualTo(String.format(java.util.Locale.ROOT,
          "%.1f", v));
      assertThat(DeadlinePlanner.decimal(v, 2)).isEqualTo(String.format(java.util.Locale.ROOT,
          "%.2f", v));
    }
    assertThat(DeadlinePlanner.decimal(0, 2)).isEqualTo("0.00");
    assertThat(DeadlinePlanner.decimal(-1.5, 1)).isEqualTo("-1.5");
    assertThat(DeadlinePlanner.decimal(0.05, 1)).isEqualTo("0.1");
  }
}
