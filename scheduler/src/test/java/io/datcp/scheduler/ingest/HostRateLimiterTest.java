package io.datcp.scheduler.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class HostRateLimiterTest {
  private final AtomicLong now = new AtomicLong();
  private final HostRateLimiter limiter = new HostRateLimiter(10, 5, now::get);

  @Test
  void aHostGetsItsBurstThenItsRate() {
    for (int i = 0; i < 5; i++) {
      assertThat(limiter.tryAcquire("noisy")).isTrue();
    }
    assertThat(limiter.tryAcquire("noisy")).isFalse();
    now.addAndGet(100_000_000L);
    assertThat(limiter.tryAcquire("noisy")).isTrue();
    assertThat(limiter.tryAcquire("noisy")).isFalse();
  }

  @Test
  void oneNoisyHostDoesNotStarveAnother() {
    while (limiter.tryAcquire("noisy")) {
      // drain the noisy host's bucket
    }
    assertThat(limiter.tryAcquire("quiet")).isTrue();
  }
}
