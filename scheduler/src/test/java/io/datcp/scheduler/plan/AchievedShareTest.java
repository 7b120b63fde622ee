package io.datcp.scheduler.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.datcp.scheduler.plan.AchievedShare.Source;
import java.util.ArrayDeque;
import java.util.List;
import org.junit.jupiter.api.Test;

class AchievedShareTest {
  private static final long MB = 1_000_000L;
  private static final long S = 1_000_000_000L;
  private static final long T0 = 1_700_000_000L * S;

  private final AchievedShare share = new AchievedShare(100_000_000L, 0.8);

  /** One flow of {@code job} to r1, then the job's end. */
  private void ended(String job, long bytes, long start, long finish) {
    share.flowEnded("r1", job, bytes, start, finish);
    share.jobEnded("r1", job);
  }

  @Test
  void beforeAnythingIsMeasuredThePriorShareOfTheDownlink() {
    AchievedShare.Capacity c = share.usable("r1");
    assertThat(c.bitsPerSecond()).isEqualTo(80_000_000.0);
    assertThat(c.source()).isEqualTo(Source.PRIOR);
    assertThat(c.describe()).contains("80.0 Mbit/s", "planner.targetUtilisation");
  }

  @Test
  void aFirstJobsEpisodeIsItsBytesOverTheUnionOfItsFlowsOnceTheJobEnded() {
    // two 10 MB flows side by side for 2 s: 20 MB in 2 s = 80 Mbit/s... but as one ran 0-2 s and
    // the other 0.5-2.5 s, the host was busy for 2.5 s: 64 Mbit/s
    share.flowEnded("r1", "jobB", 10 * MB, T0, T0 + 2 * S);
    share.flowEnded("r1", "jobB", 10 * MB, T0 + S / 2, T0 + 5 * S / 2);
    assertThat(share.usable("r1").source()).isEqualTo(Source.PRIOR);

    share.jobEnded("r1", "jobB");
    AchievedShare.Capacity c = share.usable("r1");
    assertThat(c.bitsPerSecond()).isCloseTo(64_000_000.0, within(1.0));
    assertThat(c.source()).isEqualTo(Source.HOST);
    assertThat(c.describe()).contains("64.0 Mbit/s", "lowest of the 1 first-job shuffles",
        "this host");
  }

  @Test
  void anEpisodeBecomesASampleWhenItsJobEndsNotWhenAPlanAsks() {
    share.flowEnded("r1", "jobB", 10 * MB, T0, T0 + S);
    share.flowEnded("r1", "jobC", 10 * MB, T0 + 2 * S, T0 + 4 * S);
    for (int plan = 0; plan < 3; plan++) {
      assertThat(share.usable("r1").source()).isEqualTo(Source.PRIOR);
    }

    share.jobEnded("r1", "jobB");
    assertThat(share.usable("r1").samples()).isEqualTo(1);
    assertThat(share.usable("r1").bitsPerSecond()).isCloseTo(80_000_000.0, within(1.0));
    // an end told twice, or on a host the job had no flows on, adds nothing
    share.jobEnded("r1", "jobB");
    share.jobEnded("r2", "jobC");
    assertThat(share.usable("r1").samples()).isEqualTo(1);
    share.jobEnded("r1", "jobC");
    assertThat(share.usable("r1").samples()).isEqualTo(2);
    assertThat(share.usable("r1").bitsPerSecond()).isCloseTo(40_000_000.0, within(1.0));
  }

  @Test
  void belowTenSamplesMeasurementsOnlyLowerTheRateBelowThePrior() {
    // nine episodes at 90 Mbit/s: the lowest of nine is no tenth percentile; the next episode
    // falls below it with probability 1/10
    for (int i = 0; i < AchievedShare.QUANTILE_SAMPLES - 1; i++) {
      ended("job" + i, 9 * MB, T0 + i * 10 * S, T0 + i * 10 * S + 4 * S / 5);
    }
    AchievedShare.Capacity c = share.usable("r1");
    assertThat(c.bitsPerSecond()).isEqualTo(80_000_000.0);
    assertThat(c.describe()).contains("at most planner.targetUtilisation", "until 10");
    ended("job9", 9 * MB, T0 + 100 * S, T0 + 100 * S + 4 * S / 5);
    assertThat(share.usable("r1").bitsPerSecond()).isCloseTo(90_000_000.0,
        within(1.0));
  }

