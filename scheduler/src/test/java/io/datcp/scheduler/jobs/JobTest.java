package io.datcp.scheduler.jobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The job model keeps remaining bytes and the median map length as events arrive (issue 9 item
 * 10: recounting every map on each report made a report cost O(maps)); they must equal a count
 * from scratch after any sequence of events.
 */
class JobTest {
  private static final long T = 1_700_000_000_000_000_000L;
  private static final JobConf CONF = new JobConf("q", "u", "n", JobPriority.NORMAL);

  /** What a job was told, and the remaining bytes and median counted from it from scratch. */
  private static final class Recount {
    /** Maps a reduce reported done, not lost since. */
    final Set<Integer> completed = new HashSet<>();
    /** Run times of every completion counted (a lost attempt's too: it ran that long). */
    final List<Long> runTimes = new ArrayList<>();
    /** Maps whose attempt 0 was lost: its completion reported later is stale. */
    final Set<Integer> lost = new HashSet<>();
    final Map<Integer, long[]> partitions = new HashMap<>();
    final Map<Integer, Map<Integer, Long>> reported = new HashMap<>();
    final Map<Integer, Set<Integer>> fetched = new HashMap<>();
    final Set<Integer> reduces = new HashSet<>();
    long knownBytes;
    int known;

    long remaining(int reduce) {
      long estimate = known > 0 ? knownBytes / known : 0;
      Set<Integer> done = new HashSet<>(completed);
      done.addAll(partitions.keySet());
      long left = 0;
      for (int m : done) {
        if (fetched.getOrDefault(reduce, Set.of()).contains(m)) {
          continue;
        }
        long[] parts = partitions.get(m);
        left += parts != null && reduce < parts.length ? parts[reduce]
            : reported.getOrDefault(reduce, Map.of()).getOrDefault(m, estimate);
      }
      return left;
    }

    long median() {
      List<Long> times = new ArrayList<>(runTimes);
      if (times.isEmpty()) {
        return -1;
      }
      times.sort(null);
      int n = times.size();
      return n % 2 == 1 ? times.get(n / 2) : (times.get(n / 2 - 1) + times.get(n / 2)) / 2;
    }
  }

  @Test
  void remainingBytesAndTheMedianMapLengthEqualACountFromScratchAfterEveryEvent() {
    Random rnd = new Random(42);
    for (int round = 0; round < 50; round++) {
      int totalMaps = 1 + rnd.nextInt(30);
      int totalReduces = 1 + rnd.nextInt(6);
      Job job = new Job("j", CONF, true, totalMaps, totalReduces, T);
      Recount r = new Recount();
      for (int step = 0; step < 300; step++) {
        int map = rnd.nextInt(totalMaps);
        int reduce = rnd.nextInt(totalReduces);
        switch (rnd.nextInt(6)) {
          case 0 -> {
            job.reduceStarted(reduce, "node" + reduce % 3, T);
            r.reduces.add(reduce);
          }
          case 1 -> {
            long runTime = 1 + rnd.nextInt(1000);
            long bytes = rnd.nextInt(4) == 0 ? -1 : rnd.nextInt(1_000_000);
            job.mapCompleted(reduce, map, "m", 0, runTime, bytes, rnd.nextInt(5) - 1, 0,
                List.of(), T + step);
            if (!r.lost.contains(map) && r.completed.add(map)) {
              r.runTimes.add(runTime);
            }
            if (!r.lost.contains(map) && r.reduces.contains(reduce) && bytes >= 0
                && r.reported.computeIfAbsent(reduce, x -> new HashMap<>()).put(map, bytes)
                == null) {
              r.knownBytes += bytes;
              r.known++;
            }
          }
          case 2 -> {
            // sometimes fewer partitions than reduces: the rest fall back to reports
            long[] parts = new long[rnd.nextInt(totalReduces + 1)];
            for (int i = 0; i < parts.length; i++) {
              parts[i] = rnd.nextInt(1_000_000);
            }
            job.mapOutputIndexed(map, "m", parts);
            if (r.partitions.putIfAbsent(map, parts) == null) {
              for (long b : parts) {
                r.knownBytes += b;
              }
              r.known += parts.length;
            }
          }
          case 3 -> {
            // attempt 0 on m is lost: its completion and m's index with it
            job.mapLost(map, "m", 0);
            r.lost.add(map);
            r.completed.remove(map);
            r.partitions.remove(map);
          }
          default -> {
            List<Integer> maps = List.of(map, rnd.nextInt(totalMaps));
            job.fetchFinished(reduce, maps, 1);
            if (r.reduces.contains(reduce)) {
              r.fetched.computeIfAbsent(reduce, x -> new HashSet<>()).addAll(maps);
            }
          }
        }
        for (int id : r.reduces) {
          assertThat(job.remainingBytes(job.reduce(id))).as("round %d step %d reduce %d",
              round, step, id).isEqualTo(r.remaining(id));
        }
        Set<Integer> done = new HashSet<>(r.completed);
        done.addAll(r.partitions.keySet());
        assertThat(job.mapsDone()).isEqualTo(done.size());
        assertThat(job.medianMapRunTimeNanos()).isEqualTo(r.median());
      }
    }
  }

