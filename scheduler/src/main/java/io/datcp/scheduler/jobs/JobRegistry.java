package io.datcp.scheduler.jobs;

import io.datcp.scheduler.common.LimitReachedException;
import io.datcp.scheduler.policy.JobConf;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The live job model: running jobs by id plus a bounded history of finished ones.
 *
 * <p>Thread-safe for callers that hold the lock of every job an event or call names (the
 * ingest and serve steps stripe them by job id): everything about one job is
 * then serialised, and what several jobs share (the running map, the per-host index, the
 * finished history and held map outputs) is concurrent or guarded here.
 *
 * <p>Bounded ({@link JobLimits}): running jobs, reduces per host and the per-map state of all
 * running jobs together; an event beyond a bound is refused with a {@link
 * LimitReachedException} before it changes anything. Concurrent reports of different jobs
 * check and add apart, so a bound may be passed by the events in flight at once (one per
 * event loop), never more.
 */
public final class JobRegistry {
  private final Map<String, Job> running = new ConcurrentHashMap<>();
  /** Jobs with a reduce shuffling on each host, each job once however many reduces it has. */
  private final Map<String, Set<Job>> shufflingByHost = new ConcurrentHashMap<>();
  /** Guards the finished history and held map outputs. */
  private final Object shared = new Object();
  private final LinkedHashMap<String, Job> finished = new LinkedHashMap<>();
  /** Map-side partition sizes of jobs no reduce has reported yet, oldest job first. */
  private final LinkedHashMap<String, Map<Integer, HeldOutput>> pendingOutputs =
      new LinkedHashMap<>();

  /** A map output indexed on {@code host} before any reduce of its job started. */
  private record HeldOutput(String host, long[] partitionBytes) {}
  /** Partition sizes in {@link #pendingOutputs}; guarded by {@code shared}. */
  private long pendingEntries;
  /** Entries held against jobs.maxShuffleEntries: running jobs' and pending outputs'. */
  private final AtomicLong shuffleEntries = new AtomicLong();
  /** Entries each reporting host's events added to running jobs, against its share. */
  private final Map<String, Long> entriesByHost = new ConcurrentHashMap<>();
  /** Reduces of running jobs per host, against jobs.maxReducesPerHost. */
  private final Map<String, Integer> reducesPerHost = new ConcurrentHashMap<>();
  private final JobLimits limits;
  private final int retainFinished;
  private final boolean trustReportedAttributes;
  /**
   * Ids dropped from the history, for the caller to forget elsewhere. Lock-free: every report
   * drains it, and a drain under the history's monitor made that monitor a global lock on the
   * event loops (JFR: waits of 10 ms when its holder was preempted).
   */
  private final Queue<String> evicted = new ConcurrentLinkedQueue<>();
  /** Told of every job that ended or timed out (metrics); under the job's lock. */
  private final List<Consumer<Job>> retiredListeners = new CopyOnWriteArrayList<>();

  /**
   * Share of jobs.maxShuffleEntries that map outputs held for jobs not yet known may take; the
   * oldest job's are dropped beyond it, so outputs of jobs that never start (a lost
   * ReduceStarted, or made up) cannot keep the budget from running jobs.
   */
  static final int PENDING_SHARE_DIVISOR = 10;

  /**
   * @param trustReportedAttributes take queue, user, name and priority from ReduceStarted
   *     (development); otherwise they stay unknown until set from the ResourceManager
   */
  public JobRegistry(int retainFinished, boolean trustReportedAttributes, JobLimits limits) {
    this.retainFinished = retainFinished;
    this.trustReportedAttributes = trustReportedAttributes;
    this.limits = limits;
  }

  /** Queue, user, name and priority while the ResourceManager has not answered. */
  public static final JobConf UNKNOWN = new JobConf(null, null, null, null);

