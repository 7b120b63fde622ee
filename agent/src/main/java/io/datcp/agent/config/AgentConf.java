package io.datcp.agent.config;

import io.datcp.proto.v1.FlowMode;
import io.datcp.proto.v1.QuenchMode;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Every setting of the agent: one typed key per setting, with its default, accepted values and
 * meaning. A config file is a Java properties file with these keys; an unknown key or a bad
 * value stops start-up with a message naming the key and the accepted values.
 */
public final class AgentConf {

  /** What the agent does on its host. */
  public enum Role {
    /** Registers the shuffle flows of this host and writes them into the kernel. */
    HOST,
    /** Programs the emulated switch ports of this host from the scheduler's switch config. */
    SWITCH
  }

  /** One setting: name, parser, default, validator and the description shown in errors. */
  public static final class Key<T> {
    private final String name;
    private final T defaultValue;
    private final Function<String, T> parser;
    private final Predicate<T> valid;
    private final String accepted;
    private final String description;

    private Key(String name, T defaultValue, Function<String, T> parser, Predicate<T> valid,
        String accepted, String description) {
      this.name = name;
      this.defaultValue = defaultValue;
      this.parser = parser;
      this.valid = valid;
      this.accepted = accepted;
      this.description = description;
    }

    public String name() {
      return name;
    }

    public T defaultValue() {
      return defaultValue;
    }

    public String accepted() {
      return accepted;
    }

    public String description() {
      return description;
    }

    T parse(String raw) {
      T value;
      try {
        value = parser.apply(raw.trim());
      } catch (RuntimeException e) {
        throw new ConfigException(name, raw, accepted);
      }
      if (!valid.test(value)) {
        throw new ConfigException(name, raw, accepted);
      }
      return value;
    }
  }

  private static final Map<String, Key<?>> KEYS = new LinkedHashMap<>();

  public static final Key<Role> ROLE = register(new Key<>("agent.role", Role.HOST,
      s -> Role.valueOf(s.toUpperCase(Locale.ROOT)), v -> true, "host|switch",
      "host: register this host's shuffle flows; switch: program this host's switch ports."));

  public static final Key<String> HOST_NAME = register(new Key<>("agent.host", "",
      Function.identity(), v -> v.isEmpty() || v.matches("[A-Za-z0-9._-]{1,253}"),
      "empty or a host name ([A-Za-z0-9._-], at most 253 characters)",
      "Host name the agent reports as; empty: the system's host name."));

  public static final Key<String> SOCKET_PATH = register(new Key<>("local.socketPath",
      "/run/datcp/agent.sock", Function.identity(),
      v -> v.startsWith("/") && sunPathFits(v),
      "an absolute path shorter than 108 bytes (the sun_path limit)",
      "Unix domain socket of LocalAgentService (the shuffle plugin connects here)."));

  public static final Key<String> EVENTS_SOCKET_PATH = register(new Key<>(
      "local.eventsSocketPath", "", Function.identity(),
      v -> v.isEmpty() || v.startsWith("/") && sunPathFits(v),
      "empty (events.sock beside local.socketPath) or an absolute path shorter than 108 bytes",
      "Unix domain socket for the reduce tasks' shuffle events (length-delimited ShuffleReport,"
          + " ReportAck answers; no gRPC); empty: events.sock in local.socketPath's directory."));

  public static final Key<String> SOCKET_GROUP = register(new Key<>("local.socketGroup", "",
      Function.identity(), v -> v.isEmpty() || v.matches("[A-Za-z_][A-Za-z0-9_.-]{0,31}"),
      "empty or a group name", "Group owning the socket (e.g. hadoop); empty: the agent's."));

  public static final Key<String> SOCKET_MODE = register(new Key<>("local.socketMode", "0660",
      Function.identity(), v -> v.matches("0?[0-7]{3}"), "an octal mode such as 0660",
      "Permissions of the socket file; the NodeManager's user needs write access."));

  public static final Key<String> NODE_MANAGER_USER = register(new Key<>(
      "local.nodeManagerUser", "", Function.identity(),
      v -> v.isEmpty() || v.matches("[0-9]{1,10}") && Long.parseLong(v) < 0xFFFFFFFFL
          || v.matches("[A-Za-z_][A-Za-z0-9_.-]{0,31}"),
      "empty (root only), a user name or a numeric uid",
      "The NodeManager's user: besides root, the only user whose processes may call on"
          + " local.socketPath (register and end flows, follow orders, forward reports),"
          + " checked per connection with SO_PEERCRED; a name is looked up at start."));

