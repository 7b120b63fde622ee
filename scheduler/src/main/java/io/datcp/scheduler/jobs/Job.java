package io.datcp.scheduler.jobs;

import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.PolicyDecision;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * Over 400 lines on purpose: every field below is one job's state, changed together under the
 * job's lock and tied by invariants that span them (a reduce's remaining bytes are the outputs
 * of maps done less those it fetched, whichever side reported the sizes; maps done count both
 * reduce and map-side reports once). Splitting it would spread one invariant over classes.
 *
 * <p>What the scheduler knows of one MapReduce job: its maps (done, running, durations), its
 * reduces (host, shuffle progress) and the map-output bytes each reduce still has to fetch.
 * Soft state, rebuilt from the plugin's reports. Mutated only under the job's lock (striped
 * by job id in the ingest and serve steps); the reduces, attributes and policy decision
 * may also be read without it, by re-plans of a host the job shares with others.
 */
public final class Job {

  /**
   * A completed map: where its output lives, which attempt of the map made it ({@link
   * #ATTEMPT_UNKNOWN} when learnt from a lookup), how long it ran, when it finished.
   */
  public record CompletedMap(String host, int attempt, long runTimeNanos,
      long completedAtUnixNanos) {}

  /** The attempt of a map whose output a lookup's flow carries: lookups do not name it. */
  static final int ATTEMPT_UNKNOWN = -1;

  /**
   * Estimates of the last map's end kept per job: one per map completion of a job of 64 maps,
   * and about 5 KB per job in the view.
   */
  static final int MAX_MAP_END_ESTIMATES = 64;

  /** One reduce task and its shuffle. */
  public static final class Reduce {
    final int id;
    final String host;
    final long shuffleStartUnixNanos;
    long shuffleFinishUnixNanos;
    final Map<Integer, Long> outputBytes = new HashMap<>();
    /** Map ids below jobs.maxMaps (checked at ingest): at most that many bits. */
    final BitSet fetchedMaps = new BitSet();
    long fetchedBytes;
    /** When the first flow to this reduce looked up its policy; 0 before. */
    long firstFlowUnixNanos;
    /**
     * Bytes of done, unfetched maps whose size for this reduce is known, and the count of those
     * whose size is not: kept as events arrive, so the remaining bytes cost O(1), not O(maps).
     */
    long knownLeftBytes;
    int unknownLeft;

    Reduce(int id, String host, long shuffleStartUnixNanos) {
      this.id = id;
      this.host = host;
      this.shuffleStartUnixNanos = shuffleStartUnixNanos;
    }

    public int id() {
      return id;
    }

    public String host() {
      return host;
    }

    public long shuffleStartUnixNanos() {
      return shuffleStartUnixNanos;
    }

    /** 0 while the shuffle runs. */
    public long shuffleFinishUnixNanos() {
      return shuffleFinishUnixNanos;
    }

    public long fetchedBytes() {
      return fetchedBytes;
    }

    public boolean shuffling() {
      return shuffleFinishUnixNanos == 0;
    }

    /** When the first flow to this reduce looked up its policy; 0 before. */
    public long firstFlowUnixNanos() {
      return firstFlowUnixNanos;
    }
  }

