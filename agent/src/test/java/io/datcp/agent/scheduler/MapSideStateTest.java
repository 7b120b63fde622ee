package io.datcp.agent.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.agent.testing.WarningLog;
import io.datcp.proto.v1.ContainersRunning;
import io.datcp.proto.v1.JobFinished;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.ShuffleEvent;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/**
 * The map side's state a new leader needs to plan a running job (issue 19 item 10): kept per job,
 * each map's latest index and the host's latest container count, bounded, forgotten with the job.
 */
class MapSideStateTest {
  private final AtomicLong now = new AtomicLong(1);
  private final MapSideState state = new MapSideState(now::get);

  @Test
  void keepsEachMapsLatestIndexAndTheLatestContainerCountPerJob() {
    state.record(List.of(containers("a", 2), indexed("a", 0, 100), indexed("b", 0, 5)));
    state.record(List.of(indexed("a", 1, 200), containers("a", 0), indexed("a", 0, 150)));

    assertThat(state.events()).containsExactly(indexed("b", 0, 5), indexed("a", 1, 200),
        indexed("a", 0, 150), containers("a", 0));
  }

  @Test
  void forgetsAJobAtItsEndAndAfterAnHourWithoutNewsOfIt() {
    state.record(List.of(indexed("a", 0, 100), indexed("b", 0, 5), indexed("c", 0, 7)));
    state.record(List.of(ShuffleEvent.newBuilder().setJobFinished(JobFinished.newBuilder()
        .setJobId("a")).build()));
    state.dropJob("b");
    assertThat(state.events()).containsExactly(indexed("c", 0, 7));

    now.addAndGet(MapSideState.IDLE_NANOS);
    state.record(List.of(indexed("d", 0, 1)));
    assertThat(state.events()).containsExactly(indexed("c", 0, 7), indexed("d", 0, 1));
    now.addAndGet(1);
    assertThat(state.events()).containsExactly(indexed("d", 0, 1));
  }

  @Test
  void dropsAJobsOldestOutputsPastItsCapAndTheLeastRecentJobPastTheTotalLoggingOnce() {
    int reduces = 50_000;
    WarningLog log = new WarningLog();
    Logger logger = Logger.getLogger(MapSideState.class.getName());
    logger.addHandler(log);
    try {
      for (int map = 0; map < MapSideState.MAX_SIZES_PER_JOB / reduces + 1; map++) {
        state.record(List.of(indexed("big", map, new long[reduces])));
      }
      List<ShuffleEvent> kept = state.events();
      assertThat(kept).hasSize((int) (MapSideState.MAX_SIZES_PER_JOB / reduces));
      assertThat(kept.get(0).getMapOutputIndexed().getMapId()).as("the oldest went").isEqualTo(1);
      assertThat(state.dropped()).isEqualTo(1);

      state.record(List.of(indexed("old", 0, 1)));
      state.record(List.of(indexed("new", 0, new long[(int) MapSideState.MAX_SIZES_PER_JOB])));
      state.record(List.of(indexed("old", 1, 1)));
      assertThat(state.events()).as("the job heard from least recently went")
          .noneMatch(e -> e.getMapOutputIndexed().getJobId().equals("big"))
          .anyMatch(e -> e.getMapOutputIndexed().getJobId().equals("old"))
          .anyMatch(e -> e.getMapOutputIndexed().getJobId().equals("new"));
      assertThat(state.dropped()).isEqualTo(1 + kept.size());
      assertThat(log.records).hasSize(1);
    } finally {
      logger.removeHandler(log);
    }
  }

  private static ShuffleEvent indexed(String job, int map, long... partitionBytes) {
    MapOutputIndexed.Builder m = MapOutputIndexed.newBuilder().setJobId(job).setMapId(map)
        .setHost("nm1");
    for (long b : partitionBytes) {
      m.addPartitionBytes(b);
    }
    return ShuffleEvent.newBuilder().setMapOutputIndexed(m).build();
  }

  private static ShuffleEvent containers(String job, int running) {
    return ShuffleEvent.newBuilder().setContainersRunning(ContainersRunning.newBuilder()
        .setJobId(job).setHost("nm1").setRunning(running)).build();
  }
}