  /** Who may report on the events socket. */
  public enum EventsPeers {
    /** Root and local.nodeManagerUser: reduce tasks run as the NodeManager's user. */
    NODEMANAGER,
    /** Every process the socket file's group and mode let connect. */
    ANY
  }

  public static final Key<EventsPeers> EVENTS_SOCKET_PEERS = register(new Key<>(
      "local.eventsSocketPeers", EventsPeers.NODEMANAGER,
      s -> EventsPeers.valueOf(s.toUpperCase(Locale.ROOT)),
      v -> true, "nodemanager|any",
      "Who may report on the events socket: nodemanager (root and local.nodeManagerUser; reduce"
          + " tasks run as the NodeManager's user, DefaultContainerExecutor) or any (whoever"
          + " the socket's group and mode let in; LinuxContainerExecutor runs tasks as the"
          + " job's user)."));

  public static final Key<Integer> MAX_FLOWS_PER_PEER = register(new Key<>(
      "local.maxFlowsPerPeer", 30_000, Integer::parseInt, v -> v > 0 && v <= 65_536,
      "an integer in 1..65536 (flows)",
      "Most live flows of one local process (SO_PEERCRED pid); beyond it RESOURCE_EXHAUSTED,"
          + " so that one process cannot fill the flow table (local.maxLiveFlows)."));

  public static final Key<Double> REGISTER_RATE = register(new Key<>(
      "local.registerRatePerSecond", 200_000.0, Double::parseDouble, v -> v > 0,
      "a positive number (registrations per second)",
      "Sustained RegisterFlow calls per second; beyond it RESOURCE_EXHAUSTED (flood guard)."));

  public static final Key<Integer> REGISTER_BURST = register(new Key<>("local.registerBurst",
      50_000, Integer::parseInt, v -> v > 0, "a positive integer (registrations)",
      "RegisterFlow calls accepted in a burst above the sustained rate."));

  public static final Key<Integer> MAX_LIVE_FLOWS = register(new Key<>("local.maxLiveFlows",
      60_000, Integer::parseInt, v -> v > 0 && v <= 65_536, "an integer in 1..65536 (flows)",
      "Most flows tracked at once (the kernel's flow map holds 65536); beyond it"
          + " RESOURCE_EXHAUSTED."));

  public static final Key<Long> MAX_FLOW_BYTES = register(new Key<>("local.maxFlowBytes",
      1L << 40, Long::parseLong, v -> v > 0, "a positive integer (bytes)",
      "Largest flow size accepted in a registration (1 TiB); larger is INVALID_ARGUMENT."));

  public static final Key<Integer> MAX_MAPS_PER_FLOW = register(new Key<>(
      "local.maxMapsPerFlow", 10_000, Integer::parseInt, v -> v > 0, "a positive integer",
      "Most map ids in one registration."));

  public static final Key<Boolean> KERNEL_ENABLED = register(new Key<>("kernel.enabled", true,
      AgentConf::parseBoolean, v -> true, "true|false",
      "false: never touch the kernel (every flow runs as plain TCP; registrations still"
          + " answer)."));

  public static final Key<String> KERNEL_LIBRARY = register(new Key<>("kernel.library",
      "datcp", Function.identity(), v -> !v.isEmpty(),
      "a library name (found on jna.library.path) or an absolute path to libdatcp.so",
      "libdatcp, built by 'make -C kmod' (kmod/build/libdatcp.so)."));

  public static final Key<List<Integer>> SHUFFLE_PORTS = register(new Key<>(
      "kernel.shufflePorts", List.of(13562), AgentConf::parsePorts,
      v -> !v.isEmpty() && v.size() <= 64,
      "a comma-separated list of 1 to 64 ports in 1..65535",
      "Ports whose sockets the sockops program puts on datcp (mapreduce.shuffle.port)."));

