package io.datcp.scheduler.flows;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * Who needs which policy updates: an agent that looked up a (job, reduce) flow hears of every
 * later change of that flow's policy until the flow ends (its fetch finished or the agent
 * reported its outcome) or the job does. Interest and the outbox are guarded by the scheduler's
 * lock; updates are queued under it and delivered after it is released, so slow streams never
 * hold up lookups. Subscriptions may come and go from any thread.
 */
public final class PolicyUpdateHub {
  /** Interest of one agent host in one flow key, with the size it last asked about. */
  private final Map<String, Map<String, Map<Integer, Long>>> interest = new HashMap<>();
  private final Map<String, List<Consumer<PolicyUpdate>>> watchers = new ConcurrentHashMap<>();
  private List<Outbound> outbox = new ArrayList<>();

  /** An update waiting for delivery to one agent host. */
  public record Outbound(String agentHost, PolicyUpdate update) {}

  /** Remembers that {@code agentHost} asked about a (job, reduce) flow of {@code bytes}. */
  public void interested(String agentHost, String jobId, int reduceId, long bytes) {
    interest.computeIfAbsent(jobId, j -> new HashMap<>())
        .computeIfAbsent(agentHost, h -> new HashMap<>())
        .put(reduceId, bytes);
  }

  /** The flow ended: no more updates for it to {@code agentHost}. */
  public void notInterested(String agentHost, String jobId, int reduceId) {
    Map<String, Map<Integer, Long>> hosts = interest.get(jobId);
    if (hosts == null) {
      return;
    }
    Map<Integer, Long> reduces = hosts.get(agentHost);
    if (reduces != null && reduces.remove(reduceId) != null && reduces.isEmpty()) {
      hosts.remove(agentHost);
      if (hosts.isEmpty()) {
        interest.remove(jobId);
      }
    }
  }

  /** Agents (with flow sizes) interested in each reduce of a job: host -> reduce -> bytes. */
  public Map<String, Map<Integer, Long>> interestIn(String jobId) {
    return interest.getOrDefault(jobId, Map.of());
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
   * Sends drained updates. Deliveries of concurrent drains may interleave, so agents keep, per
   * flow, the update with the latest time.
   */
  public void deliver(List<Outbound> updates) {
    for (Outbound o : updates) {
      for (Consumer<PolicyUpdate> w : watchers.getOrDefault(o.agentHost(), List.of())) {
        w.accept(o.update());
      }
    }
  }

  /** Tells interested agents the job is over and forgets the interest. */
  public void jobFinished(String jobId, long nowUnixNanos) {
    Map<String, Map<Integer, Long>> hosts = interest.remove(jobId);
    if (hosts == null) {
      return;
    }
    hosts.forEach((host, reduces) -> reduces.keySet().forEach(r -> queue(host,
        new PolicyUpdate(nowUnixNanos, new FlowPolicy(jobId, r, 0, 0, 0, 0, 0, null, null,
            "job finished", ""), true))));
  }

  /** Starts delivering updates for {@code agentHost}; the returned handle stops it. */
  public Runnable watch(String agentHost, Consumer<PolicyUpdate> watcher) {
    watchers.computeIfAbsent(agentHost, h -> new CopyOnWriteArrayList<>()).add(watcher);
    return () -> watchers.computeIfPresent(agentHost, (h, ws) -> {
      ws.remove(watcher);
      return ws.isEmpty() ? null : ws;
    });
  }

  /** Number of open watch streams. */
  public int watcherCount() {
    return watchers.values().stream().mapToInt(List::size).sum();
  }
}
