package io.datcp.scheduler.plan;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

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
 * The usable rate of a host's downlink is what the first job's flows were measured to achieve
 * there ({@link AchievedShare}); before anything was measured, the downlink times the target
 * utilisation.
 */
public final class DeadlinePlanner {
  private static final double NANOS_PER_SECOND = 1e9;

  private final AchievedShare.Capacity prior;

  public DeadlinePlanner(long downlinkBitsPerSecond, double targetUtilisation) {
    this.prior = AchievedShare.Capacity.prior(downlinkBitsPerSecond, targetUtilisation);
  }

  /**
   * A job's demand on one host's downlink.
   *
   * @param remainingBytes map-output bytes its reduces on the host still have to fetch
   * @param mapsLeft maps not yet done (0: shuffle-bound)
   * @param lastMapFinishUnixNanos estimated end of its last map; ignored when mapsLeft is 0, and
   *     0 when no map has completed yet so no length is known
   * @param waves map waves still to run, for the reason text (after the running maps when
   *     runningMapsSinceUnixNanos is known, else after the last map completion)
   * @param medianMapNanos median map length, for the reason text
   * @param flowing whether a flow of the job on this host has started (a policy was looked up)
   * @param runningMapsSinceUnixNanos when the earliest running map started, for the reason text;
   *     0 when unknown
   * @param eachStart whether the estimate knew each running map's start, for the reason text
   */
  public record Demand(String jobId, long remainingBytes, int mapsLeft, long lastMapFinishUnixNanos,
      long waves, long medianMapNanos, boolean flowing, long runningMapsSinceUnixNanos,
      boolean eachStart) {
    /** Not knowing when the running maps started. */
    public Demand(String jobId, long remainingBytes, int mapsLeft, long lastMapFinishUnixNanos,
        long waves, long medianMapNanos, boolean flowing) {
      this(jobId, remainingBytes, mapsLeft, lastMapFinishUnixNanos, waves, medianMapNanos,
          flowing, 0, false);
    }
  }

  /**
   * A job's deadline on one host, nanoseconds since the Unix epoch, and why. The reason is text
   * for people (answers, dashboard); hosts are re-planned on nearly every report and most plans
   * are never read, so it is rendered on first use only.
   */
  public static final class Deadline {
    private final long unixNanos;
    private final Supplier<String> explain;
    /** The shuffle-bound jobs ordered before this one; null when it waits for maps. */
    private final Set<String> ahead;
    /** The job's remaining bytes the deadline was planned for. */
    private final long ownBytes;
    /** Planned while the job's flows ran; a plan made before they started is provisional. */
    private final boolean flowing;
    /** The host's usable rate the plan was made with, bits/s. */
    private final double usableBitsPerSecond;
    /** Rendered reason; racy memoisation is fine, any thread renders the same text. */
    private String reason;

    Deadline(long unixNanos, Supplier<String> explain, double usableBitsPerSecond) {
      this(unixNanos, explain, null, 0, false, usableBitsPerSecond);
    }

    Deadline(long unixNanos, Supplier<String> explain, Set<String> ahead, long ownBytes,
        boolean flowing, double usableBitsPerSecond) {
      this.unixNanos = unixNanos;
      this.explain = explain;
      this.ahead = ahead;
      this.ownBytes = ownBytes;
      this.flowing = flowing;
      this.usableBitsPerSecond = usableBitsPerSecond;
    }

    public double usableBitsPerSecond() {
      return usableBitsPerSecond;
    }

    public long unixNanos() {
      return unixNanos;
    }

    /** Whether the job still waits for maps. */
    public boolean waiting() {
      return ahead == null;
    }

    /** Whether this is the first shuffle-bound job in the host's order. */
    public boolean first() {
      return ahead != null && ahead.isEmpty();
    }

    /** Position in the host's smallest-remaining-shuffle-first order, 1 first; 0 when waiting. */
    public int rank() {
      return ahead == null ? 0 : ahead.size() + 1;
    }

    /** The job's remaining bytes on the host when it is shuffle-bound; 0 when it waits. */
    public long ownBytes() {
      return ownBytes;
    }

    public String reason() {
      String r = reason;
      if (r == null) {
        r = explain.get();
        reason = r;
      }
      return r;
    }
  }

  /** Deadlines for every job in {@code demands} sharing {@code host}'s downlink. */
  public Map<String, Deadline> plan(String host, List<Demand> demands, long nowUnixNanos) {
    return plan(host, demands, nowUnixNanos, Map.of());
  }

  /**
   * As {@link #plan(String, List, long)}, given the host's previous plan: a shuffle-bound job
   * keeps its deadline while no job got ahead of it and no bytes of its own were discovered, and
   * moves only earlier when one ahead left. Re-planning from "now" at every report would slide
   * the deadline of a job that falls behind later and later, so its flows would never look late
   * and DATCP would never hurry them (§4.4 sets the deadlines once). A deadline planned before
   * the job's first flow on the host started is not kept: the map side reports a map's output
   * when its container ends, up to a second before the reduce polls for it and fetches, and
   * §4.4 counts a deadline from the flows' start.
   */
  public Map<String, Deadline> plan(String host, List<Demand> demands, long nowUnixNanos,
      Map<String, Deadline> previous) {
    return plan(host, demands, nowUnixNanos, previous, prior);
  }