  public static final Key<Long> LINE_RATE = register(new Key<>(
      "kernel.lineRateBitsPerSecond", 100_000_000L, Long::parseLong, v -> v > 0,
      "a positive integer (bits per second)",
      "Host NIC rate for PD2TCP's early priority inversion; used only when this agent loads"
          + " datcp first."));

  public static final Key<String> CGROUP = register(new Key<>("kernel.cgroup", "",
      Function.identity(), v -> v.isEmpty() || v.startsWith("/"),
      "empty or an absolute path to a cgroup v2 directory",
      "cgroup the sockops program attaches to; empty: the cgroup v2 mount."));

  public static final Key<String> SCHEDULER_TARGET = register(new Key<>("scheduler.target",
      "localhost:9090", Function.identity(),
      v -> v.isEmpty() || v.matches("[A-Za-z0-9._\\-\\[\\]:]+:[0-9]{1,5}"
          + "(,[A-Za-z0-9._\\-\\[\\]:]+:[0-9]{1,5})*"),
      "empty or HOST:PORT[,HOST:PORT...]",
      "gRPC address of the scheduler, or of each scheduler of the HA mode (calls go to the"
          + " leader: a follower names it); empty: run without one (default policy for every"
          + " flow)."));

  public static final Key<String> TOKEN_FILE = register(new Key<>("scheduler.tokenFile", "",
      Function.identity(), v -> v.isEmpty() || v.startsWith("/"),
      "empty or an absolute path",
      "File holding this node's bearer token for the scheduler; empty: no credential. Read"
          + " again whenever the scheduler refuses the token (UNAUTHENTICATED)."));

  public static final Key<Boolean> SCHEDULER_PLAINTEXT = register(new Key<>(
      "scheduler.plaintext", false, AgentConf::parseBoolean, v -> true, "true|false",
      "true: talk to the scheduler without TLS, the token readable on the network (development"
          + " on loopback only; a warning at start); false: TLS, the scheduler's certificate"
          + " checked against scheduler.caFile."));

  public static final Key<String> SCHEDULER_CA_FILE = register(new Key<>("scheduler.caFile", "",
      Function.identity(), v -> v.isEmpty() || v.startsWith("/"), "empty or an absolute path",
      "PEM certificates of the CAs that sign the scheduler's certificate; empty: the JVM's"
          + " default trusted CAs."));

  public static final Key<String> SCHEDULER_CERT_FILE = register(new Key<>(
      "scheduler.certFile", "", Function.identity(), v -> v.isEmpty() || v.startsWith("/"),
      "empty or an absolute path",
      "PEM certificate of this node for mutual TLS, its one DNS subjectAltName this node's"
          + " host name (the recommended node credential); empty: none (then a token)."));

  public static final Key<String> SCHEDULER_KEY_FILE = register(new Key<>(
      "scheduler.keyFile", "", Function.identity(), v -> v.isEmpty() || v.startsWith("/"),
      "empty or an absolute path",
      "PEM private key (PKCS#8, 'BEGIN PRIVATE KEY') of scheduler.certFile."));

  public static final Key<Integer> LOOKUP_TIMEOUT_MS = register(new Key<>(
      "scheduler.lookupTimeoutMillis", 500, Integer::parseInt, v -> v > 0 && v <= 60_000,
      "an integer in 1..60000 (milliseconds)",
      "Deadline of one policy lookup (never on the registration path)."));

  public static final Key<Integer> MAX_LOOKUPS_IN_FLIGHT = register(new Key<>(
      "scheduler.maxLookupsInFlight", 1024, Integer::parseInt, v -> v > 0,
      "a positive integer (calls)",
      "Policy lookups outstanding at once; flows registered beyond it keep the cached or"
          + " default policy."));

  public static final Key<Integer> RECONNECT_MIN_MS = register(new Key<>(
      "scheduler.reconnectMinMillis", 100, Integer::parseInt, v -> v > 0,
      "a positive integer (milliseconds)", "First retry delay after the scheduler is lost."));

  public static final Key<Integer> RECONNECT_MAX_MS = register(new Key<>(
      "scheduler.reconnectMaxMillis", 10_000, Integer::parseInt, v -> v > 0,
      "a positive integer (milliseconds)", "Longest retry delay (exponential back-off)."));