  private final String id;
  private volatile JobConf conf;
  private volatile boolean attributesKnown;
  private long attributesAskedUnixNanos;
  private long endAskedUnixNanos;
  private long lastReportUnixNanos;
  private boolean timedOut;
  /** Map-side partition sizes: map id -> bytes per reduce (MapOutputIndexed). */
  private final Map<Integer, long[]> partitions = new HashMap<>();
  /** The host each of {@link #partitions} was indexed on, whose loss takes them back. */
  private final Map<Integer, String> indexedOn = new HashMap<>();
  /**
   * Map attempts reported lost, as {@link #attemptKey}: a success of one reported after its loss
   * (by a reduce that learnt the events later) must not make the map done again.
   */
  private final Set<Long> lostAttempts = new HashSet<>();
  private final Map<String, Integer> containersByHost = new HashMap<>();
  private final int totalMaps;
  private final int totalReduces;
  private final long startUnixNanos;
  private final Map<Integer, CompletedMap> maps = new HashMap<>();
  /** Run times of completed maps around their median: the lower half (max first) and upper. */
  private final PriorityQueue<Long> lowerRunTimes = new PriorityQueue<>(Comparator.reverseOrder());
  private final PriorityQueue<Long> upperRunTimes = new PriorityQueue<>();
  /** Maps in {@link #maps} or {@link #partitions}. */
  private int mapsDone;
  /**
   * Entries of per-map state held (completed maps, partition sizes, reduces' output sizes, lost
   * attempts): what this job counts against jobs.maxShuffleEntries until {@link #release}.
   */
  private int entries;
  /** Of {@link #entries}, those each reporting host's events added. */
  private final Map<String, Integer> entriesBy = new HashMap<>();
  private final Map<Integer, Reduce> reduces = new ConcurrentSkipListMap<>();
  /** Reduces by host, each list replaced whole on change, so readers need no lock. */
  private final Map<String, List<Reduce>> reducesByHost = new ConcurrentHashMap<>();
  private int mapsRunning = -1;
  private long runningMapsSinceUnixNanos;
  /** When each of the {@link #mapsRunning} maps started, ascending; empty when not all known. */
  private long[] runningMapStartsUnixNanos = new long[0];
  private long lastMapCompletionUnixNanos;
  private long knownOutputBytes;
  private int knownOutputs;
  private long lookupBytes;
  private int lookups;
  private long finishUnixNanos;
  private boolean succeeded;
  /**
   * The planner's estimates of its last map's end, each whose ends differ from the one before,
   * oldest first; at most {@link #MAX_MAP_END_ESTIMATES}, the last replaced beyond that.
   */
  private final List<MapEndEstimate> mapEndEstimates = new ArrayList<>();
  /** The operator's decision for this job and the rule-set version it was made under. */
  private record CachedDecision(PolicyDecision decision, long version) {}

  private volatile CachedDecision decision;

  Job(String id, JobConf conf, boolean attributesKnown, int totalMaps, int totalReduces,
      long startUnixNanos) {
    this.id = id;
    this.conf = conf;
    this.attributesKnown = attributesKnown;
    this.totalMaps = totalMaps;
    this.totalReduces = totalReduces;
    this.startUnixNanos = startUnixNanos;
  }

  public String id() {
    return id;
  }

  /** Queue, user, name and priority; all null while unknown. */
  public JobConf conf() {
    return conf;
  }

  /** Whether {@link #conf} is trusted (from YARN, or reports in development mode). */
  public boolean attributesKnown() {
    return attributesKnown;
  }

  /** Sets trusted attributes (from the ResourceManager); rules are evaluated afresh. */
  public void attributes(JobConf trusted) {
    conf = trusted;
    attributesKnown = true;
    decision = null;
  }

  public long attributesAskedUnixNanos() {
    return attributesAskedUnixNanos;
  }

  public void attributesAsked(long unixNanos) {
    attributesAskedUnixNanos = unixNanos;
  }

  /** When the ResourceManager was last asked whether the job ended; 0 never. */
  public long endAskedUnixNanos() {
    return endAskedUnixNanos;
  }

  public void endAsked(long unixNanos) {
    endAskedUnixNanos = unixNanos;
  }

  /** Whether every reduce known has finished its shuffle (a job cannot end before them). */
  public boolean shufflesDone() {
    for (Reduce r : reduces.values()) {
      if (r.shuffling()) {
        return false;
      }
    }
    return true;
  }

  /**
   * The planner estimated the last map's end as {@code e}: kept unless its ends are the latest
   * estimate's (a report that changed nothing about the maps re-makes the same estimate later).
   * Beyond {@link #MAX_MAP_END_ESTIMATES} it replaces the latest, so the first and the latest
   * are always kept. Caller holds the job's lock.
   */
  public void mapEndEstimated(MapEndEstimate e) {
    int n = mapEndEstimates.size();
    if (n > 0 && e.sameEnds(mapEndEstimates.get(n - 1))) {
      return;
    }
    if (n == MAX_MAP_END_ESTIMATES) {
      mapEndEstimates.set(n - 1, e);
    } else {
      mapEndEstimates.add(e);
    }
  }

  /** The planner's estimates of the last map's end that moved an end, oldest first. */
  public List<MapEndEstimate> mapEndEstimates() {
    return List.copyOf(mapEndEstimates);
  }

  /** Scheduler time of the last report that named this job. */
  public long lastReportUnixNanos() {
    return lastReportUnixNanos;
  }

  void reported(long unixNanos) {
    lastReportUnixNanos = Math.max(lastReportUnixNanos, unixNanos);
  }

  /** Dropped after jobs.idleTimeoutSeconds without a report (its JobFinished was lost). */
  public boolean timedOut() {
    return timedOut;
  }

