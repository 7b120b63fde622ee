package io.datcp.scheduler;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.limits.HostRateLimiter;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.store.PolicyStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Clock;

/** Builds a domain service on a temporary store, for tests below the network adapters. */
public final class TestServices {
  private TestServices() {}

  public static SchedulerService create(Path dir, Clock clock, SchedulerConf conf) {
    PolicyStore store = PolicyStore.open(dir, new ObjectMapper());
    PolicyBook book = new PolicyBook(store, conf.get(SchedulerConf.DEFAULT_MODE),
        conf.get(SchedulerConf.DEFAULT_QUENCH_MODE));
    return new SchedulerService(conf, book, clock,
        new HostRateLimiter(conf.get(SchedulerConf.REPORT_RATE_PER_HOST),
            conf.get(SchedulerConf.REPORT_BURST_PER_HOST), System::nanoTime),
        new SimpleMeterRegistry());
  }
}
