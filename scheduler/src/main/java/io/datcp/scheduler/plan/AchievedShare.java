package io.datcp.scheduler.plan;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The rate that the first job in a reducer host's order actually achieves on that host's
 * downlink, measured from its flows' outcomes, so that the planner promises what the transport
 * delivers on this fabric (while the other jobs' flows sit at their minimum window) instead of a
 * share picked for one scenario.
 *
 * <p>One sample per job and host (an <em>episode</em>): the bytes of the job's finished flows to
 * the host over the union of their [start, finish] intervals, so that a pause between two of its
 * fetches (a reduce learns of a map a poll late) is not counted as slowness. An episode counts
 * only if the job was first in every plan made while its flows ran there, and only once the job
 * has ended (its outcomes are in): {@link #jobEnded} closes it. Episodes shorter than {@link
 * #MIN_EPISODE_NANOS} measure the fetch set-up and slow start rather than the link and are
 * dropped.
 *
 * <p>The planner's rate for a host is the lowest tenth (nearest rank) of the host's last
 * {@link #SAMPLES_KEPT} samples; a host without samples uses those of all hosts, and before any
 * sample the configured prior. Rates vary from episode to episode (how the ECN back-offs of the
 * first job's flows fall); planning at a low quantile keeps the promise in most of them. Below
 * {@link #QUANTILE_SAMPLES} samples the lowest one is no such quantile (the next episode falls
 * below the lowest of n with probability 1/(n+1)), so until then measurements may only lower
 * the rate below the prior, never raise it above.
 */
public final class AchievedShare {
  static final int SAMPLES_KEPT = 20;
  static final int QUANTILE_SAMPLES = 10;
  static final long MIN_EPISODE_NANOS = 500_000_000L;
  /** Open episodes kept per host; the oldest is dropped beyond (their jobs never ended). */
  static final int MAX_OPEN_PER_HOST = 256;
  private static final double NANOS_PER_SECOND = 1e9;
  /** Flow intervals kept per episode (see {@link #compact}). */
  static final int MAX_INTERVALS = 1_024;

  /** Where a rate came from, for the planner's reasons. */
  public enum Source { HOST, ALL_HOSTS, PRIOR }

  /** The rate the planner counts on for one host, and where it came from. */
  public record Capacity(double bitsPerSecond, Source source, int samples) {
    /** The configured prior: {@code utilisation} of a downlink of {@code downlinkBitsPerSecond}. */
    public static Capacity prior(long downlinkBitsPerSecond, double utilisation) {
      return new Capacity(downlinkBitsPerSecond * utilisation, Source.PRIOR, 0);
    }

    public String describe() {
      String rate = DeadlinePlanner.decimal(bitsPerSecond / 1e6, 1) + " Mbit/s";
      String which = samples < QUANTILE_SAMPLES
          ? "lowest of the " + samples + " first-job shuffles measured"
              + ", at most planner.targetUtilisation of the downlink until "
              + QUANTILE_SAMPLES + " are,"
          : "lowest tenth of the last " + samples + " first-job shuffles measured";
      return switch (source) {
        case HOST -> rate + " (" + which + " on this host)";
        case ALL_HOSTS -> rate + " (" + which + " on all hosts; none yet on this host)";
        case PRIOR -> rate + " (planner.targetUtilisation of the downlink: nothing measured yet)";
      };
    }
  }

  private static final class Episode {
    final List<long[]> intervals = new ArrayList<>();
    long bytes;
    boolean behind;
  }

  private static final class Host {
    final Map<String, Episode> open = new LinkedHashMap<>();
    final Deque<Double> samples = new ArrayDeque<>();
  }

  private final double downlinkBitsPerSecond;
  private final Capacity prior;
  private final Map<String, Host> hosts = new ConcurrentHashMap<>();
  private final Deque<Double> allSamples = new ArrayDeque<>();

  public AchievedShare(long downlinkBitsPerSecond, double priorUtilisation) {
    this.downlinkBitsPerSecond = downlinkBitsPerSecond;
    this.prior = Capacity.prior(downlinkBitsPerSecond, priorUtilisation);
  }

  /** A finished flow of {@code jobId} to {@code host}: part of the job's episode there. */
  public void flowEnded(String host, String jobId, long bytes, long startUnixNanos,
      long finishUnixNanos) {
    if (finishUnixNanos <= startUnixNanos || bytes <= 0) {
      return;
    }
    Host h = hosts.computeIfAbsent(host, k -> new Host());
    synchronized (h) {
      Episode e = episode(h, jobId);
      e.bytes += bytes;
      e.intervals.add(new long[] {startUnixNanos, finishUnixNanos});
      if (e.intervals.size() > MAX_INTERVALS) {
        compact(e.intervals);
      }
    }
  }

  /**
   * Keeps an episode's intervals bounded however many outcomes agents report: merges them into
   * their union and, while that has over half of {@link #MAX_INTERVALS} pieces, bridges the
   * shortest gaps. A bridged gap counts as busy, so the measured rate can only come out lower
   * (planning for less than the link gave is the safe side); halving makes this O(log n) per
   * flow, amortised.
   */
  static void compact(List<long[]> intervals) {
    intervals.sort((a, b) -> Long.compare(a[0], b[0]));
    List<long[]> union = new ArrayList<>();
    for (long[] iv : intervals) {
      long[] last = union.isEmpty() ? null : union.get(union.size() - 1);
      if (last != null && iv[0] <= last[1]) {
        last[1] = Math.max(last[1], iv[1]);
      } else {
        union.add(new long[] {iv[0], iv[1]});
      }
    }
    int bridge = union.size() - MAX_INTERVALS / 2;
    if (bridge > 0) {
      long[] gaps = new long[union.size() - 1];
      for (int i = 1; i < union.size(); i++) {
        gaps[i - 1] = union.get(i)[0] - union.get(i - 1)[1];
      }
      long[] sorted = gaps.clone();
      Arrays.sort(sorted);
      long widest = sorted[bridge - 1];
      List<long[]> bridged = new ArrayList<>();
      for (int i = 0; i < union.size(); i++) {
        if (i > 0 && bridge > 0 && gaps[i - 1] <= widest) {
          bridged.get(bridged.size() - 1)[1] = union.get(i)[1];
          bridge--;
        } else {
          bridged.add(union.get(i));
        }
      }
      union = bridged;
    }
    intervals.clear();
    intervals.addAll(union);
  }

  /**
   * A plan of {@code host} placed {@code jobId} behind another job (or among those waiting for
   * maps) while its flows ran: its episode does not measure the first job's rate.
   */
  public void plannedBehind(String host, String jobId) {
    Host h = hosts.computeIfAbsent(host, k -> new Host());
    synchronized (h) {
      episode(h, jobId).behind = true;
    }
  }

  /**
   * {@code jobId} ended: its episode on {@code host}, if any, is complete and becomes a sample
   * when it measured the first job. Called once per host the job reduced on.
   */
  public void jobEnded(String host, String jobId) {
    Host h = hosts.get(host);
    if (h == null) {
      return;
    }
    synchronized (h) {
      Episode e = h.open.remove(jobId);
      if (e != null) {
        close(h, e);
      }
    }
  }

  /** The rate to plan {@code host} with. */
  public Capacity usable(String host) {
    Host h = hosts.get(host);
    if (h != null) {
      synchronized (h) {
        if (!h.samples.isEmpty()) {
          return measured(h.samples, Source.HOST);
        }
      }
    }
    synchronized (allSamples) {
      if (!allSamples.isEmpty()) {
        return measured(allSamples, Source.ALL_HOSTS);
      }
    }
    return prior;
  }

  private Capacity measured(Deque<Double> samples, Source source) {
    double low = lowestTenth(samples);
    double rate = samples.size() < QUANTILE_SAMPLES ? Math.min(prior.bitsPerSecond(), low) : low;
    return new Capacity(rate, source, samples.size());
  }

  private static Episode episode(Host h, String jobId) {
    Episode e = h.open.get(jobId);
    if (e == null) {
      if (h.open.size() >= MAX_OPEN_PER_HOST) {
        Iterator<String> oldest = h.open.keySet().iterator();
        oldest.next();
        oldest.remove();
      }
      e = new Episode();
      h.open.put(jobId, e);
    }
    return e;
  }

  private void close(Host h, Episode e) {
    long busy = unionNanos(e.intervals);
    if (e.behind || busy < MIN_EPISODE_NANOS) {
      return;
    }
    double rate = Math.min(downlinkBitsPerSecond, e.bytes * 8.0 * NANOS_PER_SECOND / busy);
    keep(h.samples, rate);
    synchronized (allSamples) {
      keep(allSamples, rate);
    }
  }

  private static void keep(Deque<Double> samples, double rate) {
    samples.addLast(rate);
    if (samples.size() > SAMPLES_KEPT) {
      samples.removeFirst();
    }
  }

  /** Flow intervals held for {@code jobId}'s open episode on {@code host}. */
  int intervalsHeld(String host, String jobId) {
    Host h = hosts.get(host);
    if (h == null) {
      return 0;
    }
    synchronized (h) {
      Episode e = h.open.get(jobId);
      return e == null ? 0 : e.intervals.size();
    }
  }

  /** Nanoseconds covered by at least one interval. */
  static long unionNanos(List<long[]> intervals) {
    long[][] sorted = intervals.toArray(new long[0][]);
    Arrays.sort(sorted, (a, b) -> Long.compare(a[0], b[0]));
    long total = 0;
    long start = Long.MIN_VALUE;
    long end = Long.MIN_VALUE;
    for (long[] iv : sorted) {
      if (iv[0] > end) {
        total += end - start;
        start = iv[0];
        end = iv[1];
      } else {
        end = Math.max(end, iv[1]);
      }
    }
    return total + (end - start);
  }

  /** The nearest-rank 10th percentile: the minimum below ten samples. */
  static double lowestTenth(Deque<Double> samples) {
    double[] sorted = samples.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return sorted[Math.max(0, (int) Math.ceil(sorted.length * 0.1) - 1)];
  }
}
