package io.datcp.scheduler;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.jobs.JobConf;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobPriority;
import io.datcp.scheduler.jobs.YarnApps;
import io.datcp.scheduler.limits.HostRateLimiter;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.store.PolicyStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Clock;
import java.util.HashMap;
import java.util.List;
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

  /**
   * A flow of {@code bytes} from {@code mapHost} to reduce 0 of {@code jobId} on {@code
   * reduceHost} that ran from {@code start} to {@code finish} and met its deadline there.
   */
  public static FlowOutcome outcome(String jobId, String mapHost, String reduceHost, long bytes,
      long start, long finish) {
    return new FlowOutcome(jobId, 0, mapHost, reduceHost, bytes, start, finish, finish, true,
        QuenchOutcome.NONE, null);
  }

  /**
   * Starts a new shuffle-bound job on {@code host} and returns the reason its first flow's
   * deadline gives, which names the rate the host's downlink is planned at.
   */
  public static String newJobsPlan(SchedulerService s, String host, long now) {
    String job = "probe_" + now;
    s.report(host, List.of(
        new JobEvent.ReduceStarted(now, job, 0, host, 1, 1,
            new JobConf("default", "probe", job, JobPriority.NORMAL), 0),
        new JobEvent.MapCompleted(now, job, 0, 0, "probe-map", 1_000_000_000L, 10_000_000L, 0)));
    return s.lookup("probe-map", job, 0, 10_000_000L).reason();
  }
}
