package io.datcp.scheduler.config;

import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.plan.PlannerPolicy;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.QuenchMode;
import io.datcp.scheduler.switches.SwitchSettings;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Every setting of the scheduler besides the command-line flags: one typed key per setting,
 * with its default, accepted values and meaning. A config file is a Java properties file with
 * these keys; an unknown key or a bad value stops start-up with a message naming the key.
 */
public final class SchedulerConf {

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

  /** Bearer token for writes; empty means "generate one into DATA_DIR/token on first start". */
  public static final Key<String> AUTH_TOKEN = register(new Key<>("auth.token", "",
      Function.identity(), t -> t.isEmpty() || t.length() >= 16,
      "empty or a string of at least 16 characters",
      "Bearer token required for policy writes; empty generates one into DATA_DIR/token"
          + " (mode 0600)."));

  public static final Key<Long> DOWNLINK_BITS_PER_SECOND = register(new Key<>(
      "planner.downlinkBitsPerSecond", 100_000_000L, Long::parseLong, v -> v > 0,
      "a positive integer (bits per second)",
      "Capacity of a reducer host's downlink, bits/s (100 Mbit/s on the emulated testbed)."));

  public static final Key<Double> TARGET_UTILISATION = register(new Key<>(
      "planner.targetUtilisation", 0.7, Double::parseDouble, v -> v > 0 && v <= 1,
      "a number in (0, 1]",
      "Share of the downlink the planner counts on until it has measured what the first job's"
          + " flows achieve on a host (AchievedShare); the low end of what they achieved on the"
          + " Docker cluster (72-95 %), so that deadlines planned before any measurement hold."));

  public static final Key<Double> FIRST_JOB_IMPORTANCE = register(new Key<>(
      "planner.firstJobImportance", 10.0, Double::parseDouble, v -> v >= 0 && v <= 10,
      "a number in [0, 10]",
      "Importance (with phi 1) of the flows of the first job in a reducer host's"
          + " smallest-remaining-shuffle-first order, so that DATCP gives them the link from"
          + " their first window rather than once their urgency has climbed; a rule's higher"
          + " importance wins; 0 leaves importance to the rules (the paper's 4.4 set-up)."));

  public static final Key<Boolean> WAITING_JOBS_YIELD = register(new Key<>(
      "planner.waitingJobsYield", true, SchedulerConf::bool, v -> true,
      "true or false",
      "Whether the flows of a job still waiting for maps get phi 1, so their precedence is"
          + " their importance (0 by default: the lowest) however late they look: rushing them"
          + " buys nothing (4.4) and their urgency would take the link from shuffle-bound jobs."));

  public static final Key<PlannerPolicy> PLANNER_POLICY = register(new Key<>(
      "planner.policy", PlannerPolicy.DEADLINE, PlannerPolicy::fromName, v -> true,
      names(PlannerPolicy.values()),
      "What a reducer host's job order (shuffle-bound jobs smallest remaining shuffle first,"
          + " then jobs waiting for maps) becomes: deadline = deadlines per job (4.4), importance,"
          + " phi, mode and quench from the rules; order = precedence classes only (first job"
          + " importance 10, other shuffle-bound jobs 1, waiting jobs 0, all phi 1), every flow"
          + " dctcp with no deadline and no quenching; rules, policy.default*,"
          + " planner.firstJobImportance and planner.waitingJobsYield are not consulted:"
          + " issue 16's prio baseline."));

  public static final Key<Double> REPORT_RATE_PER_HOST = register(new Key<>(
      "reports.ratePerHost", 500.0, Double::parseDouble, v -> v > 0,
      "a positive number (report batches per second)",
      "Sustained report batches per second accepted from one host (shuffle reports and"
          + " outcomes)."));

  public static final Key<Integer> REPORT_BURST_PER_HOST = register(new Key<>(
      "reports.burstPerHost", 1000, Integer::parseInt, v -> v > 0,
      "a positive integer (report batches)",
      "Report batches one host may send in a burst above its sustained rate."));

  public static final Key<Integer> REPORT_MAX_EVENTS = register(new Key<>(
      "reports.maxEventsPerBatch", 1000, Integer::parseInt, v -> v > 0,
      "a positive integer (events)",
      "Most events (or outcomes) in one report batch; larger batches are rejected whole."));