  /**
   * Applies one event and adds the reducer hosts whose flows it may re-plan to {@code touched}.
   * Events for jobs the registry never saw start (a lost ReduceStarted) are ignored: the job's
   * flows then run without deadlines, which is the fail-open default. So are events for a job
   * in the history that ended (not one that timed out: it may still be running). Returns the
   * job, or null.
   *
   * @throws LimitReachedException when the event would pass a bound; nothing changed
   */
  public Job apply(JobEvent event, Set<String> touched, long nowUnixNanos) {
    return apply(event, "", touched, nowUnixNanos);
  }

  /**
   * As {@link #apply(JobEvent, Set, long)}, from {@code reporter} (the caller's host): the
   * per-map state its events add counts against its share, jobs.maxShuffleEntriesPerHost.
   */
  public Job apply(JobEvent event, String reporter, Set<String> touched, long nowUnixNanos) {
    if (event instanceof JobEvent.ReduceStarted e) {
      return reduceStarted(e, touched, nowUnixNanos);
    }
    Job job = running.get(event.jobId());
    if (job == null) {
      if (event instanceof JobEvent.MapOutputIndexed e && !ended(e.jobId())) {
        holdPending(e);
      }
      return null;
    }
    checkEntries(job, event, reporter);
    int entriesBefore = job.entries();
    Job changed = applyTo(job, event, touched, nowUnixNanos);
    added(job, reporter, job.entries() - entriesBefore);
    return changed;
  }

  private Job reduceStarted(JobEvent.ReduceStarted e, Set<String> touched, long nowUnixNanos) {
    // No computeIfAbsent: newJob takes the registry's lock, which must never nest in a bin
    // lock of the map; the caller's job lock keeps creators of this id apart.
    Job job = running.get(e.jobId());
    if (job == null) {
      if (ended(e.jobId())) {
        // sent before the job ended and overtaken by its end (another host's JobFinished,
        // or YARN's): a job started again would know only this reduce, never end, and
        // refuse its other reduces' reports still on their way
        return null;
      }
      if (running.size() >= limits.maxRunning()) {
        throw new LimitReachedException("jobs.maxRunning", limits.maxRunning(),
            "jobs are running; job " + e.jobId() + " not started");
      }
      addReduceOn(e.host());
      job = newJob(e);
      running.put(job.id(), job);
    } else if (job.reduce(e.reduceId()) == null) {
      addReduceOn(e.host());
    }
    if (job.reduce(e.reduceId()) == null) {
      job.reduceStarted(e.reduceId(), e.host(), e.timeUnixNanos());
      index(job, e.host());
    }
    job.reported(nowUnixNanos);
    touched.add(e.host());
    return job;
  }

  /** Counts one more reduce on {@code host}, or refuses it at jobs.maxReducesPerHost. */
  private void addReduceOn(String host) {
    reducesPerHost.compute(host, (h, n) -> {
      int on = n == null ? 0 : n;
      if (on >= limits.maxReducesPerHost()) {
        throw new LimitReachedException("jobs.maxReducesPerHost", limits.maxReducesPerHost(),
            "reduces of running jobs on " + host + "; reduce not started");
      }
      return on + 1;
    });
  }

  private void removeReduceOn(String host) {
    reducesPerHost.computeIfPresent(host, (h, n) -> n <= 1 ? null : n - 1);
  }

  /** Counts {@code n} entries {@code reporter}'s event added to {@code job}. */
  private void added(Job job, String reporter, int n) {
    shuffleEntries.addAndGet(n);
    if (n > 0 && !reporter.isEmpty()) {
      job.addedBy(reporter, n);
      entriesByHost.merge(reporter, (long) n, Long::sum);
    }
  }

  /** Entries {@code host}'s events added to running jobs. */
  public long shuffleEntriesOf(String host) {
    return entriesByHost.getOrDefault(host, 0L);
  }

