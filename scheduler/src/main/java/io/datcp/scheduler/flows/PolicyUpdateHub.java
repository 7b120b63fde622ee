package io.datcp.scheduler.flows;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * Who needs which policy updates: an agent that looked up a (job, reduce) flow hears of every
 * later change of that flow's policy until the job ends. Interest is guarded by the scheduler's
 * lock; subscriptions may come and go from any thread.
 */
public final class PolicyUpdateHub {
  /** Interest of one agent host in one flow key, with the size it last asked about. */
  private final Map<String, Map<String, Map<Integer, Long>>> interest = new HashMap<>();
  private final Map<String, List<Consumer<PolicyUpdate>>> watchers = new ConcurrentHashMap<>();

  /** Remembers that {@code agentHost} asked about a (job, reduce) flow of {@code bytes}. */
  public void interested(String agentHost, String jobId, int reduceId, long bytes) {
    interest.computeIfAbsent(jobId, j -> new HashMap<>())
        .computeIfAbsent(agentHost, h -> new HashMap<>())
        .put(reduceId, bytes);
  }

  /** Agents (with flow sizes) interested in each reduce of a job: host -> reduce -> bytes. */
  public Map<String, Map<Integer, Long>> interestIn(String jobId) {
    return interest.getOrDefault(jobId, Map.of());
  }

  /** Sends an update to every watcher of {@code agentHost}. */
  public void send(String agentHost, PolicyUpdate update) {
    for (Consumer<PolicyUpdate> w : watchers.getOrDefault(agentHost, List.of())) {
      w.accept(update);
    }
  }

  /** Tells interested agents the job is over and forgets the interest. */
  public void jobFinished(String jobId, long nowUnixNanos) {
    Map<String, Map<Integer, Long>> hosts = interest.remove(jobId);
    if (hosts == null) {
      return;
    }
    hosts.forEach((host, reduces) -> reduces.keySet().forEach(r -> send(host,
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