  public static final Key<Integer> SILENT_HOLD_MS = register(new Key<>(
      "scheduler.silentHoldMillis", 10_000, Integer::parseInt, v -> v >= 0,
      "a non-negative integer (milliseconds)",
      "A scheduler whose update stream fell silent (three heartbeats missed) is not gone back to"
          + " for this long, though a follower names it the leader: a leader killed with its"
          + " host keeps its election until its ZooKeeper session expires (the schedulers'"
          + " ha.zookeeper.sessionTimeoutMillis, 10 s by default)."));

  public static final Key<FlowMode> DEFAULT_MODE = register(new Key<>("policy.defaultMode",
      FlowMode.FLOW_MODE_DATCP, s -> parseEnum(FlowMode.class, "FLOW_MODE_", s),
      v -> v != FlowMode.FLOW_MODE_UNSPECIFIED, "datcp|pd2tcp|d2tcp|dctcp|off",
      "Mode of flows without a policy from the scheduler; off: ECN reno (what datcp does for"
          + " any socket without a registration)."));

  public static final Key<QuenchMode> DEFAULT_QUENCH_MODE = register(new Key<>(
      "policy.defaultQuenchMode", QuenchMode.QUENCH_MODE_SUSPEND,
      s -> parseEnum(QuenchMode.class, "QUENCH_MODE_", s),
      v -> v != QuenchMode.QUENCH_MODE_UNSPECIFIED, "suspend|kill",
      "Quench mode of flows without a policy (MapReduce: suspend)."));

  public static final Key<Double> DEFAULT_IMPORTANCE = register(new Key<>(
      "policy.defaultImportance", 0.0, Double::parseDouble, v -> v >= 0 && v <= 10,
      "a number in [0, 10]", "Importance I of flows without a policy (Algorithm 1)."));

  public static final Key<Double> DEFAULT_PHI = register(new Key<>("policy.defaultPhi", 0.0,
      Double::parseDouble, v -> v >= 0 && v <= 1, "a number in [0, 1]",
      "phi of flows without a policy (Algorithm 1: P = phi I + (1 - phi) U)."));

  public static final Key<Long> MAX_DEADLINE_MS = register(new Key<>(
      "policy.maxDeadlineMillis", 3_600_000L, Long::parseLong, v -> v > 0,
      "a positive integer (milliseconds)",
      "Deadlines further away than this (or in the past by more than it) are treated as"
          + " none: a scheduler answer that absurd is ignored."));

  public static final Key<Long> MAX_SUSPEND_MS = register(new Key<>("quench.maxSuspendMillis",
      30_000L, Long::parseLong, v -> v > 0, "a positive integer (milliseconds)",
      "A suspended flow is resumed after this long even if the flows it yielded to still run"
          + " (a fetch must eventually complete)."));

  public static final Key<Long> FINISH_TIMEOUT_MS = register(new Key<>(
      "flows.finishTimeoutMillis", 60_000L, Long::parseLong, v -> v > 0,
      "a positive integer (milliseconds)",
      "After EndFlow, how long to wait for the kernel's last-byte-acked event before the"
          + " flow's entry is deleted anyway."));

  public static final Key<Long> MAX_FLOW_AGE_MS = register(new Key<>("flows.maxAgeMillis",
      3_600_000L, Long::parseLong, v -> v > 0, "a positive integer (milliseconds)",
      "A flow never ended by the plugin is dropped (and its kernel entry deleted) after this"
          + " long."));

  public static final Key<Long> CONNECTION_IDLE_MS = register(new Key<>(
      "flows.connectionIdleMillis", 3_600_000L, Long::parseLong, v -> v > 0,
      "a positive integer (milliseconds)",
      "A connection's epoch counter is forgotten after this long without a flow (Hadoop's"
          + " keep-alive timeout is seconds)."));

  public static final Key<Integer> REPORT_QUEUE = register(new Key<>("reports.queueCapacity",
      10_000, Integer::parseInt, v -> v > 0, "a positive integer (events)",
      "Events (shuffle reports, flow outcomes) queued for the scheduler each; when full the"
          + " oldest is dropped and counted."));

  public static final Key<Integer> REPORT_BATCH = register(new Key<>("reports.maxBatch", 500,
      Integer::parseInt, v -> v > 0 && v <= 1000, "an integer in 1..1000 (events)",
      "Most events in one batch to the scheduler (its reports.maxEventsPerBatch)."));

