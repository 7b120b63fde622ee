package io.datcp.scheduler.flows;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Turns the jobs shuffling into one reducer host into a deadline per job for their flows on that
 * host's downlink (DATCP §4.4, job A/B), with a reason for each choice.
 *
 * <ul>
 *   <li>A job whose maps are all done finishes as soon as its shuffle does, so rushing it pays:
 *       such <em>shuffle-bound</em> jobs are ordered smallest remaining shuffle first (as coflow
 *       schedulers such as Varys order coflows) and each gets the time the downlink needs for its
 *       own bytes plus those of the jobs ahead of it. DATCP then realises the order without any
 *       central rate control: the first job's flows need the whole usable link, the next ones
 *       less, and precedence follows urgency.
 *   <li>A job still waiting for maps cannot finish before its last map, so rushing its flows buys
 *       nothing: its deadline is the estimated finish of the last map (median map length, in
 *       waves over its map slots), but never tighter than its bytes at a fair share of the link.
 * </ul>
 *
 * Usable capacity is the downlink times the target utilisation, which leaves room for headers,
 * ECN back-off and traffic the scheduler does not see.
 */
public final class DeadlinePlanner {
  private static final double NANOS_PER_SECOND = 1e9;

  private final double usableBitsPerSecond;

  public DeadlinePlanner(long downlinkBitsPerSecond, double targetUtilisation) {
    this.usableBitsPerSecond = downlinkBitsPerSecond * targetUtilisation;
  }

  /**
   * A job's demand on one host's downlink.
   *
   * @param remainingBytes map-output bytes its reduces on the host still have to fetch
   * @param mapsLeft maps not yet done (0: shuffle-bound)
   * @param lastMapFinishUnixNanos estimated end of its last map; ignored when mapsLeft is 0, and
   *     0 when no map has completed yet so no length is known
   * @param waves map waves still to run, for the reason text
   * @param medianMapNanos median map length, for the reason text
   */
  public record Demand(String jobId, long remainingBytes, int mapsLeft, long lastMapFinishUnixNanos,
      long waves, long medianMapNanos) {}

  /** A job's deadline on one host, nanoseconds since the Unix epoch, and why. */
  public record Deadline(long unixNanos, String reason) {}

  /** Deadlines for every job in {@code demands} sharing {@code host}'s downlink. */
  public Map<String, Deadline> plan(String host, List<Demand> demands, long nowUnixNanos) {
    Map<String, Deadline> out = new LinkedHashMap<>();
    List<Demand> shuffleBound = new ArrayList<>();
    List<Demand> waiting = new ArrayList<>();
    for (Demand d : demands) {
      (d.mapsLeft() == 0 ? shuffleBound : waiting).add(d);
    }
    // §4.4: a job with all maps done ends with its shuffle, so its flows go first, smallest
    // remaining shuffle first; job id breaks ties so plans are stable.
    shuffleBound.sort(Comparator.comparingLong(Demand::remainingBytes)
        .thenComparing(Demand::jobId));
    long aheadAndOwn = 0;
    for (int i = 0; i < shuffleBound.size(); i++) {
      Demand d = shuffleBound.get(i);
      aheadAndOwn += d.remainingBytes();
      long t = transferNanos(aheadAndOwn, usableBitsPerSecond);
      out.put(d.jobId(), new Deadline(nowUnixNanos + t, String.format(Locale.ROOT,
          "maps all done, so the job ends with its shuffle: smallest-remaining-shuffle-first"
              + " rank %d of %d on %s; %s up to and including this job at %s -> %s",
          i + 1, shuffleBound.size(), host, mb(aheadAndOwn), mbit(usableBitsPerSecond), s(t))));
    }
    // §4.4: rushing a job that still waits for maps buys nothing; aim at its last map's end.
    double fairShare = usableBitsPerSecond / demands.size();
    for (Demand d : waiting) {
      long floor = transferNanos(d.remainingBytes(), fairShare);
      String floorText = String.format(Locale.ROOT, "%s at a fair share of %s (1/%d) -> %s",
          mb(d.remainingBytes()), mbit(fairShare), demands.size(), s(floor));
      if (d.lastMapFinishUnixNanos() == 0) {
        out.put(d.jobId(), new Deadline(nowUnixNanos + floor, String.format(Locale.ROOT,
            "waiting for %d maps of unknown length (none done yet): %s", d.mapsLeft(),
            floorText)));
        continue;
      }
      long untilMaps = Math.max(0, d.lastMapFinishUnixNanos() - nowUnixNanos);
      String mapsText = String.format(Locale.ROOT,
          "waiting for %d maps: %d wave(s) x median map %s after the last map completion"
              + " -> %s", d.mapsLeft(), d.waves(), s(d.medianMapNanos()), s(untilMaps));
      out.put(d.jobId(), untilMaps >= floor
          ? new Deadline(nowUnixNanos + untilMaps, mapsText + "; floor " + floorText)
          : new Deadline(nowUnixNanos + floor, mapsText + ", raised to the floor " + floorText));
    }
    return out;
  }

  /** Time to move {@code bytes} at {@code bitsPerSecond}, nanoseconds. */
  public static long transferNanos(long bytes, double bitsPerSecond) {
    return (long) Math.ceil(bytes * 8.0 / bitsPerSecond * NANOS_PER_SECOND);
  }

  private static String mb(long bytes) {
    return String.format(Locale.ROOT, "%.1f MB", bytes / 1e6);
  }

  private static String mbit(double bitsPerSecond) {
    return String.format(Locale.ROOT, "%.1f Mbit/s", bitsPerSecond / 1e6);
  }

  private static String s(long nanos) {
    return String.format(Locale.ROOT, "%.2f s", nanos / NANOS_PER_SECOND);
  }
}