  @Test
  void aMapCompletionWithoutRunTimeLeavesTheMedianMapLengthUnknown() {
    // YARN's map-completion events reach a reduce with run time 0 (TypeConverter.fromYarn drops
    // it): counted as a length, it made every job's maps look instant ("median map 0.00 s")
    Job job = new Job("j", CONF, true, 4, 1, T);
    job.reduceStarted(0, "node1", T);
    job.mapCompleted(0, 0, "m", 0, 0, 10, -1, 0, List.of(), T);
    job.mapCompleted(0, 1, "m", 0, 0, 10, -1, 0, List.of(), T);
    assertThat(job.mapsDone()).isEqualTo(2);
    assertThat(job.medianMapRunTimeNanos()).isEqualTo(-1);

    job.mapCompleted(0, 2, "m", 0, 5_000_000_000L, 10, -1, 0, List.of(), T);
    assertThat(job.medianMapRunTimeNanos()).isEqualTo(5_000_000_000L);
  }

  /** A job of 4 maps whose two reduces run on node1 and node2. */
  private static Job twoReduces() {
    Job job = new Job("j", CONF, true, 4, 2, T);
    job.reduceStarted(0, "node1", T);
    job.reduceStarted(1, "node2", T);
    return job;
  }

  @Test
  void aRunTimeReportedAfterTheMapWasKnownWithoutOneCountsOnce() {
    // the plugin's reduce 0 asks the AM for run times; other reduces report the map first
    Job job = twoReduces();
    assertThat(job.mapCompleted(1, 0, "m", 0, 0, 10, -1, 0, List.of(), T)).isTrue();
    assertThat(job.medianMapRunTimeNanos()).isEqualTo(-1);

    assertThat(job.mapCompleted(0, 0, "m", 0, 4_000_000_000L, 10, -1, 0, List.of(), T))
        .as("the median moved: every host's demand changes").isTrue();
    assertThat(job.medianMapRunTimeNanos()).isEqualTo(4_000_000_000L);
    assertThat(job.mapsDone()).isEqualTo(1);
    assertThat(job.mapCompleted(0, 0, "m", 0, 9_000_000_000L, 10, -1, 0, List.of(), T))
        .as("a map's run time counts once").isFalse();
    assertThat(job.medianMapRunTimeNanos()).isEqualTo(4_000_000_000L);
  }