  public static final Key<Integer> REPORT_FLUSH_MS = register(new Key<>(
      "reports.flushMillis", 200, Integer::parseInt, v -> v > 0,
      "a positive integer (milliseconds)", "Longest a queued event waits for a batch."));

  public static final Key<String> STATE_DIR = register(new Key<>("state.dir",
      "/var/lib/datcp-agent", Function.identity(), v -> v.startsWith("/"),
      "an absolute path",
      "Where the agent keeps its flow table across restarts (flows.snapshot) and its"
          + " registration journal (flows.journal.0 and .1)."));

  public static final Key<Integer> JOURNAL_BYTES = register(new Key<>("state.journalBytes",
      32 << 20, Integer::parseInt, v -> v == 0 || v >= 1 << 16 && v <= 1 << 30,
      "0 (off) or an integer in 65536..1073741824 (bytes)",
      "Size of each of the two registration journal files (memory-mapped, sparse), from which"
          + " an agent that was killed without handing over its flows (SIGKILL) is succeeded:"
          + " the next one reports their outcomes. About 100 bytes per registration; a file"
          + " must hold the live flows (local.maxLiveFlows) with room to spare."));

  public static final Key<String> METRICS_HOST = register(new Key<>("metrics.host", "0.0.0.0",
      Function.identity(), v -> !v.isEmpty(), "an address to bind",
      "Address of the Prometheus endpoint (/metrics)."));

  public static final Key<Integer> METRICS_PORT = register(new Key<>("metrics.port", 9464,
      Integer::parseInt, v -> v >= -1 && v <= 65535, "-1 (off), 0 (any free port) or 1..65535",
      "Port of the Prometheus endpoint."));

  public static final Key<String> SWITCH_NAME = register(new Key<>("switch.name", "",
      Function.identity(), v -> v.isEmpty() || v.matches("[A-Za-z0-9._-]{1,64}"),
      "empty or [A-Za-z0-9._-]{1,64}",
      "Switch role: the switch this agent programs (as named in the scheduler)."));

  public static final Key<String> SWITCH_NETNS = register(new Key<>("switch.netns", "",
      Function.identity(), v -> v.isEmpty() || v.matches("[A-Za-z0-9._-]{1,64}")
          || v.startsWith("/"),
      "empty (own namespace), a name under /var/run/netns, or a path",
      "Switch role: network namespace holding the switch's interfaces."));

  private final Map<Key<?>, Object> values;

  private AgentConf(Map<Key<?>, Object> values) {
    this.values = values;
  }

  /** All defaults. */
  public static AgentConf defaults() {
    return new AgentConf(Map.of());
  }