  public static final Key<Integer> REPORT_MAX_MESSAGE_BYTES = register(new Key<>(
      "reports.maxMessageBytes", 1 << 20, Integer::parseInt, v -> v >= 1024,
      "an integer >= 1024 (bytes)",
      "Largest gRPC request message, bytes."));

  public static final Key<Integer> RETAIN_FINISHED_JOBS = register(new Key<>(
      "jobs.retainFinished", 1000, Integer::parseInt, v -> v >= 0,
      "a non-negative integer (jobs)",
      "Finished jobs kept in memory for the dashboard (soft state)."));

  public static final Key<Integer> RETAIN_FLOWS_PER_JOB = register(new Key<>(
      "flows.retainPerJob", 10_000, Integer::parseInt, v -> v > 0,
      "a positive integer (flows)",
      "Flow outcomes kept per job for the timeline; older ones are dropped (counts stay)."));

  public static final Key<FlowMode> DEFAULT_MODE = register(new Key<>(
      "policy.defaultMode", FlowMode.DATCP, FlowMode::fromName, v -> true,
      "one of " + names(FlowMode.values()),
      "Mode of flows whose job matches no policy rule."));

  public static final Key<QuenchMode> DEFAULT_QUENCH_MODE = register(new Key<>(
      "policy.defaultQuenchMode", QuenchMode.SUSPEND, QuenchMode::fromName, v -> true,
      "one of " + names(QuenchMode.values()),
      "Quench mode of flows whose job matches no policy rule (MapReduce: suspend)."));

  public static final Key<Boolean> AUTH_NODES_REQUIRED = register(new Key<>(
      "auth.nodes.required", true, SchedulerConf::bool, v -> true, "true or false",
      "Reporters and agents must send a node token (authorization: Bearer <node token>);"
          + " false is for development only: calls without a token are then trusted."));

  public static final Key<String> YARN_RM_WEBAPP = register(new Key<>(
      "yarn.rm.webappAddress", "", Function.identity(),
      v -> v.isEmpty() || v.matches("https?://[^/\\s]+"),
      "empty or http(s)://host:port",
      "ResourceManager web address (yarn.resourcemanager.webapp.address) queried for each"
          + " job's queue, user, name and priority; empty: every job gets the default policy."));

  public static final Key<Long> YARN_RM_REFRESH_MIN_INTERVAL_MILLIS = register(new Key<>(
      "yarn.rm.refreshMinIntervalMillis", 250L, Long::parseLong, v -> v >= 10 && v <= 60_000,
      "an integer in [10, 60000] (milliseconds)",
      "Least time between two refreshes of one job's container placements from the"
          + " ResourceManager (reports are verified against them); a host's first report of a"
          + " job that YARN's last answer did not list waits for the next refresh, at most this"
          + " long plus one answer. At most one request per job is in flight. Only with"
          + " yarn.rm.webappAddress set."));

  public static final Key<String> JOB_ATTRIBUTES_FROM = register(new Key<>(
      "jobs.attributesFrom", "yarn", Function.identity(),
      v -> v.equals("yarn") || v.equals("reports"), "yarn|reports",
      "Where queue, user, job name and priority come from: yarn (the ResourceManager) or"
          + " reports (the job's own claims; development only, any host can spoof them)."));

  public static final Key<Long> JOB_IDLE_TIMEOUT_SECONDS = register(new Key<>(
      "jobs.idleTimeoutSeconds", 3600L, Long::parseLong, v -> v > 0,
      "a positive integer (seconds)",
      "A running job with no report for this long is dropped (no end was reported nor learned"
          + " from the ResourceManager)."));

  public static final Key<Long> JOB_END_POLL_MILLIS = register(new Key<>(
      "jobs.endPollMillis", 1000L, Long::parseLong, v -> v >= 100 && v <= 60_000,
      "an integer in [100, 60000] (milliseconds)",
      "How often the ResourceManager is asked whether running jobs whose reduces all finished"
          + " their shuffle have ended (no task reports a job's end); each such job at most"
          + " once per period. Only with yarn.rm.webappAddress set."));

  public static final Key<Long> DEDUP_IDLE_SECONDS = register(new Key<>(
      "reports.dedupIdleSeconds", 600L, Long::parseLong, v -> v > 0,
      "a positive integer (seconds)",
      "A reporter_id not heard from for this long is forgotten by batch deduplication."));

