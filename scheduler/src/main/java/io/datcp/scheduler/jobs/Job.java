package io.datcp.scheduler.jobs;

import io.datcp.scheduler.policy.PolicyDecision;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What the scheduler knows of one MapReduce job: its maps (done, running, durations), its
 * reduces (host, shuffle progress) and the map-output bytes each reduce still has to fetch.
 * Soft state, rebuilt from the plugin's reports. Not thread-safe: the registry's owner locks.
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
  private final JobConf conf;
  private final int totalMaps;
  private final int totalReduces;
  private final long startUnixNanos;
  private final Map<Integer, CompletedMap> maps = new HashMap<>();
  private final Map<Integer, Reduce> reduces = new TreeMap<>();
  private int mapsRunning = -1;
  private long lastMapCompletionUnixNanos;
  private long knownOutputBytes;
  private int knownOutputs;
  private long lookupBytes;
  private int lookups;
  private long finishUnixNanos;
  private boolean succeeded;
  private PolicyDecision decision;
  private long decisionVersion = -1;

  Job(String id, JobConf conf, int totalMaps, int totalReduces, long startUnixNanos) {
    this.id = id;
    this.conf = conf;
    this.totalMaps = totalMaps;
    this.totalReduces = totalReduces;
    this.startUnixNanos = startUnixNanos;
  }

  public String id() {
    return id;
  }

  public JobConf conf() {
    return conf;
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

  public int mapsDone() {
    return maps.size();
  }

  /** -1 when no report said. */
  public int mapsRunning() {
    return mapsRunning;
  }

  /** §4.4: once every map is done the job finishes as soon as its shuffle does. */
  public boolean allMapsDone() {
    return maps.size() >= totalMaps;
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
    long[] times = maps.values().stream().mapToLong(CompletedMap::runTimeNanos).sorted().toArray();
    int n = times.length;
    return n % 2 == 1 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  }

  /** Bytes {@code reduce} still has to fetch from maps that are done, bytes. */
  public long remainingBytes(Reduce reduce) {
    long perMapEstimate = outputEstimate();
    long left = 0;
    for (Integer mapId : maps.keySet()) {
      if (!reduce.fetchedMaps.contains(mapId)) {
        left += reduce.outputBytes.getOrDefault(mapId, perMapEstimate);
      }
    }
    return left;
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
    return version == decisionVersion ? decision : null;
  }

  void cacheDecision(PolicyDecision d, long version) {
    decision = d;
    decisionVersion = version;
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

  /** Agents' lookups carry exact flow sizes: a fallback when map outputs came without sizes. */
  void sawLookup(long bytes) {
    lookupBytes += bytes;
    lookups++;
  }

  private long outputEstimate() {
    if (knownOutputs > 0) {
      return knownOutputBytes / knownOutputs;
    }
    return lookups > 0 ? lookupBytes / lookups : 0;
  }
}