  /** Reads a properties file; fails on the first unknown key or bad value. */
  public static AgentConf load(Path file) throws IOException {
    Properties props = new Properties();
    try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      props.load(r);
    }
    Map<String, String> raw = new LinkedHashMap<>();
    for (String name : new TreeSet<>(props.stringPropertyNames())) {
      raw.put(name, props.getProperty(name));
    }
    return fromMap(raw);
  }

  /** Builds a configuration from key/value strings; fails on unknown keys or bad values. */
  public static AgentConf fromMap(Map<String, String> raw) {
    Map<Key<?>, Object> values = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : raw.entrySet()) {
      Key<?> key = KEYS.get(e.getKey());
      if (key == null) {
        throw new ConfigException("unknown configuration key '" + e.getKey()
            + "'; accepted keys: " + String.join(", ", KEYS.keySet()));
      }
      values.put(key, key.parse(e.getValue()));
    }
    AgentConf conf = new AgentConf(values);
    conf.checkTogether();
    return conf;
  }

  /** A copy with more settings (later ones win); validated like a file. */
  public AgentConf with(Map<String, String> more) {
    Map<String, String> raw = new LinkedHashMap<>();
    for (Map.Entry<Key<?>, Object> e : values.entrySet()) {
      raw.put(e.getKey().name(), format(e.getValue()));
    }
    raw.putAll(more);
    return fromMap(raw);
  }

  @SuppressWarnings("unchecked")
  public <T> T get(Key<T> key) {
    return values.containsKey(key) ? (T) values.get(key) : key.defaultValue();
  }

  /** Every key, in documentation order. */
  public static List<Key<?>> keys() {
    return List.copyOf(Collections.unmodifiableCollection(KEYS.values()));
  }

  /**
   * The events socket: local.eventsSocketPath, or events.sock in local.socketPath's directory
   * when that is empty.
   */
  public String eventsSocketPath() {
    String set = get(EVENTS_SOCKET_PATH);
    return set.isEmpty() ? Path.of(get(SOCKET_PATH)).resolveSibling("events.sock").toString()
        : set;
  }

  /**
   * The uid of local.nodeManagerUser, a name looked up in the host's user database; empty when
   * unset (root only).
   *
   * @throws ConfigException for a user the host does not know
   */
  public OptionalInt nodeManagerUid() {
    String user = get(NODE_MANAGER_USER);
    if (user.isEmpty()) {
      return OptionalInt.empty();
    }
    if (user.matches("[0-9]+")) {
      return OptionalInt.of(Integer.parseUnsignedInt(user));
    }
    OptionalInt uid = PosixUsers.uid(user);
    if (uid.isEmpty()) {
      throw new ConfigException(NODE_MANAGER_USER.name(), user, NODE_MANAGER_USER.accepted()
          + " known to this host (no user '" + user + "')");
    }
    return uid;
  }

  /** sun_path holds 108 bytes with the terminating NUL. */
  private static boolean sunPathFits(String path) {
    return path.getBytes(StandardCharsets.UTF_8).length < 108;
  }

  private void checkTogether() {
    String events = eventsSocketPath();
    if (events.equals(get(SOCKET_PATH))) {
      throw new ConfigException("configuration key 'local.eventsSocketPath' must name another"
          + " socket than local.socketPath (" + events + "); accepted: "
          + EVENTS_SOCKET_PATH.accepted());
    }
    if (!sunPathFits(events)) {
      throw new ConfigException("configuration key 'local.eventsSocketPath': " + events
          + " (events.sock beside local.socketPath) is 108 bytes or longer; accepted: "
          + EVENTS_SOCKET_PATH.accepted());
    }
    if (get(ROLE) == Role.SWITCH && get(SWITCH_NAME).isEmpty()) {
      throw new ConfigException("configuration key 'switch.name' is required when"
          + " agent.role=switch; accepted: [A-Za-z0-9._-]{1,64}");
    }
    if (get(RECONNECT_MAX_MS) < get(RECONNECT_MIN_MS)) {
      throw new ConfigException("configuration key 'scheduler.reconnectMaxMillis' must be >="
          + " scheduler.reconnectMinMillis (" + get(RECONNECT_MIN_MS) + ")");
    }
  }

  private static String format(Object v) {
    if (v instanceof List<?> list) {
      return String.join(",", list.stream().map(String::valueOf).toList());
    }
    if (v instanceof FlowMode m) {
      return m.name().substring("FLOW_MODE_".length()).toLowerCase(Locale.ROOT);
    }
    if (v instanceof QuenchMode q) {
      return q.name().substring("QUENCH_MODE_".length()).toLowerCase(Locale.ROOT);
    }
    if (v instanceof Enum<?> e) {
      return e.name().toLowerCase(Locale.ROOT);
    }
    return String.valueOf(v);
  }

  private static boolean parseBoolean(String s) {
    if (s.equals("true")) {
      return true;
    }
    if (s.equals("false")) {
      return false;
    }
    throw new IllegalArgumentException(s);
  }

  private static List<Integer> parsePorts(String s) {
    List<Integer> ports = new ArrayList<>();
    for (String part : s.split(",")) {
      int p = Integer.parseInt(part.trim());
      if (p < 1 || p > 65535) {
        throw new IllegalArgumentException(part);
      }
      ports.add(p);
    }
    return List.copyOf(ports);
  }

  private static <E extends Enum<E>> E parseEnum(Class<E> type, String prefix, String s) {
    E v = Enum.valueOf(type, prefix + s.toUpperCase(Locale.ROOT));
    if (!s.equals(s.toLowerCase(Locale.ROOT))) {
      throw new IllegalArgumentException(s);
    }
    return v;
  }

  private static <T> Key<T> register(Key<T> key) {
    KEYS.put(key.name(), key);
    return key;
  }
}
