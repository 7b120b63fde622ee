package io.datcp.scheduler;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.jobs.YarnApps;
import io.datcp.scheduler.limits.HostRateLimiter;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.store.PolicyStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;

/** Builds a domain service on a temporary store, for tests below the network adapters. */
public final class TestServices {
  private TestServices() {}

  /**
   * Development configuration (no node credentials, job attributes from reports) plus {@code
   * extra}: for tests of other behaviour than authentication and the ResourceManager.
   */
  public static SchedulerConf dev(Map<String, String> extra) {
    Map<String, String> all = new HashMap<>(Map.of("auth.nodes.required", "false",
        "jobs.attributesFrom", "reports"));
    all.putAll(extra);
    return SchedulerConf.fromMap(all);
  }

  public static SchedulerConf dev() {
    return dev(Map.of());
  }

  public static SchedulerService create(Path dir, Clock clock, SchedulerConf conf) {
    return create(dir, clock, conf, null);
  }

  /** With {@code yarn} as the ResourceManager (null: none). */
  public static SchedulerService create(Path dir, Clock clock, SchedulerConf conf,
      YarnApps yarn) {
    PolicyStore store = PolicyStore.open(dir, new ObjectMapper());
    PolicyBook book = new PolicyBook(store, conf.get(SchedulerConf.DEFAULT_MODE),
        conf.get(SchedulerConf.DEFAULT_QUENCH_MODE));
    return new SchedulerService(conf, book, clock,
        new HostRateLimiter(conf.get(SchedulerConf.REPORT_RATE_PER_HOST),
            conf.get(SchedulerConf.REPORT_BURST_PER_HOST), System::nanoTime),
        new SimpleMeterRegistry(), yarn);
  }
}