  public static final Key<Integer> WATCH_MAX_QUEUED = register(new Key<>(
      "watch.maxQueuedUpdates", 10_000, Integer::parseInt, v -> v > 0,
      "a positive integer (updates)",
      "Policy updates queued for one slow update stream; beyond it the stream is closed"
          + " (RESOURCE_EXHAUSTED) and the agent reconnects with resync."));

  public static final Key<Integer> WATCH_HEARTBEAT_MILLIS = register(new Key<>(
      "watch.heartbeatMillis", 0, Integer::parseInt, v -> v == 0 || v >= 100 && v <= 60_000,
      "0 or an integer in [100, 60000] (milliseconds)",
      "Interval between the heartbeats sent on each open policy update stream (a message of a"
          + " few bytes); 0: none. An agent that hears nothing for three intervals takes this"
          + " scheduler for dead and moves to another of its list, so an agent that makes no"
          + " call finds a leader killed with its host within 2-3 intervals instead of its"
          + " keepalive's 10-13 s. For the HA mode (one scheduler has no other to move to):"
          + " 1000 there costs 14-24 us of scheduler CPU per agent a second."));

  public static final Key<Integer> SERVER_EVENT_LOOPS = register(new Key<>(
      "server.eventLoops", 0, Integer::parseInt, v -> v >= 0 && v <= 256,
      "an integer in [0, 256] (threads; 0 = one per CPU)",
      "Event-loop threads the gRPC and HTTP servers and the ResourceManager client share; every"
          + " call runs on one. 0 is one per CPU: more loops than CPUs each wake for fewer requests and cost more CPU per call"
          + " (Armeria's own default is two per CPU)."));

  // ---- bounds on what peers may make the scheduler hold (README "Limits") ----

  public static final Key<Integer> MAX_RUNNING_JOBS = register(intIn("jobs.maxRunning", 10_000,
      1, 1_000_000, "jobs",
      "Most running jobs; a ReduceStarted that would start one more is refused"
          + " (RESOURCE_EXHAUSTED)."));

  public static final Key<Integer> MAX_MAPS = register(intIn("jobs.maxMaps", 100_000, 1,
      10_000_000, "maps",
      "Most maps of one job: a ReduceStarted's totalMaps, and every map id an event names, must"
          + " be below it (INVALID_ARGUMENT)."));

  public static final Key<Integer> MAX_REDUCES = register(intIn("jobs.maxReduces", 10_000, 1,
      100_000, "reduces",
      "Most reduces of one job: a ReduceStarted's totalReduces and a MapOutputIndexed's partition"
          + " sizes may not exceed it (INVALID_ARGUMENT)."));

  public static final Key<Integer> MAX_REDUCES_PER_HOST = register(intIn("jobs.maxReducesPerHost",
      1_000, 1, 1_000_000, "reduces",
      "Most reduces of running jobs on one host; a ReduceStarted beyond it is refused"
          + " (RESOURCE_EXHAUSTED)."));

  public static final Key<Integer> MAX_SHUFFLE_ENTRIES = register(intIn("jobs.maxShuffleEntries",
      2_000_000, 1_000, 1_000_000_000, "entries",
      "Per-map state held over all running jobs (and map outputs held for jobs not started):"
          + " one entry per completed map, per map-side partition size and per size a reduce"
          + " reported; an event that would add more is refused (RESOURCE_EXHAUSTED). About 8-100"
          + " bytes each: raise it with the heap for many large jobs at once."));

  public static final Key<Integer> MAX_SHUFFLE_ENTRIES_PER_HOST = register(intIn(
      "jobs.maxShuffleEntriesPerHost", 500_000, 1_000, 1_000_000_000, "entries",
      "Of jobs.maxShuffleEntries, those one reporting host's events may add (a map output's"
          + " sizes count for the map's host, a reduce's reports for the reduce's), so one host"
          + " cannot fill the whole budget; an event beyond it is refused (RESOURCE_EXHAUSTED)."));

  public static final Key<Integer> MAX_MAP_IDS = register(intIn("flows.maxMapIds", 1_000, 1,
      100_000, "map ids",
      "Most map ids one fetch, lookup or flow key names (INVALID_ARGUMENT beyond); a Hadoop"
          + " fetcher asks one host for at most 20 maps at once."));

  public static final Key<Integer> RETAIN_FLOWS_TOTAL = register(intIn("flows.retainTotal",
      500_000, 1, 100_000_000, "units: 1 per outcome + 1 per map id of its key",
      "Flow outcomes kept for the timeline over all jobs, each counting 1 plus its key's map"
          + " ids; beyond it an outcome is counted but replaces its own job's oldest, or is not"
          + " kept when its job has too few."));