  /** Hosts running a reduce of this job (whether still shuffling or not). */
  public boolean hasReduceOn(String host) {
    return reducesByHost.containsKey(host);
  }

  /**
   * Map slots the job holds, from the map side's container counts: every container of the job
   * minus its ApplicationMaster and its running reduces; -1 when no host reported.
   */
  public int mapSlotsFromContainers() {
    if (containersByHost.isEmpty()) {
      return -1;
    }
    int all = containersByHost.values().stream().mapToInt(Integer::intValue).sum();
    int reducing = (int) reduces.values().stream().filter(Reduce::shuffling).count();
    return Math.max(0, all - 1 - reducing);
  }
  public int totalMaps() {
    return totalMaps;
  }

  public int totalReduces() {
    return totalReduces;
  }

  /** Submission time when the plugin knew it, else when the first reduce started. */
  public long startUnixNanos() {
    return startUnixNanos;
  }

  /** Maps known done: reported by a reduce (MapCompleted) or by the map side (its index). */
  public int mapsDone() {
    return mapsDone;
  }

  /** -1 when no report said. */
  public int mapsRunning() {
    return mapsRunning;
  }

  /**
   * When the earliest of the {@link #mapsRunning} maps started, as the report that counted them
   * said; 0 when it did not (or none runs).
   */
  public long runningMapsSinceUnixNanos() {
    return runningMapsSinceUnixNanos;
  }

  /**
   * When each of the {@link #mapsRunning} maps started, ascending, as the report that counted
   * them said; empty unless it said for every one of them. A copy.
   */
  public long[] runningMapStartsUnixNanos() {
    return runningMapStartsUnixNanos.clone();
  }

  /** §4.4: once every map is done the job finishes as soon as its shuffle does. */
  public boolean allMapsDone() {
    return mapsDone() >= totalMaps;
  }

  /** Whether a flow to one of its reduces still shuffling on {@code host} has started. */
  public boolean flowingOn(String host) {
    for (Reduce r : reducesByHost.getOrDefault(host, List.of())) {
      if (r.shuffling() && r.firstFlowUnixNanos != 0) {
        return true;
      }
    }
    return false;
  }

  public long lastMapCompletionUnixNanos() {
    return lastMapCompletionUnixNanos;
  }

  /**
   * When each map a reduce reported completed did so, sorted, nanoseconds since the Unix epoch;
   * empty once the job ended (its per-map state is released). Maps known done only from their
   * index or a lookup have no time and are not in it. Caller holds the job's lock.
   */
  public long[] mapCompletionTimes() {
    long[] times = new long[maps.size()];
    int i = 0;
    for (CompletedMap m : maps.values()) {
      times[i++] = m.completedAtUnixNanos();
    }
    Arrays.sort(times);
    return times;
  }

  /** 0 while running. */
  public long finishUnixNanos() {
    return finishUnixNanos;
  }

  public boolean finished() {
    return finishUnixNanos != 0;
  }

  public boolean succeeded() {
    return succeeded;
  }

  public Collection<Reduce> reduces() {
    return reduces.values();
  }

  public Reduce reduce(int reduceId) {
    return reduces.get(reduceId);
  }

  /**
   * Median run time of completed maps, nanoseconds, or -1 before any completed with a known run
   * time (0 = unknown). §2.2: maps of one job run the same function, so their lengths are
   * similar and the median predicts the rest.
   */
  public long medianMapRunTimeNanos() {
    if (lowerRunTimes.isEmpty()) {
      return -1;
    }
    // the halves differ in size by at most one, the lower being the larger
    return lowerRunTimes.size() > upperRunTimes.size() ? lowerRunTimes.peek()
        : (lowerRunTimes.peek() + upperRunTimes.peek()) / 2;
  }

  private void addRunTime(long nanos) {
    if (lowerRunTimes.isEmpty() || nanos <= lowerRunTimes.peek()) {
      lowerRunTimes.add(nanos);
    } else {
      upperRunTimes.add(nanos);
    }
    if (lowerRunTimes.size() > upperRunTimes.size() + 1) {
      upperRunTimes.add(lowerRunTimes.poll());
    } else if (upperRunTimes.size() > lowerRunTimes.size()) {
      lowerRunTimes.add(upperRunTimes.poll());
    }
  }