  /**
   * Refuses an event that would add per-map state beyond jobs.maxShuffleEntries, or beyond
   * its reporter's share.
   */
  private void checkEntries(Job job, JobEvent event, String reporter) {
    long adds = 0;
    if (event instanceof JobEvent.MapOutputIndexed e && !job.indexed(e.mapId())) {
      adds = e.partitionBytes().size();
    } else if (event instanceof JobEvent.MapCompleted e
        && job.wouldAdd(e.reduceId(), e.mapId(), e.outputBytes())) {
      adds = 2;
    } else if (event instanceof JobEvent.MapLost e && job.wouldAddLoss(e.mapId(), e.attempt())) {
      adds = 1;
    }
    if (adds > 0 && shuffleEntries.get() + adds > limits.maxShuffleEntries()) {
      throw new LimitReachedException("jobs.maxShuffleEntries", limits.maxShuffleEntries(),
          "per-map state of running jobs is full; map " + mapId(event) + " of "
              + event.jobId() + " not recorded");
    }
    if (adds > 0 && !reporter.isEmpty()
        && shuffleEntriesOf(reporter) + adds > limits.maxShuffleEntriesPerHost()) {
      throw new LimitReachedException("jobs.maxShuffleEntriesPerHost",
          limits.maxShuffleEntriesPerHost(), "per-map state added by " + reporter
              + "'s reports is full; map " + mapId(event) + " of " + event.jobId()
              + " not recorded");
    }
  }

  private static int mapId(JobEvent event) {
    if (event instanceof JobEvent.MapOutputIndexed e) {
      return e.mapId();
    }
    return event instanceof JobEvent.MapLost e ? e.mapId()
        : ((JobEvent.MapCompleted) event).mapId();
  }

  private Job applyTo(Job job, JobEvent event, Set<String> touched, long nowUnixNanos) {
    job.reported(nowUnixNanos);
    if (event instanceof JobEvent.MapOutputIndexed e) {
      job.mapOutputIndexed(e.mapId(), e.host(), toArray(e.partitionBytes()));
      touchAll(job, touched);
    } else if (event instanceof JobEvent.ContainersRunning e) {
      job.containersRunning(e.host(), e.running());
      touchAll(job, touched);
    } else if (event instanceof JobEvent.MapCompleted e) {
      // Every reduce reports every map: only the first report of a map (or new running maps)
      // moves the job's demand on all its hosts; re-planning them all on each report made a
      // job's reports cost O(reduces^2) per map.
      if (job.mapCompleted(e.reduceId(), e.mapId(), e.host(), e.attempt(), e.runTimeNanos(),
          e.outputBytes(), e.mapsRunning(), e.runningMapsSinceUnixNanos(),
          e.runningMapStartsUnixNanos(), e.timeUnixNanos())) {
        touchAll(job, touched);
      } else {
        touch(job, e.reduceId(), touched);
      }
    } else if (event instanceof JobEvent.MapLost e) {
      // every reduce reports the loss too: only the one that un-marks the map moves demand
      if (job.mapLost(e.mapId(), e.host(), e.attempt())) {
        touchAll(job, touched);
      }
    } else if (event instanceof JobEvent.FetchStarted e) {
      touch(job, e.reduceId(), touched);
    } else if (event instanceof JobEvent.FetchFinished e) {
      job.fetchFinished(e.reduceId(), e.mapIds(), e.bytes());
      touch(job, e.reduceId(), touched);
    } else if (event instanceof JobEvent.ShuffleFinished e) {
      touch(job, e.reduceId(), touched);
      Job.Reduce r = job.reduce(e.reduceId());
      job.shuffleFinished(e.reduceId(), e.timeUnixNanos());
      if (r != null && job.shufflingOn(r.host()).isEmpty()) {
        unindex(job, r.host());
      }
    } else if (event instanceof JobEvent.JobFinished e) {
      Set<String> hosts = new HashSet<>();
      touchAll(job, hosts);
      touched.addAll(hosts);
      job.finish(e.succeeded(), e.timeUnixNanos());
      retire(job, hosts);
    }
    return job;
  }

  /**
   * Drops {@code job} into the finished history as timed out when it is still running and had
   * no report for {@code timeoutNanos} (its JobFinished was lost); then returns true and adds
   * its reducer hosts to {@code touched}. The caller holds the job's lock.
   */
  public boolean expireIfIdle(Job job, long nowUnixNanos, long timeoutNanos,
      Set<String> touched) {
    if (running.get(job.id()) != job || nowUnixNanos - job.lastReportUnixNanos() <= timeoutNanos) {
      return false;
    }
    Set<String> hosts = new HashSet<>();
    touchAll(job, hosts);
    touched.addAll(hosts);
    job.timeOut(nowUnixNanos);
    retire(job, hosts);
    return true;
  }

