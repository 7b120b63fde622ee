package io.datcp.scheduler.serve;

import io.datcp.scheduler.common.LimitReachedException;
import io.datcp.scheduler.flows.FlowKey;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * Who needs which policy updates: an agent that looked up a flow hears of every later change of
 * that flow's policy until the flow ends (its fetch finished or the agent reported its outcome)
 * or the job does. A flow is a {@link FlowRef}: its reduce and, when the lookup named it, its
 * full {@link FlowKey}, so flows of one job and reduce from different hosts or epochs are
 * distinct.
 *
 * <p>A job's interest changes only under that job's lock (the scheduler stripes locks by job
 * id) and may be read from any thread: re-plans of a host push updates of every job on it.
 * Updates are queued into the caller's {@link Outbox} under locks and delivered after they are
 * released. Subscriptions may come and go from any thread.
 *
 * <p>Bounded: the flows an agent host follows cost 1 each plus the map ids their keys name, at
 * most lookups.maxInterestPerHost per host and lookups.maxInterest over all; a host keeps at
 * most watch.maxStreamsPerHost streams. Beyond either a lookup or stream is refused with a
 * {@link LimitReachedException}.
 */
public final class PolicyUpdateHub {
  /** One flow an agent looked up: its reduce and, when named, its full identity. */
  public record FlowRef(int reduceId, FlowKey key) {}

  /** A flow an agent is interested in, with the size it last asked about. */
  public record Interest(String jobId, FlowRef flow, long bytes) {}

  /**
   * Where one stream's updates go. Implementations queue without blocking (bounded) and may
   * close a stream that falls too far behind.
   */
  public interface Sink {
    void send(PolicyUpdate update);
  }

  /**
   * job -> reduce -> agent host -> flow -> bytes. By reduce because a re-plan pushes the flows
   * of one reducer host: walking all of a large job's flows for each of its hosts made a re-plan
   * of every host O(reduces x flows in flight).
   */
  private final Map<String, Map<Integer, Map<String, Map<FlowRef, Long>>>> interest =
      new ConcurrentHashMap<>();
  private final Map<String, List<Sink>> watchers = new ConcurrentHashMap<>();
  /** Interest units (1 per flow + 1 per map id of its key) per agent host, and over all. */
  private final Map<String, Long> unitsByHost = new ConcurrentHashMap<>();
  private final AtomicLong units = new AtomicLong();
  private final long maxUnitsPerHost;
  private final long maxUnits;
  private final int maxStreamsPerHost;
  /** Open update and switch-config streams per host. */
  private final Map<String, Integer> streamsByHost = new ConcurrentHashMap<>();

  /**
   * @param maxUnitsPerHost lookups.maxInterestPerHost
   * @param maxUnits lookups.maxInterest
   * @param maxStreamsPerHost watch.maxStreamsPerHost
   */
  public PolicyUpdateHub(long maxUnitsPerHost, long maxUnits, int maxStreamsPerHost) {
    this.maxUnitsPerHost = maxUnitsPerHost;
    this.maxUnits = maxUnits;
    this.maxStreamsPerHost = maxStreamsPerHost;
  }

  /** An update waiting for delivery to one agent host. */
  public record Outbound(String agentHost, PolicyUpdate update) {}

  /** Updates one call decided, delivered with {@link #deliver} once its locks are released. */
  public static final class Outbox {
    private final List<Outbound> updates = new ArrayList<>();

    /** Updates queued so far. */
    public List<Outbound> updates() {
      return updates;
    }
  }

  /**
   * A stream's sink that holds live updates back while a resync snapshot is being sent, so none
   * overtakes it; {@link #open} releases them, in order, after the snapshot's end.
   */
  public final class Gate implements Sink {
    private final String agentHost;
    private final Sink sink;
    private List<PolicyUpdate> held;

    private Gate(String agentHost, Sink sink, boolean closed) {
      this.agentHost = agentHost;
      this.sink = sink;
      this.held = closed ? new ArrayList<>() : null;
    }