  /** As {@link #plan(String, List, long, Map)}, at the rate {@code capacity} of the host. */
  public Map<String, Deadline> plan(String host, List<Demand> demands, long nowUnixNanos,
      Map<String, Deadline> previous, AchievedShare.Capacity capacity) {
    double usableBitsPerSecond = capacity.bitsPerSecond();
    Map<String, Deadline> out = new LinkedHashMap<>();
    List<Demand> shuffleBound = new ArrayList<>();
    List<Demand> waiting = new ArrayList<>();
    for (Demand d : demands) {
      // nothing known to fetch (no partition size reported yet): no deadline, no share
      if (d.remainingBytes() > 0) {
        (d.mapsLeft() == 0 ? shuffleBound : waiting).add(d);
      }
    }
    // §4.4: a job with all maps done ends with its shuffle, so its flows go first, smallest
    // remaining shuffle first; job id breaks ties so plans are stable.
    shuffleBound.sort(Comparator.comparingLong(Demand::remainingBytes)
        .thenComparing(Demand::jobId));
    long aheadAndOwn = 0;
    int ranked = shuffleBound.size();
    Set<String> ahead = new HashSet<>();
    for (int i = 0; i < ranked; i++) {
      Demand d = shuffleBound.get(i);
      aheadAndOwn += d.remainingBytes();
      long t = transferNanos(aheadAndOwn, usableBitsPerSecond);
      int rank = i + 1;
      long bytes = aheadAndOwn;
      Supplier<String> planned = () -> "maps all done, so the job ends"
          + " with its shuffle: smallest-remaining-shuffle-first rank " + rank + " of " + ranked
          + " on " + host + "; " + mb(bytes) + " up to and including this job at "
          + capacity.describe() + " -> " + s(t);
      long deadline = nowUnixNanos + t;
      Supplier<String> why = planned;
      Deadline before = previous.get(d.jobId());
      if (before != null && before.flowing && before.ahead != null
          && before.ahead.containsAll(ahead)
          && d.remainingBytes() <= before.ownBytes && before.unixNanos < deadline) {
        long kept = before.unixNanos;
        deadline = kept;
        why = () -> "kept " + s(kept - nowUnixNanos) + " from the earlier plan (no job got"
            + " ahead, no new bytes); now: " + planned.get();
      }
      if (!d.flowing()) {
        Supplier<String> planned0 = why;
        why = () -> planned0.get() + " (provisional: counted from now until its first flow starts)";
      }
      out.put(d.jobId(), new Deadline(deadline, why, Set.copyOf(ahead), d.remainingBytes(),
          d.flowing(), usableBitsPerSecond));
      ahead.add(d.jobId());
    }
    // §4.4: rushing a job that still waits for maps buys nothing; aim at its last map's end.
    int sharing = shuffleBound.size() + waiting.size();
    double fairShare = usableBitsPerSecond / sharing;
    for (Demand d : waiting) {
      long floor = transferNanos(d.remainingBytes(), fairShare);
      Supplier<String> floorText = () -> mb(d.remainingBytes()) + " at a fair share of "
          + mbit(fairShare) + " (1/" + sharing + ") -> " + s(floor);
      if (d.lastMapFinishUnixNanos() == 0) {
        out.put(d.jobId(), new Deadline(nowUnixNanos + floor, () -> "waiting for " + d.mapsLeft()
            + " maps of unknown length (no run time reported yet): " + floorText.get(),
            usableBitsPerSecond));
        continue;
      }
      long untilMaps = Math.max(0, d.lastMapFinishUnixNanos() - nowUnixNanos);
      Supplier<String> mapsText = () -> "waiting for " + d.mapsLeft() + " maps: "
          + (d.runningMapsSinceUnixNanos() == 0 ? d.waves() + " wave(s) x median map "
              + s(d.medianMapNanos()) + " after the last map completion"
              : d.eachStart()
                  ? "the running ones (the first started "
                      + s(nowUnixNanos - d.runningMapsSinceUnixNanos()) + " ago) end a median map "
                      + s(d.medianMapNanos()) + " after each one's start"
                      + (d.waves() == 0 ? "" : ", the rest take their slots as they free ("
                          + d.waves() + " round(s))")
                  : "the running ones (the first started "
                      + s(nowUnixNanos - d.runningMapsSinceUnixNanos()) + " ago) end a median map "
                      + s(d.medianMapNanos()) + " after their start"
                      + (d.waves() == 0 ? "" : ", then " + d.waves() + " wave(s) of the rest"))
          + " -> " + s(untilMaps);
      out.put(d.jobId(), untilMaps >= floor
          ? new Deadline(nowUnixNanos + untilMaps, () -> mapsText.get() + "; floor "
              + floorText.get(), usableBitsPerSecond)
          : new Deadline(nowUnixNanos + floor, () -> mapsText.get() + ", raised to the floor "
              + floorText.get(), usableBitsPerSecond));
    }
    return out;
  }

  /** Time to move {@code bytes} at {@code bitsPerSecond}, nanoseconds. */
  public static long transferNanos(long bytes, double bitsPerSecond) {
    return (long) Math.ceil(bytes * 8.0 / bitsPerSecond * NANOS_PER_SECOND);
  }

  private static String mb(long bytes) {
    return decimal(bytes / 1e6, 1) + " MB";
  }

  private static String mbit(double bitsPerSecond) {
    return decimal(bitsPerSecond / 1e6, 1) + " Mbit/s";
  }

  private static String s(long nanos) {
    return decimal(nanos / NANOS_PER_SECOND, 2) + " s";
  }

  /**
   * {@code value} with {@code digits} decimals as {@code %.Nf} prints it in the root locale
   * (half up from the shortest decimal form of the double). String.format builds a Formatter
   * and locale symbols on every call, which was the bulk of the planner's allocation under load.
   */
  public static String decimal(double value, int digits) {
    return BigDecimal.valueOf(value).setScale(digits, RoundingMode.HALF_UP).toPlainString();
  }
}
