package io.datcp.scheduler.plan;

import io.datcp.scheduler.common.Stripes;
import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobRegistry;
import io.datcp.scheduler.jobs.MapEndEstimate;
import io.datcp.scheduler.plan.DeadlinePlanner.Deadline;
import io.datcp.scheduler.plan.DeadlinePlanner.Demand;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The planning step, and its one entry point: every job publishes its demand on each reducer
 * host's downlink ({@link #publishDemands}), and {@link #replan} turns the demands on a host into
 * that host's plan ({@link DeadlinePlanner}, at the rate {@link AchievedShare} measured there).
 * Deadlines that moved materially are handed to a {@link Moves} the caller gives (the serve step
 * pushes them to agents), so planning itself knows nothing of agents. When planning later runs
 * only on the elected leader, this is the class to gate.
 *
 * <p>Concurrency: a job's demands are replaced whole under that job's lock (held by the caller);
 * a host's plan is computed under the host's stripe of this class's own locks. Lock order: job
 * stripes, then one host stripe; never a job stripe under a host stripe.
 */
public final class Replanner {
  /** A re-plan is pushed to agents only when a deadline moves by more than this, nanoseconds. */
  private static final long MIN_UPDATE_SHIFT_NANOS = 50_000_000L;
  /** ... and by more than this share of the time left to the old deadline. */
  private static final double MIN_UPDATE_SHIFT_SHARE = 0.1;

  /**
   * Lock stripes, a power of two. Calls on the event loops that collide on a stripe wait for its
   * holder, for 10-36 ms when the machine is oversubscribed and the holder preempted (JFR at
   * 10,000 hosts with 256 stripes): with 4,096 (about 100 KB of locks) two of 32 concurrent jobs
   * share a stripe a sixteenth as often.
   */
  public static final int STRIPES = 4096;

  /** Told of every deadline on a host that is news to the agents following the job there. */
  @FunctionalInterface
  public interface Moves {
    /**
     * {@code job} (null when no longer running) has deadline {@code d} on {@code host}. Called
     * under the host's lock, without the job's.
     */
    void moved(Job job, String host, Deadline d, long now);
  }

  /** What a plan decision that is news to a job's agents changed (planner metrics). */
  public enum Decision {
    /** The job's first deadline on the host. */
    NEW("new"),
    /** The job became first on the host's downlink. */
    FIRST("first"),
    /** Another job became first. */
    NOT_FIRST("not_first"),
    /** The job started waiting for maps. */
    WAITING("waiting"),
    /** The job stopped waiting for maps. */
    MAPS_DONE("maps_done"),
    /** Only its deadline moved, materially. */
    MOVED("moved");

    public final String label;

    Decision(String label) {
      this.label = label;
    }
  }

  private final Stripes hostLocks = new Stripes(STRIPES);
  private volatile Consumer<Decision> decisions = d -> { };
  private final JobRegistry registry;
  private final DeadlinePlanner planner;
  private final AchievedShare achieved;
  /** planner.policy=order: only a change of class is news, not a moved deadline. */
  private final boolean orderOnly;
  /** Reducer host -> job -> deadline; written under the host's lock, read anywhere. */
  private final Map<String, Map<String, Deadline>> hostPlans = new ConcurrentHashMap<>();
  /**
   * Job -> reducer host -> its demand on that host's downlink, an immutable record replaced
   * under the job's lock after every change, so a host's plan never reads another job's state
   * while it changes.
   */
  private final Map<String, Map<String, Demand>> demands = new ConcurrentHashMap<>();

  /**
   * @param downlinkBitsPerSecond planner.downlinkBitsPerSecond
   * @param targetUtilisation planner.targetUtilisation
   * @param orderOnly planner.policy=order
   */
  public Replanner(JobRegistry registry, long downlinkBitsPerSecond, double targetUtilisation,
      boolean orderOnly) {
    this.registry = registry;
    this.planner = new DeadlinePlanner(downlinkBitsPerSecond, targetUtilisation);
    this.achieved = new AchievedShare(downlinkBitsPerSecond, targetUtilisation);
    this.orderOnly = orderOnly;
  }

  /** Told of every decision handed to {@code Moves}, by what it changed. */
  public void onDecision(Consumer<Decision> listener) {
    decisions = listener;
  }

  public boolean orderOnly() {
    return orderOnly;
  }

  /** The deadline {@code jobId} has in {@code host}'s current plan, or null. */
  public Deadline planned(String host, String jobId) {
    Map<String, Deadline> plan = hostPlans.get(host);
    return plan == null ? null : plan.get(jobId);
  }

