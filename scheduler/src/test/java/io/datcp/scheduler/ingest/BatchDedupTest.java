package io.datcp.scheduler.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class BatchDedupTest {
  private static final long IDLE = 1_000;

  @Test
  void aBatchIsNewOnceInAnyOrder() {
    BatchDedup d = new BatchDedup(IDLE, 1024);
    assertThat(d.firstTime("h", "r", 2, 0)).isTrue();
    assertThat(d.firstTime("h", "r", 1, 0)).isTrue();
    assertThat(d.firstTime("h", "r", 2, 0)).isFalse();
    assertThat(d.firstTime("h", "r", 1, 0)).isFalse();
    assertThat(d.firstTime("h", "r", 5, 0)).isTrue();
    assertThat(d.firstTime("h", "r", 5, 0)).isFalse();
    assertThat(d.firstTime("h", "r", 3, 0)).isTrue();
    assertThat(d.firstTime("h", "other", 1, 0)).isTrue();
  }

  @Test
  void farAheadIdsSlideTheWindowAndOlderIdsCountAsSeen() {
    BatchDedup d = new BatchDedup(IDLE, 1024);
    assertThat(d.firstTime("h", "r", 1, 0)).isTrue();
    long far = 10 * BatchDedup.WINDOW;
    assertThat(d.firstTime("h", "r", far, 0)).isTrue();
    assertThat(d.firstTime("h", "r", far, 0)).isFalse();
    assertThat(d.firstTime("h", "r", far - 1, 0)).isTrue();
    assertThat(d.firstTime("h", "r", 2, 0)).isFalse();
  }

  @Test
  void idleReportersAreForgotten() {
    BatchDedup d = new BatchDedup(IDLE, 1024);
    d.firstTime("h", "old", 1, 0);
    d.firstTime("h", "new", 1, IDLE);
    assertThat(d.size()).isEqualTo(2);
    d.firstTime("h", "new", 2, IDLE + 1);
    assertThat(d.size()).isEqualTo(1);
    assertThat(d.firstTime("h", "old", 1, IDLE + 2)).isTrue();
  }
}
