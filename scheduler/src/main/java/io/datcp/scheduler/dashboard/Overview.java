package io.datcp.scheduler.dashboard;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import io.datcp.scheduler.jobs.JobView;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * The overview page's data: finished jobs' completion times over time (one point per job), their
 * empirical CDF and the deadline-met ratio of their flows per interval of finish time, for the
 * jobs that pass the operator's filters (queue, user, finish-time range).
 *
 * @param jobs finished jobs that pass the filters, by finish time
 * @param cdf completion times sorted, each with the share of jobs that took at most as long
 * @param bucketNanos width of a {@link #metRatio} interval
 * @param metRatio per interval of finish time with any flow, the met share of those jobs' flows
 * @param queues every queue of a finished job (unfiltered: the filter's choices)
 * @param users every user of a finished job (unfiltered)
 */
public record Overview(long nowUnixNanos, int runningJobs, List<JobPoint> jobs,
    List<CdfPoint> cdf, long bucketNanos, List<MetRatioPoint> metRatio, List<String> queues,
    List<String> users) {

  /**
   * One finished job.
   *
   * @param completionSeconds first report to finish
   * @param shuffleSeconds first reduce's shuffle start to the last one's end
   */
  public record JobPoint(String id, String name, String queue, String user, String state,
      long finishUnixNanos, double completionSeconds, double shuffleSeconds, long flows,
      long flowsMet) {}

  /** Empirical CDF: {@code fraction} of the jobs completed within {@code completionSeconds}. */
  public record CdfPoint(double completionSeconds, double fraction) {}

  /**
   * Flows of the jobs that finished in [{@code startUnixNanos}, start + bucket).
   *
   * @param ratio flowsMet / flows
   */
  public record MetRatioPoint(long startUnixNanos, long flows, long flowsMet, double ratio) {}

  /**
   * What the operator narrows the overview to; empty strings and 0 leave a filter open.
   *
   * @param sinceUnixNanos jobs that finished at or after this
   * @param untilUnixNanos jobs that finished at or before this
   */
  public record Filter(String queue, String user, long sinceUnixNanos, long untilUnixNanos) {
    public Filter {
      require(sinceUnixNanos >= 0, "since", "must be >= 0 (nanoseconds since the epoch)");
      require(untilUnixNanos >= 0, "until", "must be >= 0 (nanoseconds since the epoch)");
      require(untilUnixNanos == 0 || sinceUnixNanos <= untilUnixNanos, "until",
          "must not be before since");
    }

    boolean accepts(JobView j) {
      return (queue.isEmpty() || queue.equals(j.queue()))
          && (user.isEmpty() || user.equals(j.user()))
          && j.finishUnixNanos() >= sinceUnixNanos
          && (untilUnixNanos == 0 || j.finishUnixNanos() <= untilUnixNanos);
    }
  }

  /** At most this many met-ratio intervals: enough to see a trend, few enough to read. */
  static final int MAX_BUCKETS = 24;
  /** Interval widths the met ratio is counted in, seconds: the first that fits MAX_BUCKETS. */
  private static final long[] BUCKET_SECONDS = {1, 5, 10, 30, 60, 300, 600, 1800, 3600, 10800,
      21600, 43200, 86400, 604800};
  private static final double NANOS_PER_SECOND = 1e9;

  /** The overview of {@code views} (running and finished jobs) narrowed by {@code filter}. */
  public static Overview of(List<JobView> views, Filter filter, long nowUnixNanos,
      int runningJobs) {
    TreeSet<String> queues = new TreeSet<>();
    TreeSet<String> users = new TreeSet<>();
    List<JobPoint> points = new ArrayList<>();
    for (JobView j : views) {
      if (j.completionTimeNanos() <= 0) {
        continue;
      }
      if (j.queue() != null) {
        queues.add(j.queue());
      }
      if (j.user() != null) {
        users.add(j.user());
      }
      if (filter.accepts(j)) {
        points.add(new JobPoint(j.id(), j.name(), j.queue(), j.user(), j.state(),
            j.finishUnixNanos(), j.completionTimeNanos() / NANOS_PER_SECOND,
            j.shuffleTimeNanos() / NANOS_PER_SECOND, j.flows(), j.flowsMet()));
      }
    }
    points.sort(Comparator.comparingLong(JobPoint::finishUnixNanos));
    long bucket = bucketNanos(points);
    return new Overview(nowUnixNanos, runningJobs, points, cdf(points), bucket,
        metRatio(points, bucket), List.copyOf(queues), List.copyOf(users));
  }

  private static List<CdfPoint> cdf(List<JobPoint> points) {
    double[] times = points.stream().mapToDouble(JobPoint::completionSeconds).sorted().toArray();
    List<CdfPoint> out = new ArrayList<>();
    for (int i = 0; i < times.length; i++) {
      // F(x) = #{t <= x} / n: a tie keeps only its last (highest) step
      if (i + 1 < times.length && times[i + 1] == times[i]) {
        continue;
      }
      out.add(new CdfPoint(times[i], (i + 1) / (double) times.length));
    }
    return out;
  }

  /** The narrowest width that spans the jobs' finish times in at most MAX_BUCKETS intervals. */
  private static long bucketNanos(List<JobPoint> points) {
    long span = points.isEmpty() ? 0
        : points.get(points.size() - 1).finishUnixNanos() - points.get(0).finishUnixNanos();
    for (long s : BUCKET_SECONDS) {
      long width = TimeUnit.SECONDS.toNanos(s);
      if (span / width < MAX_BUCKETS) {
        return width;
      }
    }
    return TimeUnit.SECONDS.toNanos(BUCKET_SECONDS[BUCKET_SECONDS.length - 1]);
  }

  private static List<MetRatioPoint> metRatio(List<JobPoint> points, long bucket) {
    List<MetRatioPoint> out = new ArrayList<>();
    long start = -1;
    long flows = 0;
    long met = 0;
    for (JobPoint p : points) {
      long b = p.finishUnixNanos() - Math.floorMod(p.finishUnixNanos(), bucket);
      if (b != start) {
        if (flows > 0) {
          out.add(new MetRatioPoint(start, flows, met, (double) met / flows));
        }
        start = b;
        flows = 0;
        met = 0;
      }
      flows += p.flows();
      met += p.flowsMet();
    }
    if (flows > 0) {
      out.add(new MetRatioPoint(start, flows, met, (double) met / flows));
    }
    return out;
  }
}