  /**
   * Re-plans {@code hosts}, one host lock at a time, from the demands their jobs published, and
   * hands deadlines that moved materially to {@code moves}.
   */
  public void replan(Set<String> hosts, long now, Moves moves) {
    for (String host : hosts) {
      try (Stripes.Held held = hostLocks.hold(host)) {
        Map<String, Deadline> old = hostPlans.getOrDefault(host, Map.of());
        List<Demand> on = demandsOn(host);
        Map<String, Deadline> plan = planner.plan(host, on, now, old, achieved.usable(host));
        for (Demand demand : on) {
          Deadline d = plan.get(demand.jobId());
          if (demand.flowing() && d != null && !d.first()) {
            achieved.plannedBehind(host, demand.jobId());
          }
        }
        if (plan.isEmpty()) {
          hostPlans.remove(host);
        } else {
          hostPlans.put(host, plan);
        }
        plan.forEach((jobId, d) -> {
          Decision news = news(old.get(jobId), d, now);
          if (news != null) {
            decisions.accept(news);
            moves.moved(registry.running(jobId), host, d, now);
          }
        });
      }
    }
  }

  /**
   * What changed for a job from {@code before} to {@code d} that its agents must hear, or null
   * when nothing did: a job that became first or stopped waiting changes importance, phi and
   * quench even when its deadline stays where it was; with the order policy nothing else is news.
   */
  private Decision news(Deadline before, Deadline d, long now) {
    if (before == null) {
      return Decision.NEW;
    }
    if (before.first() != d.first()) {
      return d.first() ? Decision.FIRST : Decision.NOT_FIRST;
    }
    if (before.waiting() != d.waiting()) {
      return d.waiting() ? Decision.WAITING : Decision.MAPS_DONE;
    }
    return !orderOnly && movedMaterially(before.unixNanos(), d.unixNanos(), now)
        ? Decision.MOVED : null;
  }

  /**
   * A flow of {@code jobId} to {@code host} ended: a sample of the rate the host's first job
   * achieves, once the job ends.
   */
  public void flowEnded(String host, String jobId, long bytes, long startUnixNanos,
      long finishUnixNanos) {
    achieved.flowEnded(host, jobId, bytes, startUnixNanos, finishUnixNanos);
  }

  /**
   * {@code job} ended and its demands are withdrawn: its episodes on every host it reduced on
   * become samples of the first job's rate, before the hosts are re-planned. Each under the
   * host's lock, so that a plan that still read the job's demand has marked it behind by then,
   * and no later plan reopens an episode nothing would close. Caller holds the job's lock.
   */
  public void closeEpisodes(Job job) {
    Set<String> hosts = new HashSet<>();
    for (Job.Reduce r : job.reduces()) {
      hosts.add(r.host());
    }
    for (String host : hosts) {
      try (Stripes.Held held = hostLocks.hold(host)) {
        achieved.jobEnded(host, job.id());
      }
    }
  }

  private static boolean movedMaterially(long before, long after, long now) {
    long shift = Math.abs(after - before);
    return shift > MIN_UPDATE_SHIFT_NANOS
        && shift > MIN_UPDATE_SHIFT_SHARE * Math.max(0, before - now);
  }

  /** The published demands of the jobs shuffling on {@code host}. */
  private List<Demand> demandsOn(String host) {
    List<Demand> on = new ArrayList<>();
    for (Job job : registry.shufflingOn(host)) {
      Demand d = demands.getOrDefault(job.id(), Map.of()).get(host);
      if (d != null) {
        on.add(d);
      }
    }
    return on;
  }

  /**
   * Republishes {@code job}'s demand on the hosts it shuffles on (none once it finished):
   * computed afresh on {@code changed} hosts (null: all), kept on the others, unless its map
   * slots come from container counts, which every reduce start or shuffle end moves. Each
   * host's demand is one immutable record, replaced whole, so a plan reads a consistent one;
   * a report that touched one host costs O(1), not O(the job's reduces). A demand computed while
   * maps of known length are left leaves the estimate of the last map's end on the job
   * ({@link Job#mapEndEstimated}), made at {@code now}. Caller holds the job's lock.
   */
  public void publishDemands(Job job, Set<String> changed, long now) {
    if (job.finished()) {
      demands.remove(job.id());
      return;
    }
    Map<String, Demand> byHost = demands.computeIfAbsent(job.id(),
        j -> new ConcurrentHashMap<>());
    MapEndEstimate mapEnd = mapEnd(job, now);
    Set<String> hosts;
    if (changed == null || job.mapSlotsFromContainers() >= 0) {
      hosts = new HashSet<>();
      for (Job.Reduce r : job.reduces()) {
        if (r.shuffling()) {
          hosts.add(r.host());
        }
      }
      byHost.keySet().retainAll(hosts);
    } else {
      hosts = new HashSet<>();
      for (String h : changed) {
        if (job.shufflingOn(h).isEmpty()) {
          byHost.remove(h);
        } else {
          hosts.add(h);
        }
      }
    }
    hosts.forEach(h -> byHost.put(h, demand(job, h, mapEnd)));
    if (mapEnd != null && !hosts.isEmpty()) {
      job.mapEndEstimated(mapEnd);
    }
  }