  public static final Key<Integer> MAX_INTEREST_PER_HOST = register(intIn(
      "lookups.maxInterestPerHost", 20_000, 1, 100_000_000, "units: 1 per flow + 1 per map id",
      "Flows one agent host may follow for updates, each counting 1 plus its key's map ids;"
          + " a lookup beyond it is refused (RESOURCE_EXHAUSTED). A flow stops counting when its"
          + " outcome or fetch end is reported or its job ends."));

  public static final Key<Integer> MAX_INTEREST = register(intIn("lookups.maxInterest",
      1_000_000, 1, 1_000_000_000, "units: 1 per flow + 1 per map id",
      "The same over all agent hosts."));

  public static final Key<Integer> MAX_STREAMS_PER_HOST = register(intIn(
      "watch.maxStreamsPerHost", 8, 1, 1_000, "streams",
      "Open WatchPolicies and WatchSwitchConfig streams of one host; one more is refused"
          + " (RESOURCE_EXHAUSTED). An agent keeps one of each."));

  public static final Key<Integer> MAX_REPORTERS_PER_HOST = register(intIn(
      "reports.maxReportersPerHost", 1_024, 1, 100_000, "reporter ids",
      "reporter_ids one host may have remembered by batch deduplication (an agent uses two per"
          + " start); a batch with one more is refused whole (RESOURCE_EXHAUSTED) until one is"
          + " idle for reports.dedupIdleSeconds."));

  public static final Key<Long> MAX_BYTES_PER_SECOND_PER_HOST = register(longIn(
      "reports.maxBytesPerSecondPerHost", 8L << 20, 1_024, 1_000_000_000_000L, "bytes per second",
      "Request bytes per second one authenticated host's calls may carry, over all node calls"
          + " (reports, lookups, outcomes, watches); a call started while its host has sent"
          + " more than this rate and reports.burstBytesPerHost allow is refused before its"
          + " message is read (RESOURCE_EXHAUSTED). 8 MiB/s is above what an honest host sends:"
          + " README 'Limits'."));

  public static final Key<Long> BURST_BYTES_PER_HOST = register(longIn(
      "reports.burstBytesPerHost", 32L << 20, 1_024, 1_000_000_000_000L, "bytes",
      "Request bytes one host may send at once above reports.maxBytesPerSecondPerHost after"
          + " being idle."));

  public static final Key<Boolean> TLS_PLAINTEXT = register(new Key<>(
      "tls.plaintext", false, SchedulerConf::bool, v -> true, "true or false",
      "true: both ports speak plaintext, so tokens cross the network readable (development on"
          + " loopback only; logged as a warning at start); false: TLS with tls.certFile and"
          + " tls.keyFile, which must then be set."));

  public static final Key<String> TLS_CERT_FILE = register(optionalPath("tls.certFile",
      "PEM certificate chain of both ports (the scheduler's first); read again when it"
          + " changes."));

  public static final Key<String> TLS_KEY_FILE = register(optionalPath("tls.keyFile",
      "PEM private key (PKCS#8) of tls.certFile; read again when it changes."));

  public static final Key<String> TLS_CLIENT_CA_FILE = register(optionalPath("tls.clientCaFile",
      "PEM certificates of the CAs that sign node certificates (mutual TLS on the gRPC port;"
          + " a node is the one DNS subjectAltName of its certificate); empty: nodes use"
          + " tokens only."));

  public static final Key<String> TLS_CLIENT_AUTH = register(new Key<>(
      "tls.clientAuth", "optional", Function.identity(),
      v -> v.equals("optional") || v.equals("require"), "optional|require",
      "With tls.clientCaFile, whether a gRPC client must present a certificate (require) or"
          + " may come without one and use a token (optional). A certificate that the CAs did"
          + " not sign is refused at the handshake either way."));

  /** host:port[,host:port...][/chroot], as ZooKeeper's own clients take it. */
  private static final Pattern ZK_CONNECT = Pattern.compile(
      "[A-Za-z0-9.\\-\\[\\]:]+:[0-9]{1,5}(,[A-Za-z0-9.\\-\\[\\]:]+:[0-9]{1,5})*(/[^/\\s]+)*");
  /** A ZooKeeper digest credential, digest:USER:PASSWORD (USER without ':'). */
  public static final Pattern ZK_DIGEST = Pattern.compile("digest:[^:\\s]+:\\S+");
  /** An absolute ZooKeeper path: /a/b, no trailing slash, no empty or relative elements. */
  private static final Pattern ZK_PATH = Pattern.compile("(/[A-Za-z0-9_.\\-]+)+");