  /**
   * Bytes {@code reduce} still has to fetch from maps that are done, bytes: exact sizes where
   * known, the job's mean output size for the rest.
   */
  public long remainingBytes(Reduce reduce) {
    return reduce.knownLeftBytes + reduce.unknownLeft * outputEstimate();
  }

  /**
   * Adds ({@code sign} 1) or takes back (-1) what map {@code mapId} leaves {@code reduce} to
   * fetch: nothing unless the map is done and not fetched yet; its exact size from the map
   * side's index, else from the reduce's report, else one unknown size. Every change of those
   * inputs takes the share back before and adds it after.
   */
  private void account(Reduce reduce, int mapId, int sign) {
    // A map whose index was read is done even if no reduce reported its completion yet.
    if (!(maps.containsKey(mapId) || partitions.containsKey(mapId))
        || reduce.fetchedMaps.get(mapId)) {
      return;
    }
    long[] parts = partitions.get(mapId);
    Long reported = reduce.outputBytes.get(mapId);
    if (parts != null && reduce.id < parts.length) {
      reduce.knownLeftBytes += sign * parts[reduce.id];
    } else if (reported != null) {
      reduce.knownLeftBytes += sign * reported;
    } else {
      reduce.unknownLeft += sign;
    }
  }

  /** Reduces of this job on {@code host}, shuffling or not; safe to read without the lock. */
  public List<Reduce> reducesOn(String host) {
    return reducesByHost.getOrDefault(host, List.of());
  }

  /** Reduces of this job still shuffling on {@code host}. */
  public List<Reduce> shufflingOn(String host) {
    List<Reduce> on = new ArrayList<>();
    for (Reduce r : reducesByHost.getOrDefault(host, List.of())) {
      if (r.shuffling()) {
        on.add(r);
      }
    }
    return on;
  }

  /** From the first reduce's shuffle start to the last one's end (or now while running). */
  public long shuffleTimeNanos(long nowUnixNanos) {
    long start = Long.MAX_VALUE;
    long end = 0;
    boolean running = false;
    for (Reduce r : reduces.values()) {
      start = Math.min(start, r.shuffleStartUnixNanos);
      running |= r.shuffling();
      end = Math.max(end, r.shuffleFinishUnixNanos);
    }
    if (start == Long.MAX_VALUE) {
      return 0;
    }
    return (running ? nowUnixNanos : end) - start;
  }

  /**
   * The rule decision last made for this job ({@code serve.Decisions}) if made under rule-set
   * {@code version}, else null. The job only keeps it; it decides nothing.
   */
  public PolicyDecision cachedDecision(long version) {
    CachedDecision d = decision;
    return d != null && d.version() == version ? d.decision() : null;
  }

  /** Keeps the decision made under rule-set {@code version}; under the job's lock. */
  public void cacheDecision(PolicyDecision d, long version) {
    decision = new CachedDecision(d, version);
  }

  void reduceStarted(int reduceId, String host, long time) {
    if (reduces.containsKey(reduceId)) {
      return;
    }
    Reduce r = new Reduce(reduceId, host, time);
    // once per reduce: every map done so far is still to fetch
    maps.keySet().forEach(m -> account(r, m, 1));
    partitions.keySet().forEach(m -> {
      if (!maps.containsKey(m)) {
        account(r, m, 1);
      }
    });
    reduces.put(reduceId, r);
    reducesByHost.merge(host, List.of(r), (a, b) -> {
      List<Reduce> both = new ArrayList<>(a);
      both.addAll(b);
      return List.copyOf(both);
    });
  }