  /**
   * Calls {@code listener} with every job that ends (finished or timed out), once, under the
   * job's lock, after it entered the finished history; it must be quick and must not lock.
   */
  public void onRetired(Consumer<Job> listener) {
    retiredListeners.add(listener);
  }

  private void retire(Job job, Set<String> hosts) {
    hosts.forEach(h -> unindex(job, h));
    for (Job.Reduce r : job.reduces()) {
      unindex(job, r.host());
    }
    // Into the history before out of the running map: a concurrent listing always finds it.
    synchronized (shared) {
      finished.put(job.id(), job);
      trimFinished();
    }
    running.remove(job.id());
    for (Job.Reduce r : job.reduces()) {
      removeReduceOn(r.host());
    }
    job.entriesBy().forEach((host, n) ->
        entriesByHost.computeIfPresent(host, (h, held) -> held <= n ? null : held - n));
    shuffleEntries.addAndGet(-job.release());
    retiredListeners.forEach(l -> l.accept(job));
  }

  /** True for a job in the history that finished (reported or from YARN), not timed out. */
  private boolean ended(String jobId) {
    synchronized (shared) {
      Job j = finished.get(jobId);
      return j != null && !j.timedOut();
    }
  }

  private Job newJob(JobEvent.ReduceStarted e) {
    Job job = new Job(e.jobId(), trustReportedAttributes ? e.conf() : UNKNOWN,
        trustReportedAttributes, e.totalMaps(), e.totalReduces(),
        e.jobSubmitTimeUnixNanos() > 0 ? e.jobSubmitTimeUnixNanos() : e.timeUnixNanos());
    Map<Integer, HeldOutput> held;
    synchronized (shared) {
      held = pendingOutputs.remove(e.jobId());
      if (held != null) {
        long n = entries(held);
        pendingEntries -= n;
        shuffleEntries.addAndGet(-n);
      }
    }
    if (held != null) {
      held.forEach((map, out) -> job.mapOutputIndexed(map, out.host(), out.partitionBytes()));
      shuffleEntries.addAndGet(job.entries());
    }
    return job;
  }

  /** Map outputs may be indexed before any reduce of the job starts: keep them, bounded. */
  private void holdPending(JobEvent.MapOutputIndexed e) {
    synchronized (shared) {
      holdPendingLocked(e);
    }
  }

  private void holdPendingLocked(JobEvent.MapOutputIndexed e) {
    Map<Integer, HeldOutput> held = pendingOutputs.get(e.jobId());
    if (held != null && held.containsKey(e.mapId())) {
      return;
    }
    int size = e.partitionBytes().size();
    if (shuffleEntries.get() + size > limits.maxShuffleEntries()) {
      throw new LimitReachedException("jobs.maxShuffleEntries", limits.maxShuffleEntries(),
          "per-map state of running jobs is full; map " + e.mapId() + " of " + e.jobId()
              + " not held");
    }
    pendingOutputs.computeIfAbsent(e.jobId(), j -> new HashMap<>())
        .put(e.mapId(), new HeldOutput(e.host(), toArray(e.partitionBytes())));
    pendingEntries += size;
    shuffleEntries.addAndGet(size);
    Iterator<Map.Entry<String, Map<Integer, HeldOutput>>> oldest =
        pendingOutputs.entrySet().iterator();
    long share = limits.maxShuffleEntries() / PENDING_SHARE_DIVISOR;
    while (pendingEntries > share && oldest.hasNext()) {
      long n = entries(oldest.next().getValue());
      pendingEntries -= n;
      shuffleEntries.addAndGet(-n);
      oldest.remove();
    }
  }

  private static long entries(Map<Integer, HeldOutput> held) {
    long n = 0;
    for (HeldOutput out : held.values()) {
      n += out.partitionBytes().length;
    }
    return n;
  }

