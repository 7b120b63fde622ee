package io.datcp.scheduler.switches;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The port settings of every switch: from the config file at start, changed by the operator at
 * run time (held in memory; the config file is the source again after a restart). Watchers of a
 * switch get its whole configuration on every change. Thread-safe.
 */
public final class SwitchBook {
  /** One switch's configuration as sent to its agent. */
  public record SwitchConfig(String name, List<SwitchPort> ports, long timeUnixNanos) {}

  private final Map<String, List<SwitchPort>> configured;
  private final Map<String, List<Consumer<SwitchConfig>>> watchers = new ConcurrentHashMap<>();
  private final LongSupplier clock;

  public SwitchBook(SwitchSettings settings, LongSupplier nowUnixNanos) {
    this.configured = new TreeMap<>(settings.switches());
    this.clock = nowUnixNanos;
  }

  /** The configuration of {@code name}: its configured ports, else the Table 1 default. */
  public synchronized SwitchConfig get(String name) {
    return new SwitchConfig(name, configured.getOrDefault(name, SwitchSettings.defaultPorts()),
        clock.getAsLong());
  }

  /** Names of switches with a configuration of their own. */
  public synchronized List<String> names() {
    return List.copyOf(configured.keySet());
  }

  /** Replaces a switch's ports whole (validated) and pushes them to its watchers. */
  public SwitchConfig put(String name, List<SwitchPort> ports) {
    require(
        name != null && name.matches("[A-Za-z0-9_-]{1,64}"), "switchName",
        "must be 1-64 of A-Za-z0-9_-");
    require(ports != null && !ports.isEmpty(), "ports",
        "must list at least one port");
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < ports.size(); i++) {
      ports.get(i).validate("ports[" + i + "].");
      require(seen.add(ports.get(i).iface()),
          "ports[" + i + "].interface", "is listed twice");
    }
    SwitchConfig c;
    synchronized (this) {
      configured.put(name, List.copyOf(ports));
      c = get(name);
    }
    watchers.getOrDefault(name, List.of()).forEach(w -> w.accept(c));
    return c;
  }

  /** Sends the current configuration now and every later one; run the handle to stop. */
  public Runnable watch(String name, Consumer<SwitchConfig> watcher) {
    require(name != null && !name.isEmpty() && name.length() <= 64, "switchName",
        "must be a switch name of 1-64 characters");
    synchronized (this) {
      watchers.computeIfAbsent(name, n -> new CopyOnWriteArrayList<>()).add(watcher);
      watcher.accept(get(name));
    }
    return () -> watchers.computeIfPresent(name, (n, ws) -> {
      ws.remove(watcher);
      return ws.isEmpty() ? null : ws;
    });
  }
}