  /**
   * Records one reduce's report of a completed map; returns whether it changed what the job's
   * reduces on other hosts still wait for (a map newly done, the running maps or when they
   * started, or the mean output size that unknown sizes are estimated with), else only reduce
   * {@code reduceId}'s remaining bytes changed, if anything. {@code runningSince} and
   * {@code runningStarts} belong to {@code running}: all are kept from the latest report that
   * counted the running maps (the starts only when there is one for each running map).
   */
  boolean mapCompleted(int reduceId, int mapId, String host, int attempt, long runTimeNanos,
      long outputBytes, int running, long runningSince, List<Long> runningStarts, long time) {
    if (lostAttempts.contains(attemptKey(mapId, attempt))) {
      return false;
    }
    boolean jobWide = false;
    if (!maps.containsKey(mapId)) {
      boolean wasDone = partitions.containsKey(mapId);
      if (!wasDone) {
        mapsDone++;
      }
      reduces.values().forEach(r -> account(r, mapId, -1));
      maps.put(mapId, new CompletedMap(host, attempt, runTimeNanos, time));
      entries++;
      reduces.values().forEach(r -> account(r, mapId, 1));
      if (runTimeNanos > 0) {
        addRunTime(runTimeNanos);
      }
      lastMapCompletionUnixNanos = Math.max(lastMapCompletionUnixNanos, time);
      jobWide = true;
    } else if (runTimeNanos > 0 && maps.get(mapId).runTimeNanos() == 0) {
      // the one reduce that asks YARN for run times (the plugin's reduce 0) may report a map
      // after other reduces did without one: its length still counts toward the median
      CompletedMap known = maps.get(mapId);
      maps.put(mapId, new CompletedMap(known.host(), known.attempt(), runTimeNanos,
          known.completedAtUnixNanos()));
      addRunTime(runTimeNanos);
      jobWide = true;
    }
    if (running >= 0) {
      long[] starts = new long[runningStarts.size() == running ? running : 0];
      for (int i = 0; i < starts.length; i++) {
        starts[i] = runningStarts.get(i);
      }
      Arrays.sort(starts);
      if (running != mapsRunning || runningSince != runningMapsSinceUnixNanos
          || !Arrays.equals(starts, runningMapStartsUnixNanos)) {
        mapsRunning = running;
        runningMapsSinceUnixNanos = runningSince;
        runningMapStartsUnixNanos = starts;
        jobWide = true;
      }
    }
    Reduce r = reduces.get(reduceId);
    if (r != null && outputBytes >= 0) {
      account(r, mapId, -1);
      Long earlier = r.outputBytes.put(mapId, outputBytes);
      account(r, mapId, 1);
      if (earlier == null) {
        entries++;
        long before = outputEstimate();
        knownOutputBytes += outputBytes;
        knownOutputs++;
        jobWide |= outputEstimate() != before && anyUnknownSizes();
      }
    }
    return jobWide;
  }

  /**
   * A flow of {@code bytes} from {@code host} to {@code reduceId} carries {@code mapIds}: a map
   * whose output is being served is done, though neither its host's index report nor the
   * reduce's completion report may have arrived (agents batch reports, for up to 200 ms by
   * default). Returns whether a map became done; ids beyond the job's maps are ignored.
   */
  boolean mapsServed(int reduceId, String host, List<Integer> mapIds, long bytes, long time) {
    boolean learnt = false;
    for (int m : mapIds) {
      if (m < totalMaps && !maps.containsKey(m) && !partitions.containsKey(m)) {
        // one map per flow: the flow's size is that map's partition for the reduce
        mapCompleted(reduceId, m, host, ATTEMPT_UNKNOWN, 0, mapIds.size() == 1 ? bytes : -1, -1,
            0, List.of(), time);
        learnt = true;
      }
    }
    return learnt;
  }

  private boolean anyUnknownSizes() {
    for (Reduce r : reduces.values()) {
      if (r.unknownLeft > 0) {
        return true;
      }
    }
    return false;
  }

  void mapOutputIndexed(int mapId, String host, long[] partitionBytes) {
    if (partitions.containsKey(mapId)) {
      return;
    }
    if (!maps.containsKey(mapId)) {
      mapsDone++;
    }
    reduces.values().forEach(r -> account(r, mapId, -1));
    partitions.put(mapId, partitionBytes);
    indexedOn.put(mapId, host);
    entries += partitionBytes.length;
    reduces.values().forEach(r -> account(r, mapId, 1));
    for (long b : partitionBytes) {
      knownOutputBytes += b;
    }
    knownOutputs += partitionBytes.length;
  }

  /**
   * Attempt {@code attempt} of map {@code mapId} on {@code host} is lost (failed, killed or
   * obsolete): the map is no longer done, nor are its bytes waiting for the reduces that have
   * not fetched them, unless what counts it done is another attempt's (a newer one's: this loss
   * came late, or was of a speculative twin) or another host's index. Reduces that fetched it
   * keep it, as Hadoop's reduces do. Returns whether the map stopped being done.
   */
  boolean mapLost(int mapId, String host, int attempt) {
    if (lostAttempts.add(attemptKey(mapId, attempt))) {
      entries++;
    }
    CompletedMap done = maps.get(mapId);
    boolean completionLost = done != null && done.host().equals(host)
        && (done.attempt() == attempt || done.attempt() == ATTEMPT_UNKNOWN);
    if (done != null && !completionLost) {
      return false;
    }
    boolean indexLost = host.equals(indexedOn.get(mapId));
    if (!completionLost && !indexLost) {
      return false;
    }
    reduces.values().forEach(r -> account(r, mapId, -1));
    if (completionLost) {
      // its run time stays among the samples of the median: the attempt did run that long
      maps.remove(mapId);
      entries--;
    }
    if (indexLost) {
      // the sizes stay in the mean output size: a new attempt writes the same partitions
      entries -= partitions.remove(mapId).length;
      indexedOn.remove(mapId);
    }
    boolean undone = !maps.containsKey(mapId) && !partitions.containsKey(mapId);
    if (undone) {
      mapsDone--;
    }
    reduces.values().forEach(r -> account(r, mapId, 1));
    return undone;
  }