  public static final Key<String> HA_ZOOKEEPER_CONNECT = register(new Key<>(
      "ha.zookeeper.connect", "", Function.identity(),
      v -> v.isEmpty() || ZK_CONNECT.matcher(v).matches(),
      "empty (one scheduler, local policy store) or host:port[,host:port...][/chroot]",
      "ZooKeeper ensemble of the HA mode: schedulers sharing it elect one leader and keep the"
          + " policy rules there (see README, High availability); empty: a single scheduler"
          + " with its local store."));

  public static final Key<String> HA_ZOOKEEPER_PATH = register(new Key<>(
      "ha.zookeeper.path", "/datcp/scheduler", Function.identity(),
      v -> ZK_PATH.matcher(v).matches() && !v.contains("/./") && !v.contains("/../")
          && !v.endsWith("/.") && !v.endsWith("/.."),
      "an absolute ZooKeeper path such as /datcp/scheduler (letters, digits, '_', '.', '-')",
      "ZooKeeper node under which the schedulers of one cluster elect their leader (leader/)"
          + " and keep their policy rules (policies); one path per cluster."));

  public static final Key<Integer> HA_SESSION_TIMEOUT_MILLIS = register(intIn(
      "ha.zookeeper.sessionTimeoutMillis", 10_000, 2_000, 120_000, "milliseconds",
      "ZooKeeper session timeout: a leader that dies without closing its session (kill -9,"
          + " power cut, partition) is replaced this long after it was last heard; a leader"
          + " that stops cleanly is replaced at once. Also how long start-up waits to connect."));

  public static final Key<String> HA_ZOOKEEPER_AUTH = register(new Key<>(
      "ha.zookeeper.auth", "", Function.identity(),
      v -> v.isEmpty() || ZK_DIGEST.matcher(v).matches() || v.startsWith("@/"),
      "empty, digest:USER:PASSWORD, or @/absolute/file holding digest:USER:PASSWORD (as Hadoop's"
          + " hadoop.zk.auth)",
      "ZooKeeper credential of the HA mode, the same on every scheduler: the znodes under"
          + " ha.zookeeper.path get an ACL that only this identity may read or change (policy"
          + " rules, the election); empty: open to anyone who reaches ZooKeeper (a warning at"
          + " start)."));

  public static final Key<String> HA_ZOOKEEPER_TLS_KEY_STORE = register(optionalPath(
      "ha.zookeeper.tls.keyStoreFile",
      "TLS to ZooKeeper's secure client port: one PEM file holding this scheduler's private key"
          + " (PKCS#8, unencrypted) and its certificate chain, which ZooKeeper's own PEM key"
          + " store reads (cat key.pem cert.pem); with ha.zookeeper.tls.trustStoreFile. Both"
          + " empty: plaintext to ZooKeeper, so ha.zookeeper.auth and the policy rules cross the"
          + " network readable (a warning at start)."));

  public static final Key<String> HA_ZOOKEEPER_TLS_TRUST_STORE = register(optionalPath(
      "ha.zookeeper.tls.trustStoreFile",
      "PEM certificates of the CAs that sign the ZooKeeper servers' certificates; a server's"
          + " certificate must also name (subjectAltName) the host ha.zookeeper.connect dials."));

  public static final Key<String> HA_ADVERTISED_HOST = register(new Key<>(
      "ha.advertisedHost", "", Function.identity(),
      v -> v.isEmpty() || v.matches("[A-Za-z0-9.\\-]+|\\[[0-9A-Fa-f:.]+\\]"),
      "empty (this machine's canonical host name) or a host name, IPv4 address or [IPv6]",
      "Host name under which agents reach this scheduler's gRPC port; with that port it is"
          + " this instance's address in the election, which followers name to agents."));

  public static final Key<Integer> STARTUP_DRILL_SECONDS = register(intIn(
      "startup.drillSeconds", 0, 0, 600, "seconds; 0 = no drill",
      "Before it listens, the scheduler sends the largest valid messages a node can send (the"
          + " hostile-load benchmark's) to a throwaway instance of itself on loopback for this"
          + " long, so that the JIT has compiled their paths before an attacker sends them"
          + " (README, Limits: the first attack's transient). It delays start-up by as much."));