  private static Demand demand(Job job, String host, MapEndEstimate mapEnd) {
    long remaining = 0;
    for (Job.Reduce r : job.shufflingOn(host)) {
      remaining += job.remainingBytes(r);
    }
    int mapsLeft = Math.max(0, job.totalMaps() - job.mapsDone());
    return mapEnd == null
        ? new Demand(job.id(), remaining, mapsLeft, 0, 0, job.medianMapRunTimeNanos(),
            job.flowingOn(host))
        : new Demand(job.id(), remaining, mapsLeft, mapEnd.mapWaveUnixNanos(), mapEnd.waves(),
            mapEnd.medianMapNanos(), job.flowingOn(host), mapEnd.runningMapsSinceUnixNanos(),
            mapEnd.rule() == MapEndEstimate.Rule.EACH_START);
  }

  /**
   * When {@code job}'s last map should end, by the rule the reports allow (each running map's
   * start, the earliest one's, or neither: {@link MapEndEstimate.Rule}) and by the others it can
   * make; null when no map is left or none has a known length.
   */
  static MapEndEstimate mapEnd(Job job, long now) {
    int mapsLeft = Math.max(0, job.totalMaps() - job.mapsDone());
    long median = job.medianMapRunTimeNanos();
    if (mapsLeft == 0 || median < 0) {
      return null;
    }
    // §2.2 ("map tasks within a job always have similar lengths ... so job scheduler can
    // speculate finish time of maps"): every map takes about the median; slots and waves are ours
    int fromContainers = job.mapSlotsFromContainers();
    int running = job.mapsRunning();
    int slots = running > 0 ? running : fromContainers > 0 ? fromContainers : mapsLeft;
    long lastCompletionWaves = (mapsLeft + slots - 1) / slots;
    long lastCompletion = job.lastMapCompletionUnixNanos() + lastCompletionWaves * median;
    if (running <= 0 || job.runningMapsSinceUnixNanos() <= 0) {
      return new MapEndEstimate(now, job.mapsDone(), running, 0, median, lastCompletionWaves,
          lastCompletion, lastCompletion, 0, MapEndEstimate.Rule.LAST_COMPLETION);
    }
    long runningSince = job.runningMapsSinceUnixNanos();
    int notStarted = Math.max(0, mapsLeft - running);
    long waves = (notStarted + slots - 1) / slots;
    long earliestStart = Math.max(job.lastMapCompletionUnixNanos(), runningSince + median)
        + waves * median;
    long[] starts = job.runningMapStartsUnixNanos();
    return starts.length == running
        ? new MapEndEstimate(now, job.mapsDone(), running, runningSince, median, waves,
            eachStart(starts, notStarted, median, now), lastCompletion, earliestStart,
            MapEndEstimate.Rule.EACH_START)
        : new MapEndEstimate(now, job.mapsDone(), running, runningSince, median, waves,
            earliestStart, lastCompletion, earliestStart, MapEndEstimate.Rule.EARLIEST_START);
  }

  /**
   * The last map's end by list scheduling over the slots (beyond the paper, which names no
   * schedule): the map started at {@code starts[i]} (ascending) ends at max(now, start + median)
   * and frees its slot; each of the {@code notStarted} maps takes the slot that frees first and
   * holds it one median. Starts after {@code now} (a skewed clock) count as now, so the slots
   * free within one median of each other and taking them in turn is taking the earliest free:
   * with q = notStarted / slots and r = notStarted % slots, the slots that free first run q + 1
   * more maps, the others q, and the last end is the latest of those slots' ends. O(1).
   */
  static long eachStart(long[] starts, int notStarted, long median, long now) {
    int slots = starts.length;
    long q = notStarted / slots;
    int r = notStarted % slots;
    long end = free(starts[slots - 1], median, now) + q * median;
    return r == 0 ? end : Math.max(end, free(starts[r - 1], median, now) + (q + 1) * median);
  }

  /** When the slot of a map that started at {@code start} frees: a median later, not before now. */
  private static long free(long start, long median, long now) {
    return Math.max(now, Math.min(start, now) + median);
  }

  /** Hosts where {@code job} has a reduce still shuffling. */
  public static Set<String> shufflingHosts(Job job) {
    Set<String> hosts = new HashSet<>();
    for (Job.Reduce r : job.reduces()) {
      if (r.shuffling()) {
        hosts.add(r.host());
      }
    }
    return hosts;
  }
}
