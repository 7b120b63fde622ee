package io.datcp.scheduler.flows;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

/**
 * Who needs which policy updates: an agent that looked up a flow hears of every later change of
 * that flow's policy until the flow ends (its fetch finished or the agent reported its outcome)
 * or the job does. A flow is a {@link FlowRef}: its reduce and, when the lookup named it, its
 * full {@link FlowKey}, so flows of one job and reduce from different hosts or epochs are
 * distinct. Interest and the outbox are guarded by the scheduler's lock; updates are queued
 * under it and delivered after it is released. Subscriptions may come and go from any thread.
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

  /** job -> agent host -> flow -> bytes. */
  private final Map<String, Map<String, Map<FlowRef, Long>>> interest = new HashMap<>();
  private final Map<String, List<Sink>> watchers = new ConcurrentHashMap<>();
  private List<Outbound> outbox = new ArrayList<>();

  /** An update waiting for delivery to one agent host. */
  public record Outbound(String agentHost, PolicyUpdate update) {}

  /** Remembers that {@code agentHost} asked about a flow of {@code bytes}. */
  public void interested(String agentHost, String jobId, FlowRef flow, long bytes) {
    interest.computeIfAbsent(jobId, j -> new HashMap<>())
        .computeIfAbsent(agentHost, h -> new HashMap<>())
        .put(flow, bytes);
  }

  /** Flows of {@code agentHost} in the job that ended: no more updates for them. */
  public void notInterested(String agentHost, String jobId, Predicate<FlowRef> ended) {
    Map<String, Map<FlowRef, Long>> hosts = interest.get(jobId);
    if (hosts == null) {
      return;
    }
    Map<FlowRef, Long> flows = hosts.get(agentHost);
    if (flows != null && flows.keySet().removeIf(ended) && flows.isEmpty()) {
      hosts.remove(agentHost);
      if (hosts.isEmpty()) {
        interest.remove(jobId);
      }
    }
  }

  /** Agents (with flows and sizes) interested in a job: host -> flow -> bytes. */
  public Map<String, Map<FlowRef, Long>> interestIn(String jobId) {
    return interest.getOrDefault(jobId, Map.of());
  }

  /** Every flow {@code agentHost} is interested in, for a resync snapshot. */
  public List<Interest> interestOf(String agentHost) {
    List<Interest> out = new ArrayList<>();
    interest.forEach((jobId, hosts) -> {
      Map<FlowRef, Long> flows = hosts.get(agentHost);
      if (flows != null) {
        flows.forEach((f, bytes) -> out.add(new Interest(jobId, f, bytes)));
      }
    });
    return out;
  }

  /** Queues an update for {@code agentHost} if it has an open stream. */
  public void queue(String agentHost, PolicyUpdate update) {
    if (watchers.containsKey(agentHost)) {
      outbox.add(new Outbound(agentHost, update));
    }
  }

  /** Takes the queued updates, for {@link #deliver} once the scheduler's lock is released. */
  public List<Outbound> drain() {
    if (outbox.isEmpty()) {
      return List.of();
    }
    List<Outbound> out = outbox;
    outbox = new ArrayList<>();
    return out;
  }

  /**
   * Hands drained updates to the streams. Deliveries of concurrent drains may interleave, so
   * agents keep, per flow, the update with the latest time.
   */
  public void deliver(List<Outbound> updates) {
    for (Outbound o : updates) {
      for (Sink w : watchers.getOrDefault(o.agentHost(), List.of())) {
        w.send(o.update());
      }
    }
  }

  /** Tells interested agents the job is over and forgets the interest. */
  public void jobFinished(String jobId, long nowUnixNanos) {
    Map<String, Map<FlowRef, Long>> hosts = interest.remove(jobId);
    if (hosts == null) {
      return;
    }
    hosts.forEach((host, flows) -> flows.keySet().forEach(f -> queue(host,
        new PolicyUpdate(nowUnixNanos, new FlowPolicy(jobId, f.reduceId(), 0, 0, 0, 0, 0, null,
            null, "job finished", "", f.key()), true, false))));
  }

  /** Starts delivering updates for {@code agentHost}; the returned handle stops it. */
  public Runnable watch(String agentHost, Sink sink) {
    watchers.computeIfAbsent(agentHost, h -> new CopyOnWriteArrayList<>()).add(sink);
    return () -> watchers.computeIfPresent(agentHost, (h, ws) -> {
      ws.remove(sink);
      return ws.isEmpty() ? null : ws;
    });
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