    /** Sends past the gate: the snapshot, while the gate holds live updates back. */
    public void sendDirect(PolicyUpdate update) {
      sink.send(update);
    }

    @Override
    public synchronized void send(PolicyUpdate update) {
      if (held != null) {
        held.add(update);
      } else {
        sink.send(update);
      }
    }

    /** Sends the held updates and lets later ones through. */
    public synchronized void open() {
      if (held != null) {
        held.forEach(sink::send);
        held = null;
      }
    }

    /** Stops the stream's updates; idempotent. */
    public void stop() {
      watchers.computeIfPresent(agentHost, (h, ws) -> {
        if (ws.remove(this)) {
          closeStream(agentHost);
        }
        return ws.isEmpty() ? null : ws;
      });
    }
  }

  /**
   * Remembers that {@code agentHost} asked about a flow of {@code bytes}; a flow it follows
   * already only gets the new size. Caller holds the job's lock.
   *
   * @throws LimitReachedException beyond the host's or the overall bound; nothing changed
   */
  public void interested(String agentHost, String jobId, FlowRef flow, long bytes) {
    if (interestIn(agentHost, jobId, flow) == null) {
      take(agentHost, units(flow));
    }
    interest.computeIfAbsent(jobId, j -> new ConcurrentHashMap<>())
        .computeIfAbsent(flow.reduceId(), r -> new ConcurrentHashMap<>())
        .computeIfAbsent(agentHost, h -> new ConcurrentHashMap<>())
        .put(flow, bytes);
  }

  private static long units(FlowRef flow) {
    return 1 + (flow.key() == null ? 0 : flow.key().mapIds().size());
  }

  private void take(String agentHost, long n) {
    if (units.get() + n > maxUnits) {
      throw new LimitReachedException("lookups.maxInterest", maxUnits,
          "agents follow that many flows and map ids; no updates for this flow");
    }
    unitsByHost.compute(agentHost, (h, held) -> {
      long now = held == null ? 0 : held;
      if (now + n > maxUnitsPerHost) {
        throw new LimitReachedException("lookups.maxInterestPerHost", maxUnitsPerHost,
            agentHost + " follows that many flows and map ids; no updates for this flow");
      }
      return now + n;
    });
    units.addAndGet(n);
  }

  private void give(String agentHost, long n) {
    if (n > 0) {
      unitsByHost.computeIfPresent(agentHost, (h, held) -> held <= n ? null : held - n);
      units.addAndGet(-n);
    }
  }

  /** Interest units {@code agentHost} holds (1 per flow it follows + 1 per map id). */
  public long unitsOf(String agentHost) {
    return unitsByHost.getOrDefault(agentHost, 0L);
  }

  /** The size {@code agentHost} last asked about for a flow it still follows, else null. */
  public Long interestIn(String agentHost, String jobId, FlowRef flow) {
    Map<FlowRef, Long> flows = interestIn(jobId, flow.reduceId()).get(agentHost);
    return flows == null ? null : flows.get(flow);
  }

  /**
   * Flows of {@code agentHost} to reduce {@code reduceId} of the job that ended: no more
   * updates for them.
   */
  public void notInterested(String agentHost, String jobId, int reduceId,
      Predicate<FlowRef> ended) {
    Map<Integer, Map<String, Map<FlowRef, Long>>> reduces = interest.get(jobId);
    Map<String, Map<FlowRef, Long>> hosts = reduces == null ? null : reduces.get(reduceId);
    Map<FlowRef, Long> flows = hosts == null ? null : hosts.get(agentHost);
    if (flows == null) {
      return;
    }
    long freed = 0;
    for (Iterator<FlowRef> i = flows.keySet().iterator(); i.hasNext(); ) {
      FlowRef f = i.next();
      if (ended.test(f)) {
        i.remove();
        freed += units(f);
      }
    }
    give(agentHost, freed);
    if (freed > 0 && flows.isEmpty()) {
      hosts.remove(agentHost);
      if (hosts.isEmpty()) {
        reduces.remove(reduceId);
        if (reduces.isEmpty()) {
          interest.remove(jobId);
        }
      }
    }
  }

