package io.datcp.scheduler.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Lock stripes: one key excludes itself, key sets in any order cannot deadlock. */
class StripesTest {
  @Test
  void keySetsNamedInOppositeOrdersNeverDeadlockAndExcludeEachOther() throws Exception {
    Stripes stripes = new Stripes(64);
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      keys.add("job_" + i);
    }
    List<String> reversed = new ArrayList<>(keys);
    Collections.reverse(reversed);
    long[] counter = new long[1];
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        List<String> mine = t % 2 == 0 ? keys : reversed;
        done.add(pool.submit(() -> {
          for (int i = 0; i < 20_000; i++) {
            // Every holder shares job_0 with every other, so the increments must not race.
            try (Stripes.Held held = stripes.hold(i % 2 == 0 ? mine : List.of("job_0"))) {
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

  @Test
  void aKeyNamedTwiceIsTakenOnceAndReleasedFully() throws Exception {
    Stripes stripes = new Stripes(4096);
    try (Stripes.Held held = stripes.hold(List.of("job_1", "job_2", "job_1"))) {
      assertThat(held).isNotNull();
    }
    ExecutorService other = Executors.newSingleThreadExecutor();
    try {
      // a stripe locked twice and unlocked once would keep this thread waiting
      assertThat(other.submit(() -> {
        try (Stripes.Held again = stripes.hold("job_1")) {
          return true;
        }
      }).get(10, TimeUnit.SECONDS)).isTrue();
    } finally {
      other.shutdownNow();
    }
  }
}
