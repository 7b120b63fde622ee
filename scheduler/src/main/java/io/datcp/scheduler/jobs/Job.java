package io.datcp.scheduler.jobs;

import io.datcp.scheduler.policy.PolicyDecision;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * What the scheduler knows of one MapReduce job: its maps (done, running, durations), its
 * reduces (host, shuffle progress) and the map-output bytes each reduce still has to fetch.
 * Soft state, rebuilt from the plugin's reports. Mutated only under the job's lock (see
 * {@link io.datcp.scheduler.SchedulerService}); the reduces, attributes and policy decision
 * may also be read without it, by re-plans of a host the job shares with others.
 */
public final class Job {

  /** A completed map: where its output lives, how long it ran, when it finished. */
  public record CompletedMap(String host, long runTimeNanos, long completedAtUnixNanos) {}

  /** One reduce task and its shuffle. */
  public static final class Reduce {
    final int id;
    final String host;
    final long shuffleStartUnixNanos;
    long shuffleFinishUnixNanos;
    final Map<Integer, Long> outputBytes = new HashMap<>();
    final Set<Integer> fetchedMaps = new HashSet<>();
    long fetchedBytes;
    /** When the first flow to this reduce looked up its policy; 0 before. */
    long firstFlowUnixNanos;

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
  private final Map<String, Integer> containersByHost = new HashMap<>();
  private final int totalMaps;
  private final int totalReduces;
  private final long startUnixNanos;
  private final Map<Integer, CompletedMap> maps = new HashMap<>();
  private final Map<Integer, Reduce> reduces = new ConcurrentSkipListMap<>();
  private int mapsRunning = -1;
  private long lastMapCompletionUnixNanos;
  private long knownOutputBytes;
  private int knownOutputs;
  private long lookupBytes;
  private int lookups;
  private long finishUnixNanos;
  private boolean succeeded;
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
    for (Reduce r : reduces.values()) {
      if (r.host.equals(host)) {
        return true;
      }
    }
    return false;
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
    int done = maps.size();
    for (Integer mapId : partitions.keySet()) {
      if (!maps.containsKey(mapId)) {
        done++;
      }
    }
    return done;
  }

  /** -1 when no report said. */
  public int mapsRunning() {
    return mapsRunning;
  }

  /** §4.4: once every map is done the job finishes as soon as its shuffle does. */
  public boolean allMapsDone() {
    return mapsDone() >= totalMaps;
  }

  /** Whether a flow to one of its reduces still shuffling on {@code host} has started. */
  public boolean flowingOn(String host) {
    for (Reduce r : reduces.values()) {
      if (r.shuffling() && r.host.equals(host) && r.firstFlowUnixNanos != 0) {
        return true;
      }
    }
    return false;
  }

  public long lastMapCompletionUnixNanos() {
    return lastMapCompletionUnixNanos;
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
   * Median run time of completed maps, nanoseconds, or -1 before any completed. §2.2: maps of
   * one job run the same function, so their lengths are similar and the median predicts the rest.
   */
  public long medianMapRunTimeNanos() {
    if (maps.isEmpty()) {
      return -1;
    }
    long[] times = new long[maps.size()];
    int n = 0;
    for (CompletedMap m : maps.values()) {
      times[n++] = m.runTimeNanos();
    }
    Arrays.sort(times);
    return n % 2 == 1 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  }

  /** Bytes {@code reduce} still has to fetch from maps that are done, bytes. */
  public long remainingBytes(Reduce reduce) {
    long perMapEstimate = outputEstimate();
    long left = 0;
    for (Integer mapId : maps.keySet()) {
      if (!reduce.fetchedMaps.contains(mapId)) {
        left += bytesFor(reduce, mapId, perMapEstimate);
      }
    }
    for (Map.Entry<Integer, long[]> p : partitions.entrySet()) {
      // A map whose index was read is done even if no reduce reported its completion yet.
      if (!maps.containsKey(p.getKey()) && !reduce.fetchedMaps.contains(p.getKey())) {
        left += bytesFor(reduce, p.getKey(), perMapEstimate);
      }
    }
    return left;
  }

  /** Exact size from the map side's index, else from the reduce's report, else an estimate. */
  private long bytesFor(Reduce reduce, int mapId, long estimate) {
    long[] parts = partitions.get(mapId);
    if (parts != null && reduce.id < parts.length) {
      return parts[reduce.id];
    }
    return reduce.outputBytes.getOrDefault(mapId, estimate);
  }

  /** Reduces of this job still shuffling on {@code host}. */
  public List<Reduce> shufflingOn(String host) {
    List<Reduce> on = new ArrayList<>();
    for (Reduce r : reduces.values()) {
      if (r.shuffling() && r.host.equals(host)) {
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

  PolicyDecision cachedDecision(long version) {
    CachedDecision d = decision;
    return d != null && d.version() == version ? d.decision() : null;
  }

  void cacheDecision(PolicyDecision d, long version) {
    decision = new CachedDecision(d, version);
  }

  void reduceStarted(int reduceId, String host, long time) {
    reduces.computeIfAbsent(reduceId, r -> new Reduce(r, host, time));
  }

  void mapCompleted(int reduceId, int mapId, String host, long runTimeNanos, long outputBytes,
      int running, long time) {
    if (maps.putIfAbsent(mapId, new CompletedMap(host, runTimeNanos, time)) == null) {
      lastMapCompletionUnixNanos = Math.max(lastMapCompletionUnixNanos, time);
    }
    if (running >= 0) {
      mapsRunning = running;
    }
    Reduce r = reduces.get(reduceId);
    if (r != null && outputBytes >= 0 && r.outputBytes.put(mapId, outputBytes) == null) {
      knownOutputBytes += outputBytes;
      knownOutputs++;
    }
  }

  void mapOutputIndexed(int mapId, long[] partitionBytes) {
    if (partitions.putIfAbsent(mapId, partitionBytes) == null) {
      for (long b : partitionBytes) {
        knownOutputBytes += b;
      }
      knownOutputs += partitionBytes.length;
    }
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
    r.fetchedMaps.addAll(mapIds);
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

  /**
   * Agents' lookups carry exact flow sizes: a fallback when map outputs came without sizes.
   * Returns whether that fallback is in use, so the remaining bytes just changed.
   */
  /** Records a flow's policy lookup for {@code reduce}; true for the reduce's first flow. */
  boolean flowStarted(Reduce reduce, long now) {
    if (reduce.firstFlowUnixNanos != 0) {
      return false;
    }
    reduce.firstFlowUnixNanos = now;
    return true;
  }

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
