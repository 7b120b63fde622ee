package io.datcp.scheduler.ingest;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The verification cache: on which hosts YARN placed each job's containers, as {@link
 * YarnApps#placement} read them. A report's claims are awaited
 * ({@link #await}) before the ingest step takes its locks, then judged from the cache ({@link
 * #placed}).
 *
 * <p>Cache: a (job, host) YARN listed stays placed for the job's life (containers end, but a
 * host that ran one of the job's tasks may still report its map output or shuffle); a host not
 * listed is refused only until the next refresh. Throttle: per application at most one request
 * in flight and one refresh per {@code minIntervalNanos} (yarn.rm.refreshMinIntervalMillis). A
 * claim that misses waits for a refresh that starts after it (containers appear in YARN just
 * before their tasks report, possibly after the last refresh), so an honest host waits at most
 * the interval plus one answer and is never refused for being new; it needs none of its own
 * when the answer of the refresh in flight as it came lists its host (a burst of a job's first
 * reports, whose containers YARN had all placed, costs one request). A refresh asks the attempt
 * that answered last (one request); only the hosts it waits for being missing there makes it
 * look for a later attempt. A host still missing that claims to serve a map's output (a map
 * host whose container ended before this scheduler first heard of it: a new leader, a restart)
 * is looked up in the job's MapReduce AM ({@link YarnApps#mapAttemptHosts}): placed if an
 * attempt of that map ran there. An unanswered refresh
 * (outage) leaves the application unverifiable until one is answered: claims then fail open to
 * the host checks.
 */
final class Placements {
  /** Applications kept; beyond it one not being refreshed is dropped (asked again if needed). */
  static final int MAX_APPS = 10_000;

  enum Verdict {
    /** YARN placed a container of the job on the host. */
    PLACED,
    /** YARN answered, and placed none there (or does not know the job). */
    NOT_PLACED,
    /** The ResourceManager did not answer: host checks only. */
    UNVERIFIED
  }

  /** One application's cache entry; the throttle's fields under its monitor. */
  private static final class App {
    final String jobId;
    final Set<String> hosts = ConcurrentHashMap.newKeySet();
    /** Hosts whose claims wait for the next refresh to start. */
    final Set<String> wanted = ConcurrentHashMap.newKeySet();
    /** Of the wanted hosts: a map whose output each claims to serve (its latest claim). */
    final Map<String, Integer> claimedMaps = new ConcurrentHashMap<>();
    volatile boolean unverifiable;
    /** The attempt YARN listed containers of last; null: none yet. */
    String attempt;
    long lastStartNanos;
    boolean started;
    CompletableFuture<Void> inFlight;
    CompletableFuture<Void> queued;

    App(String jobId) {
      this.jobId = jobId;
    }
  }

  private final YarnApps yarn;
  private final long minIntervalNanos;
  private final LongSupplier nanoTime;
  private final Map<String, App> apps = new ConcurrentHashMap<>();

  /** @param minIntervalNanos yarn.rm.refreshMinIntervalMillis, in nanoseconds */
  Placements(YarnApps yarn, long minIntervalNanos, LongSupplier nanoTime) {
    this.yarn = yarn;
    this.minIntervalNanos = minIntervalNanos;
    this.nanoTime = nanoTime;
  }

  /**
   * Completes once every claim of {@code host} on {@code jobIds} can be judged: at once when
   * YARN placed all of them there already, else when a refresh started after this call was
   * answered (or failed). Never completes exceptionally.
   *
   * @param claimedMaps per job, a map whose output {@code host} says it serves (none: absent)
   */
  CompletableFuture<Void> await(Collection<String> jobIds, String host,
      Map<String, Integer> claimedMaps) {
    CompletableFuture<?>[] waits = null;
    int n = 0;
    for (String jobId : jobIds) {
      App a = apps.get(jobId);
      if (a != null && a.hosts.contains(host)) {
        continue;
      }
      if (waits == null) {
        waits = new CompletableFuture<?>[jobIds.size()];
      }
      App missed = a != null ? a : app(jobId);
      Integer map = claimedMaps.get(jobId);
      if (map != null) {
        missed.claimedMaps.put(host, map);
      }
      missed.wanted.add(host);
      waits[n++] = refreshAfterNow(missed);
    }
    if (waits == null) {
      return CompletableFuture.completedFuture(null);
    }
    return n == 1 ? waits[0].thenApply(v -> null)
        : CompletableFuture.allOf(Arrays.copyOf(waits, n));
  }

  /** What YARN says of {@code host} running a container of {@code jobId}. */
  Verdict placed(String jobId, String host) {
    App a = apps.get(jobId);
    if (a == null) {
      // never awaited, or dropped since: nothing YARN said lets it in
      return Verdict.NOT_PLACED;
    }
    if (a.hosts.contains(host)) {
      return Verdict.PLACED;
    }
    return a.unverifiable ? Verdict.UNVERIFIED : Verdict.NOT_PLACED;
  }

  private App app(String jobId) {
    if (apps.size() >= MAX_APPS) {
      Iterator<App> it = apps.values().iterator();
      while (it.hasNext() && apps.size() >= MAX_APPS) {
        App old = it.next();
        synchronized (old) {
          if (old.inFlight == null && old.queued == null) {
            it.remove();
          }
        }
      }
    }
    return apps.computeIfAbsent(jobId, App::new);
  }

  /** A refresh of {@code a} that starts now or later, within the throttle. */
  private CompletableFuture<Void> refreshAfterNow(App a) {
    synchronized (a) {
      if (a.queued != null) {
        return a.queued;
      }
      if (a.inFlight == null && (!a.started || nanoTime.getAsLong() - a.lastStartNanos
          >= minIntervalNanos)) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        startLocked(a, f);
        return f;
      }
      // the one in flight was asked before this claim, or one was answered too recently
      CompletableFuture<Void> queued = new CompletableFuture<>();
      a.queued = queued;
      runQueued(a);
      return queued;
    }
  }

  /**
   * Starts {@code a}'s queued refresh once none is in flight and the interval has passed; ends
   * it without a request when the answer in between listed every host it waits for.
   */
  private void runQueued(App a) {
    CompletableFuture<Void> answered;
    synchronized (a) {
      if (a.queued == null) {
        return;
      }
      if (a.inFlight != null) {
        a.inFlight.whenComplete((v, e) -> runQueued(a));
        return;
      }
      for (Iterator<String> it = a.wanted.iterator(); it.hasNext(); ) {
        String host = it.next();
        if (a.hosts.contains(host)) {
          it.remove();
          a.claimedMaps.remove(host);
        }
      }
      if (!a.wanted.isEmpty()) {
        long wait = a.lastStartNanos + minIntervalNanos - nanoTime.getAsLong();
        if (wait > 0) {
          CompletableFuture.delayedExecutor(wait, TimeUnit.NANOSECONDS)
              .execute(() -> runQueued(a));
          return;
        }
        CompletableFuture<Void> f = a.queued;
        a.queued = null;
        startLocked(a, f);
        return;
      }
      answered = a.queued;
      a.queued = null;
    }
    // outside the lock: the claims it wakes are judged on this thread
    answered.complete(null);
  }

  private void startLocked(App a, CompletableFuture<Void> done) {
    a.started = true;
    a.lastStartNanos = nanoTime.getAsLong();
    a.inFlight = done;
    Set<String> lookingFor = Set.copyOf(a.wanted);
    a.wanted.removeAll(lookingFor);
    Map<String, Integer> claims = new HashMap<>();
    for (String host : lookingFor) {
      Integer map = a.claimedMaps.remove(host);
      if (map != null) {
        claims.put(host, map);
      }
    }
    yarn.placement(a.jobId, a.attempt, lookingFor).whenComplete((p, failure) -> {
      boolean answered = failure == null && p.isPresent();
      synchronized (a) {
        if (!answered) {
          a.unverifiable = true;
        } else {
          a.hosts.addAll(p.get().hosts());
          a.attempt = p.get().attempt().isEmpty() ? a.attempt : p.get().attempt();
          a.unverifiable = false;
        }
      }
      List<CompletableFuture<Void>> asks = new ArrayList<>();
      if (answered) {
        claims.forEach((host, map) -> {
          if (!a.hosts.contains(host)) {
            asks.add(yarn.mapAttemptHosts(a.jobId, map).thenAccept(ran -> {
              if (ran.orElse(Set.of()).contains(host)) {
                a.hosts.add(host);
              }
            }));
          }
        });
      }
      CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
        synchronized (a) {
          a.inFlight = null;
        }
        done.complete(null);
      });
    });
  }
}
