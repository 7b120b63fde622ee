package io.datcp.scheduler.flows;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The flow log: per-job windows and exact counts, with a lock per job (issue 9 item 10). */
class FlowLogTest {
  private static FlowOutcome outcome(String job, long start, boolean met, FlowKey key) {
    return new FlowOutcome(job, 0, "m1", "r1", 1000, start, start + 10, start + 5, met,
        QuenchOutcome.NONE, key);
  }

  @Test
  void concurrentAddsForManyJobsKeepExactCounts() throws Exception {
    FlowLog log = new FlowLog(100, 200_000);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int thread = t;
        done.add(pool.submit(() -> {
          for (int i = 0; i < 10_000; i++) {
            // threads share jobs, so adds to one job's window race unless it is locked
            log.add(outcome("job_" + i % 8, thread * 10_000L + i, i % 4 != 0, null));
          }
        }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(log.overall()).isEqualTo(new FlowLog.Tally(30_000, 40_000));
    assertThat(log.tally("job_3")).isEqualTo(new FlowLog.Tally(5_000, 5_000));
    assertThat(log.tally("job_0")).isEqualTo(new FlowLog.Tally(0, 5_000));
    assertThat(log.flows("job_3", 1_000)).hasSize(100);
    assertThat(log.recent(1_000)).hasSize(800);
  }

  @Test
  void aSecondOutcomeOfOneFlowReplacesTheFirstAndForgetKeepsTheOverallCounts() {
    FlowLog log = new FlowLog(10, 200_000);
    FlowKey key = new FlowKey("j", 0, "m1", List.of(3), "10.0.0.1", 1, "10.0.0.2", 2, 0);
    log.add(outcome("j", 1, false, key));
    log.add(outcome("j", 2, true, key));

    assertThat(log.tally("j")).isEqualTo(new FlowLog.Tally(1, 1));
    assertThat(log.flows("j", 10)).extracting(FlowOutcome::startUnixNanos).containsExactly(2L);
    log.forget("j");
    assertThat(log.flows("j", 10)).isEmpty();
    assertThat(log.overall()).isEqualTo(new FlowLog.Tally(1, 1));
  }
}
