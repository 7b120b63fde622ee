package io.datcp.scheduler.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Lock stripes: one key excludes itself. */
class StripesTest {
  @Test
  void holdersOfOneKeyExcludeEachOther() throws Exception {
    Stripes stripes = new Stripes(64);
    long[] counter = new long[1];
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        done.add(pool.submit(() -> {
          for (int i = 0; i < 20_000; i++) {
            try (Stripes.Held held = stripes.hold("job_0")) {
              counter[0]++;
            }
          }
        }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(counter[0]).isEqualTo(4 * 20_000);
  }

  @Test
  void theCountMustBeAPowerOfTwo() {
    assertThatThrownBy(() -> new Stripes(100)).isInstanceOf(IllegalArgumentException.class);
  }
}