  @Test
  void whenTheRunningMapsStartedIsKeptWithTheirCountFromTheLatestReportThatCountedThem() {
    Job job = twoReduces();
    assertThat(job.mapCompleted(0, 0, "m", 0, 0, 10, 3, T - 7, List.of(), T)).isTrue();
    assertThat(job.runningMapsSinceUnixNanos()).isEqualTo(T - 7);
    // another reduce's report of the same map counts nothing: both stay
    assertThat(job.mapCompleted(1, 0, "m", 0, 0, 10, -1, 0, List.of(), T)).isFalse();
    assertThat(job.mapsRunning()).isEqualTo(3);
    assertThat(job.runningMapsSinceUnixNanos()).isEqualTo(T - 7);
    // the same count, started later: every host's demand changes
    assertThat(job.mapCompleted(0, 1, "m", 0, 0, 10, 3, T - 2, List.of(), T + 1)).isTrue();
    assertThat(job.mapCompleted(0, 1, "m", 0, 0, 10, 3, T - 2, List.of(), T + 1)).isFalse();
    assertThat(job.runningMapsSinceUnixNanos()).isEqualTo(T - 2);
    // a count without a start: unknown again
    job.mapCompleted(0, 2, "m", 0, 0, 10, 1, 0, List.of(), T + 2);
    assertThat(job.mapsRunning()).isEqualTo(1);
    assertThat(job.runningMapsSinceUnixNanos()).isZero();
  }

  @Test
  void eachRunningMapsStartIsKeptSortedOnlyWhenTheReportGaveOneForEveryRunningMap() {
    Job job = twoReduces();
    assertThat(job.mapCompleted(0, 0, "m", 0, 0, 10, 3, T - 7, List.of(T - 2, T - 7, T - 4), T))
        .isTrue();
    assertThat(job.runningMapStartsUnixNanos()).containsExactly(T - 7, T - 4, T - 2);
    // the same starts in another order: nothing new
    assertThat(job.mapCompleted(0, 1, "m", 0, 0, 10, 3, T - 7, List.of(T - 4, T - 2, T - 7), T))
        .as("map 1 is new, but not the starts").isTrue();
    assertThat(job.mapCompleted(0, 1, "m", 0, 0, 10, 3, T - 7, List.of(T - 7, T - 4, T - 2), T))
        .isFalse();
    // one running map's start not told (the AM listed it without one): none is kept
    assertThat(job.mapCompleted(0, 2, "m", 0, 0, 10, 3, T - 7, List.of(T - 7, T - 4), T + 1))
        .isTrue();
    assertThat(job.mapsRunning()).isEqualTo(3);
    assertThat(job.runningMapStartsUnixNanos()).isEmpty();
    assertThat(job.runningMapsSinceUnixNanos()).isEqualTo(T - 7);
  }

  @Test
  void reducesAreFoundByHost() {
    Job job = new Job("j", CONF, true, 4, 3, T);
    job.reduceStarted(0, "node1", T);
    job.reduceStarted(1, "node2", T);
    job.reduceStarted(2, "node1", T);
    job.shuffleFinished(0, T + 1);

    assertThat(job.shufflingOn("node1")).extracting(Job.Reduce::id).containsExactly(2);
    assertThat(job.hasReduceOn("node1")).isTrue();
    assertThat(job.hasReduceOn("node3")).isFalse();
  }

  @Test
  void aJobKeepsEachMapEndEstimateThatMovedAnEndUpToItsCapWithTheFirstAndTheLatest() {
    Job job = new Job("j", CONF, true, 100, 1, T);
    int made = Job.MAX_MAP_END_ESTIMATES + 6;
    for (int i = 0; i < made; i++) {
      MapEndEstimate e = new MapEndEstimate(T + i, i, 1, 0, 1_000, 0, T + 10_000 + i, T + 20_000,
          0, MapEndEstimate.Rule.LAST_COMPLETION);
      job.mapEndEstimated(e);
      // made again by a report that changed nothing about the maps: not news
      job.mapEndEstimated(new MapEndEstimate(T + i + 1, i, 1, 0, 1_000, 0, T + 10_000 + i,
          T + 20_000, 0, MapEndEstimate.Rule.LAST_COMPLETION));
    }
    List<MapEndEstimate> kept = job.mapEndEstimates();
    assertThat(kept).hasSize(Job.MAX_MAP_END_ESTIMATES);
    assertThat(kept.get(0).madeUnixNanos()).isEqualTo(T);
    assertThat(kept.get(kept.size() - 1).mapWaveUnixNanos()).isEqualTo(T + 10_000 + made - 1);
    assertThat(kept.get(kept.size() - 2).mapWaveUnixNanos())
        .isEqualTo(T + 10_000 + Job.MAX_MAP_END_ESTIMATES - 2);
  }
}