  @Test
  void aPauseBetweenAJobsFetchesIsNotCountedAsSlowness() {
    // the reduce learnt of the second map a poll late: 1 s with no flow of the job
    share.flowEnded("r1", "jobB", 10 * MB, T0, T0 + S);
    ended("jobB", 10 * MB, T0 + 2 * S, T0 + 3 * S);
    assertThat(share.usable("r1").bitsPerSecond()).isCloseTo(80_000_000.0,
        within(1.0));
  }

  @Test
  void aJobPlannedBehindAnotherWhileItsFlowsRanMeasuresNothing() {
    share.flowEnded("r1", "jobA", 10 * MB, T0, T0 + 4 * S);
    share.plannedBehind("r1", "jobA");
    share.jobEnded("r1", "jobA");
    assertThat(share.usable("r1").source()).isEqualTo(Source.PRIOR);
  }

  @Test
  void episodesTooShortToLeaveSlowStartAreDropped() {
    ended("tiny", MB, T0, T0 + S / 4);
    assertThat(share.usable("r1").source()).isEqualTo(Source.PRIOR);
  }

  @Test
  void aHostWithoutEpisodesUsesAllHostsAndAHostItsOwnLowestTenth() {
    for (int i = 0; i < 12; i++) {
      // 10 MB in 1 s (80 Mbit/s) for i < 11, the last 10 MB in 2 s (40 Mbit/s)
      long took = i < 11 ? S : 2 * S;
      ended("job" + i, 10 * MB, T0 + i * 10 * S, T0 + i * 10 * S + took);
    }
    AchievedShare.Capacity own = share.usable("r1");
    // nearest rank of the 10th percentile of 12 samples is the 2nd lowest
    assertThat(own.bitsPerSecond()).isCloseTo(80_000_000.0, within(1.0));
    assertThat(own.samples()).isEqualTo(12);
    AchievedShare.Capacity other = share.usable("r2");
    assertThat(other.source()).isEqualTo(Source.ALL_HOSTS);
    assertThat(other.bitsPerSecond()).isCloseTo(80_000_000.0, within(1.0));
    assertThat(other.describe()).contains("all hosts");
  }

  @Test
  void aMeasuredRateNeverExceedsTheDownlink() {
    for (int i = 0; i < AchievedShare.QUANTILE_SAMPLES; i++) {
      ended("job" + i, 100 * MB, T0 + i * 10 * S, T0 + i * 10 * S + S);
    }
    assertThat(share.usable("r1").bitsPerSecond()).isEqualTo(100_000_000.0);
  }

  @Test
  void onlyTheLastSamplesCount() {
    for (int i = 0; i < AchievedShare.SAMPLES_KEPT + 5; i++) {
      // the first five episodes were slow (20 Mbit/s), the rest 80 Mbit/s
      long took = i < 5 ? 4 * S : S;
      ended("job" + i, 10 * MB, T0 + i * 10 * S, T0 + i * 10 * S + took);
    }
    assertThat(share.usable("r1").bitsPerSecond()).isCloseTo(80_000_000.0,
        within(1.0));
  }

  @Test
  void unionAndQuantileArithmetic() {
    assertThat(AchievedShare.unionNanos(List.of())).isZero();
    assertThat(AchievedShare.unionNanos(List.of(new long[] {5, 10}, new long[] {0, 3},
        new long[] {8, 12}, new long[] {9, 11}))).isEqualTo(3 + 7);
    assertThat(AchievedShare.lowestTenth(new ArrayDeque<>(List.of(3.0, 1.0, 2.0)))).isEqualTo(1.0);
  }

  @Test
  void aFloodOfOutcomesKeepsAnEpisodeBoundedAndStillMeasuresIt() {
    // 5,000 flows of 5 KB, 1 ms each, 1 ms apart: 25 MB in 5 s busy over 10 s; any agent may
    // report outcomes of a running job's reduce, as many as it likes
    for (int i = 0; i < 5_000; i++) {
      long start = T0 + 2L * i * S / 1000;
      share.flowEnded("r1", "jobB", 5_000, start, start + S / 1000);
      assertThat(share.intervalsHeld("r1", "jobB")).isLessThanOrEqualTo(
          AchievedShare.MAX_INTERVALS);
    }
    share.jobEnded("r1", "jobB");

    // gaps bridged to stay bounded count as busy: the rate is between 25 MB over 10 s and 5 s
    double rate = share.usable("r1").bitsPerSecond();
    assertThat(rate).isBetween(20_000_000.0, 40_000_000.0);
    assertThat(share.usable("r1").source()).isEqualTo(Source.HOST);
  }
}