  /** Whether a MapLost of {@code mapId}'s {@code attempt} would add an entry. */
  boolean wouldAddLoss(int mapId, int attempt) {
    return !lostAttempts.contains(attemptKey(mapId, attempt));
  }

  private static long attemptKey(int mapId, int attempt) {
    return ((long) mapId << 32) | (attempt & 0xffffffffL);
  }

  /** Entries this job holds against jobs.maxShuffleEntries. */
  public int entries() {
    return entries;
  }

  void addedBy(String host, int n) {
    entriesBy.merge(host, n, Integer::sum);
  }

  /** Entries each reporting host added; cleared by {@link #release}. */
  Map<String, Integer> entriesBy() {
    return entriesBy;
  }

  /** Whether map {@code mapId}'s map-side partition sizes are held. */
  boolean indexed(int mapId) {
    return partitions.containsKey(mapId);
  }

  /** Whether a MapCompleted of {@code mapId} from {@code reduceId} would add an entry. */
  boolean wouldAdd(int reduceId, int mapId, long outputBytes) {
    Reduce r = reduces.get(reduceId);
    return !maps.containsKey(mapId)
        || (outputBytes >= 0 && r != null && !r.outputBytes.containsKey(mapId));
  }

  /**
   * Drops the per-map state of a job that ended (the views read only its counts, and nothing
   * plans it again) and returns the entries it held: a finished job in the history costs no
   * more than a few objects per reduce.
   */
  int release() {
    maps.clear();
    partitions.clear();
    indexedOn.clear();
    lostAttempts.clear();
    lowerRunTimes.clear();
    upperRunTimes.clear();
    for (Reduce r : reduces.values()) {
      r.outputBytes.clear();
      r.fetchedMaps.clear();
    }
    int held = entries;
    entries = 0;
    entriesBy.clear();
    return held;
  }

  void containersRunning(String host, int running) {
    if (running == 0) {
      containersByHost.remove(host);
    } else {
      containersByHost.put(host, running);
    }
  }

  void timeOut(long time) {
    timedOut = true;
    finish(false, time);
  }

  void fetchFinished(int reduceId, List<Integer> mapIds, long bytes) {
    Reduce r = reduces.get(reduceId);
    if (r == null) {
      return;
    }
    for (Integer m : mapIds) {
      account(r, m, -1);
      r.fetchedMaps.set(m);
    }
    r.fetchedBytes += bytes;
  }

  void shuffleFinished(int reduceId, long time) {
    Reduce r = reduces.get(reduceId);
    if (r != null && r.shuffling()) {
      r.shuffleFinishUnixNanos = time;
    }
  }

  void finish(boolean ok, long time) {
    finishUnixNanos = time;
    succeeded = ok;
    for (Reduce r : reduces.values()) {
      if (r.shuffling()) {
        r.shuffleFinishUnixNanos = time;
      }
    }
  }

  /** Records a flow's policy lookup for {@code reduce}; true for the reduce's first flow. */
  boolean flowStarted(Reduce reduce, long now) {
    if (reduce.firstFlowUnixNanos != 0) {
      return false;
    }
    reduce.firstFlowUnixNanos = now;
    return true;
  }

  /**
   * Agents' lookups carry exact flow sizes: a fallback when map outputs came without sizes.
   * Returns whether that fallback is in use, so the remaining bytes just changed.
   */
  boolean sawLookup(long bytes) {
    lookupBytes += bytes;
    lookups++;
    return knownOutputs == 0;
  }

  private long outputEstimate() {
    if (knownOutputs > 0) {
      return knownOutputBytes / knownOutputs;
    }
    return lookups > 0 ? lookupBytes / lookups : 0;
  }
}