  public JobLimits limits() {
    return limits;
  }

  /** Entries held against jobs.maxShuffleEntries now. */
  public long shuffleEntries() {
    return shuffleEntries.get();
  }

  private static long[] toArray(List<Long> values) {
    long[] a = new long[values.size()];
    for (int i = 0; i < a.length; i++) {
      a[i] = values.get(i);
    }
    return a;
  }

  public Job running(String jobId) {
    return running.get(jobId);
  }

  /** A running or retained finished job. */
  public Job find(String jobId) {
    Job j = running.get(jobId);
    if (j != null) {
      return j;
    }
    synchronized (shared) {
      return finished.get(jobId);
    }
  }

  /** Running jobs with a reduce still shuffling on {@code host} (a live, concurrent view). */
  public Collection<Job> shufflingOn(String host) {
    return shufflingByHost.getOrDefault(host, Set.of());
  }

  /** Hosts where a running job has a reduce still shuffling (a live, concurrent view). */
  public Collection<String> shufflingHosts() {
    return shufflingByHost.keySet();
  }

  /** Running jobs (a live, concurrent view). */
  public Collection<Job> runningJobs() {
    return running.values();
  }

  public int runningCount() {
    return running.size();
  }

  /** Finished jobs in the history, least recently finished first (a copy). */
  public List<Job> finishedJobs() {
    synchronized (shared) {
      return List.copyOf(finished.values());
    }
  }

  /**
   * Records a flow size seen in a lookup (estimate for outputs reported without sizes); true
   * when the job's remaining bytes depend on that estimate and so just changed.
   */
  /** Records a flow of {@code reduce} looking up its policy; true for its first flow. */
  public static boolean flowStarted(Job job, Job.Reduce reduce, long now) {
    return job.flowStarted(reduce, now);
  }

  /**
   * Maps a lookup's flow carries are done (see {@link Job#mapsServed}); not learnt while
   * jobs.maxShuffleEntries is full: the lookup is still answered, and the maps' own reports
   * say the same later.
   */
  public boolean mapsServed(Job job, int reduceId, String host, List<Integer> mapIds,
      long bytes, long now) {
    long adds = 2L * mapIds.size();
    if (shuffleEntries.get() + adds > limits.maxShuffleEntries()
        || shuffleEntriesOf(host) + adds > limits.maxShuffleEntriesPerHost()) {
      return false;
    }
    int before = job.entries();
    boolean learnt = job.mapsServed(reduceId, host, mapIds, bytes, now);
    added(job, host, job.entries() - before);
    return learnt;
  }

  public static boolean sawLookup(Job job, long bytes) {
    return job.sawLookup(bytes);
  }

  private void touch(Job job, int reduceId, Set<String> touched) {
    Job.Reduce r = job.reduce(reduceId);
    if (r != null) {
      touched.add(r.host());
    }
  }

  private void touchAll(Job job, Set<String> touched) {
    for (Job.Reduce r : job.reduces()) {
      if (r.shuffling()) {
        touched.add(r.host());
      }
    }
  }

  private void index(Job job, String host) {
    shufflingByHost.compute(host, (h, jobs) -> {
      Set<Job> set = jobs != null ? jobs : ConcurrentHashMap.newKeySet();
      set.add(job);
      return set;
    });
  }

  private void unindex(Job job, String host) {
    shufflingByHost.computeIfPresent(host, (h, jobs) -> {
      jobs.remove(job);
      return jobs.isEmpty() ? null : jobs;
    });
  }

  /** Caller holds {@code shared}. */
  private void trimFinished() {
    Iterator<String> oldest = finished.keySet().iterator();
    while (finished.size() > retainFinished && oldest.hasNext()) {
      evicted.add(oldest.next());
      oldest.remove();
    }
  }

  /** Ids of finished jobs dropped from the history since the last call. */
  public List<String> drainEvicted() {
    if (evicted.isEmpty()) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    for (String id = evicted.poll(); id != null; id = evicted.poll()) {
      out.add(id);
    }
    return out;
  }
}