  /** Agents (with flows and sizes) interested in one reduce of a job: host -> flow -> bytes. */
  public Map<String, Map<FlowRef, Long>> interestIn(String jobId, int reduceId) {
    return interest.getOrDefault(jobId, Map.of()).getOrDefault(reduceId, Map.of());
  }

  /** Every flow {@code agentHost} is interested in, for a resync snapshot. */
  public List<Interest> interestOf(String agentHost) {
    List<Interest> out = new ArrayList<>();
    interest.forEach((jobId, reduces) -> reduces.values().forEach(hosts -> {
      Map<FlowRef, Long> flows = hosts.get(agentHost);
      if (flows != null) {
        flows.forEach((f, bytes) -> out.add(new Interest(jobId, f, bytes)));
      }
    }));
    return out;
  }

  /** Queues an update for {@code agentHost} into {@code out} if it has an open stream. */
  public void queue(Outbox out, String agentHost, PolicyUpdate update) {
    if (watchers.containsKey(agentHost)) {
      out.updates.add(new Outbound(agentHost, update));
    }
  }

  /**
   * Hands an outbox's updates to the streams. Deliveries of concurrent calls may interleave, so
   * agents keep, per flow, the update with the latest time.
   */
  public void deliver(Outbox out) {
    for (Outbound o : out.updates) {
      for (Sink w : watchers.getOrDefault(o.agentHost(), List.of())) {
        w.send(o.update());
      }
    }
  }

  /** Tells interested agents the job is over and forgets the interest. */
  public void jobFinished(Outbox out, String jobId, long nowUnixNanos) {
    Map<Integer, Map<String, Map<FlowRef, Long>>> reduces = interest.remove(jobId);
    if (reduces == null) {
      return;
    }
    reduces.values().forEach(hosts -> hosts.forEach((host, flows) -> {
      long freed = 0;
      for (FlowRef f : flows.keySet()) {
        freed += units(f);
        queue(out, host, new PolicyUpdate(nowUnixNanos, new FlowPolicy(jobId, f.reduceId(),
            0, 0, 0, 0, 0, null, null, "job finished", "", f.key()), true, false));
      }
      give(host, freed);
    }));
  }

  /**
   * Starts delivering updates for {@code agentHost} through the returned gate, which holds them
   * back until opened when {@code closed}.
   */
  public Gate watch(String agentHost, Sink sink, boolean closed) {
    Gate gate = new Gate(agentHost, sink, closed);
    openStream(agentHost);
    watchers.computeIfAbsent(agentHost, h -> new CopyOnWriteArrayList<>()).add(gate);
    return gate;
  }

  /**
   * Counts a stream {@code host} opens (policy updates or switch configs); {@link
   * #closeStream} when it ends.
   *
   * @throws LimitReachedException at watch.maxStreamsPerHost
   */
  public void openStream(String host) {
    streamsByHost.compute(host, (h, n) -> {
      int open = n == null ? 0 : n;
      if (open >= maxStreamsPerHost) {
        throw new LimitReachedException("watch.maxStreamsPerHost", maxStreamsPerHost,
            host + " has that many streams open");
      }
      return open + 1;
    });
  }

  public void closeStream(String host) {
    streamsByHost.computeIfPresent(host, (h, n) -> n <= 1 ? null : n - 1);
  }

  /** Number of open watch streams. */
  public int watcherCount() {
    return watchers.values().stream().mapToInt(List::size).sum();
  }

  /** Flows of one job and reduce whose fetch of {@code mapIds} finished. */
  public static Predicate<FlowRef> fetched(int reduceId, String sourceHost, List<Integer> mapIds) {
    return f -> f.reduceId() == reduceId && (f.key() == null
        || (f.key().mapIds().equals(mapIds)
            && (f.key().sourceHost().isEmpty() || f.key().sourceHost().equals(sourceHost))));
  }
}
