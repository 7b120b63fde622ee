package io.datcp.scheduler.flows;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.datcp.scheduler.flows.DeadlinePlanner.Deadline;
import io.datcp.scheduler.flows.DeadlinePlanner.Demand;
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
    return new Demand(job, bytes, 0, 0, 0, -1);
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
    Demand waiting = new Demand("a", 20 * MB, 2, NOW + 5 * S, 1, 5 * S);
    Map<String, Deadline> plan = planner.plan("h1",
        List.of(waiting, shuffleBound("b", 20 * MB)), NOW);

    assertThat(seconds(plan.get("a"))).isCloseTo(5.0, within(1e-6));
    assertThat(plan.get("a").reason())
        .contains("waiting for 2 maps", "1 wave(s)", "median map 5.00 s", "floor");
  }

  @Test
  void aWaitingJobIsNeverTighterThanItsBytesAtAFairShare() {
    // Last map ends in 1 s, but 40 MB at half of 80 Mbit/s takes 8 s.
    Demand waiting = new Demand("a", 40 * MB, 1, NOW + S, 1, S);
    Map<String, Deadline> plan = planner.plan("h1",
        List.of(waiting, shuffleBound("b", 10 * MB)), NOW);

    assertThat(seconds(plan.get("a"))).isCloseTo(8.0, within(1e-6));
    assertThat(plan.get("a").reason()).contains("raised to the floor", "fair share", "(1/2)");
  }

  @Test
  void aMapEstimateAlreadyPastFallsBackToTheFloor() {
    Demand late = new Demand("a", 10 * MB, 1, NOW - S, 1, S);
    Map<String, Deadline> plan = planner.plan("h1", List.of(late), NOW);

    assertThat(seconds(plan.get("a"))).isCloseTo(1.0, within(1e-6));
  }

  @Test
  void aJobWithNoCompletedMapGetsTheFairShareFloor() {
    Demand unknown = new Demand("a", 10 * MB, 4, 0, 0, -1);
    Map<String, Deadline> plan = planner.plan("h1",
        List.of(unknown, shuffleBound("b", 10 * MB)), NOW);

    assertThat(seconds(plan.get("a"))).isCloseTo(2.0, within(1e-6));
    assertThat(plan.get("a").reason()).contains("unknown length");
  }

  @Test
  void waitingJobsDoNotDelayShuffleBoundOnes() {
    Map<String, Deadline> plan = planner.plan("h1", List.of(
        new Demand("w", 100 * MB, 3, NOW + 30 * S, 1, 30 * S), shuffleBound("b", 10 * MB)), NOW);

    assertThat(seconds(plan.get("b"))).isCloseTo(1.0, within(1e-6));
  }

  @Test
  void transferTimeIsBytesOverRate() {
    assertThat(DeadlinePlanner.transferNanos(10 * MB, 80e6)).isEqualTo(S);
    assertThat(DeadlinePlanner.transferNanos(0, 80e6)).isZero();
  }
}