  /** Keys that name what lies outside the process: the drill's instance must not use them. */
  private static final Pattern OUTSIDE_WORLD = Pattern.compile("(yarn|ha|tls|auth)\\.");

  private final Map<Key<?>, Object> values;
  private final SwitchSettings switches;

  private SchedulerConf(Map<Key<?>, Object> values, SwitchSettings switches) {
    this.values = values;
    this.switches = switches;
  }

  /** All defaults. */
  public static SchedulerConf defaults() {
    return new SchedulerConf(Map.of(), SwitchSettings.parse(Map.of()));
  }

  /** Reads a properties file; fails on the first unknown key or bad value. */
  public static SchedulerConf load(Path file) throws IOException {
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
  public static SchedulerConf fromMap(Map<String, String> raw) {
    Map<Key<?>, Object> values = new LinkedHashMap<>();
    Map<String, String> switchKeys = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : raw.entrySet()) {
      if (e.getKey().startsWith(SwitchSettings.PREFIX)) {
        switchKeys.put(e.getKey(), e.getValue());
        continue;
      }
      Key<?> key = KEYS.get(e.getKey());
      if (key == null) {
        throw new ConfigException("unknown configuration key '" + e.getKey()
            + "'; accepted keys: " + String.join(", ", KEYS.keySet()) + ", "
            + SwitchSettings.KEY_FORM);
      }
      values.put(key, key.parse(e.getValue()));
    }
    return new SchedulerConf(values, SwitchSettings.parse(switchKeys));
  }

  /**
   * The start-up drill's configuration: this one's limits without its outside world (no
   * ResourceManager, ZooKeeper, switches, TLS files or admin token), plaintext, node tokens
   * required (the drill calls as a node), job attributes from reports, and no drill of its own.
   */
  public SchedulerConf forDrill() {
    Map<Key<?>, Object> v = new LinkedHashMap<>();
    values.forEach((k, val) -> {
      if (!OUTSIDE_WORLD.matcher(k.name()).lookingAt()) {
        v.put(k, val);
      }
    });
    v.put(TLS_PLAINTEXT, true);
    v.put(AUTH_NODES_REQUIRED, true);
    v.put(JOB_ATTRIBUTES_FROM, "reports");
    v.put(STARTUP_DRILL_SECONDS, 0);
    return new SchedulerConf(v, SwitchSettings.parse(Map.of()));
  }

  @SuppressWarnings("unchecked")
  public <T> T get(Key<T> key) {
    return values.containsKey(key) ? (T) values.get(key) : key.defaultValue();
  }

  /** Switch port settings from the switch.NAME.port.IFACE.SETTING keys. */
  public SwitchSettings switches() {
    return switches;
  }

  /** Every key, in documentation order. */
  public static List<Key<?>> keys() {
    return List.copyOf(Collections.unmodifiableCollection(KEYS.values()));
  }

  private static <T> Key<T> register(Key<T> key) {
    KEYS.put(key.name(), key);
    return key;
  }

  /** An integer key with an inclusive range, named in the error. */
  private static Key<Integer> intIn(String name, int defaultValue, int min, int max, String unit,
      String description) {
    return new Key<>(name, defaultValue, Integer::parseInt, v -> v >= min && v <= max,
        String.format(Locale.ROOT, "an integer in [%d, %d] (%s)", min, max, unit),
        description);
  }

  /** A file named by its absolute path, or empty for none. */
  private static Key<String> optionalPath(String name, String description) {
    return new Key<>(name, "", Function.identity(), v -> v.isEmpty() || v.startsWith("/"),
        "empty or an absolute path", description);
  }

  /** A long key with an inclusive range, named in the error. */
  private static Key<Long> longIn(String name, long defaultValue, long min, long max,
      String unit, String description) {
    return new Key<>(name, defaultValue, Long::parseLong, v -> v >= min && v <= max,
        String.format(Locale.ROOT, "an integer in [%d, %d] (%s)", min, max, unit),
        description);
  }

  private static boolean bool(String raw) {
    if (raw.equals("true") || raw.equals("false")) {
      return Boolean.parseBoolean(raw);
    }
    throw new IllegalArgumentException(raw);
  }

  private static String names(Enum<?>[] values) {
    return Arrays.stream(values).map(v -> v.toString()).collect(Collectors.joining("|"));
  }
}
