package io.datcp.scheduler.dashboard;

import io.datcp.scheduler.jobs.Job;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Histograms of job completion and shuffle time for operators' own dashboards
 * ({@code datcp_job_completion_seconds}, {@code datcp_job_shuffle_seconds}), labelled by queue and
 * outcome. Both label sets are bounded: outcome is one of three words, and a queue gets its own
 * label only among the first {@link #MAX_QUEUE_LABELS} seen (the rest share {@code other}), so a
 * cluster that creates queues freely cannot grow the scrape without end.
 */
public final class JobMetrics {
  /** Queues with a label of their own; later ones are counted as {@code other}. */
  static final int MAX_QUEUE_LABELS = 32;

  /**
   * Bucket bounds (Prometheus {@code le}), from the testbed's seconds-long shuffles to jobs of an
   * hour (jobs.idleTimeoutSeconds' default); a fixed set keeps the series per label pair at 16.
   */
  private static final Duration[] BUCKETS = {
      Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofSeconds(2),
      Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(20),
      Duration.ofSeconds(30), Duration.ofMinutes(1), Duration.ofMinutes(2),
      Duration.ofMinutes(5), Duration.ofMinutes(10), Duration.ofMinutes(20),
      Duration.ofMinutes(30), Duration.ofHours(1)};

  private final MeterRegistry meters;
  /** Guarded by itself. */
  private final Set<String> queues = new HashSet<>();

  public JobMetrics(MeterRegistry meters) {
    this.meters = meters;
  }

  /** Records a job that ended; called once per job (JobRegistry's retired listener). */
  public void retired(Job job) {
    String queue = queueLabel(job.conf().queue());
    String outcome = job.timedOut() ? "timed_out" : job.succeeded() ? "succeeded" : "failed";
    long completion = job.finishUnixNanos() - job.startUnixNanos();
    if (completion >= 0) {
      timer("datcp.job.completion", "Job completion time: submission (or first report) to"
          + " finish", queue, outcome).record(completion, TimeUnit.NANOSECONDS);
    }
    long shuffle = job.shuffleTimeNanos(job.finishUnixNanos());
    if (shuffle > 0) {
      timer("datcp.job.shuffle", "Job shuffle time: first reduce's shuffle start to the last"
          + " one's end", queue, outcome).record(shuffle, TimeUnit.NANOSECONDS);
    }
  }

  private Timer timer(String name, String description, String queue, String outcome) {
    return Timer.builder(name).description(description).tag("queue", queue)
        .tag("outcome", outcome).serviceLevelObjectives(BUCKETS).register(meters);
  }

  /** The queue's label: its name among the first MAX_QUEUE_LABELS, else other; unknown if none. */
  String queueLabel(String queue) {
    if (queue == null || queue.isEmpty()) {
      return "unknown";
    }
    synchronized (queues) {
      if (queues.contains(queue)) {
        return queue;
      }
      if (queues.size() < MAX_QUEUE_LABELS) {
        queues.add(queue);
        return queue;
      }
    }
    return "other";
  }
}
