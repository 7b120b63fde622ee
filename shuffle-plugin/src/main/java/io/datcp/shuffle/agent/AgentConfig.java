package io.datcp.shuffle.agent;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.hadoop.conf.Configuration;

/**
 * The plugin's own settings (Hadoop-style dotted keys in yarn-site.xml for the NodeManager side,
 * in mapred-site.xml or the job configuration for the reduce side). Read once at start-up;
 * a bad value fails start-up with a message naming the key and what it accepts.
 */
public record AgentConfig(
    String socketPath, String eventsSocketPath, Duration registerTimeout, Duration rpcTimeout,
    int reportQueueSize, int reportBatchSize, Duration suspendMax) {

  /** Unix domain socket of the host's DATCP agent (LocalAgentService). */
  public static final String AGENT_SOCKET = "datcp.shuffle.agent.socket";
  public static final String DEFAULT_AGENT_SOCKET = "/run/datcp/agent.sock";

  /**
   * The agent's events socket (length-delimited ShuffleReport / ReportAck, no gRPC), where the
   * reduce side reports; by default {@link #EVENTS_SOCKET_NAME} in the directory of
   * {@link #AGENT_SOCKET}, as the agent places it by default.
   */
  public static final String EVENTS_SOCKET = "datcp.shuffle.agent.events-socket";
  public static final String EVENTS_SOCKET_NAME = "events.sock";

  /**
   * How long a fetch response waits for its flow registration before its first byte goes out
   * anyway (fail open), milliseconds. Bounded so a slow agent costs a fetch at most this much.
   * The default is above 89 % of the registration latencies measured on the busy Docker
   * cluster (p50 10-15 ms, p90 200-300, p99 500-1000): a default above the p99 would cost
   * every fetch a second while an agent hangs (bench/results/2026-11-26-registration-latency).
   */
  public static final String REGISTER_TIMEOUT_MS = "datcp.shuffle.register.timeout-ms";
  public static final long DEFAULT_REGISTER_TIMEOUT_MS = 200;

  /** Deadline of one call to the agent (registration reply, EndFlow, Forward), milliseconds. */
  public static final String RPC_TIMEOUT_MS = "datcp.shuffle.agent.rpc-timeout-ms";
  public static final long DEFAULT_RPC_TIMEOUT_MS = 2000;

  /**
   * Longest time a fetch response spends suspended, in total over all the agent's SUSPEND
   * orders for it, milliseconds; then it resumes on its own (fail open: an agent that died, or
   * a RESUME lost while the orders stream was down, must not hold a reducer until Hadoop's read
   * timeout). A few seconds: DATCP's quenching pauses a flow for a few flow times, not minutes.
   */
  public static final String SUSPEND_MAX_MS = "datcp.shuffle.suspend.max-ms";
  public static final long DEFAULT_SUSPEND_MAX_MS = 5000;

  /** Events waiting to be forwarded; when full, new events are dropped and counted. */
  public static final String REPORT_QUEUE_SIZE = "datcp.shuffle.report.queue-size";
  public static final int DEFAULT_REPORT_QUEUE_SIZE = 10_000;

  /** Largest number of events in one batch (a Forward call or an events-socket message). */
  public static final String REPORT_BATCH_SIZE = "datcp.shuffle.report.batch-size";
  public static final int DEFAULT_REPORT_BATCH_SIZE = 500;
  /** The agent refuses a Forward of more events (and the forwarder would send it again). */
  static final int MAX_REPORT_BATCH_SIZE = 1000;

  /** Reads and validates the keys; throws IllegalArgumentException naming the bad key. */
  public static AgentConfig from(Configuration conf) {
    String socket = conf.getTrimmed(AGENT_SOCKET, DEFAULT_AGENT_SOCKET);
    if (socket.isEmpty() || !socket.startsWith("/")) {
      throw new IllegalArgumentException(
          AGENT_SOCKET + " must be an absolute path of a Unix domain socket, got '" + socket + "'");
    }
    String events = conf.getTrimmed(EVENTS_SOCKET, "");
    if (events.isEmpty()) {
      events = Path.of(socket).resolveSibling(EVENTS_SOCKET_NAME).toString();
    }
    // sun_path holds 108 bytes with the terminating NUL
    if (!events.startsWith("/") || events.getBytes(StandardCharsets.UTF_8).length > 107
        || events.equals(socket)) {
      throw new IllegalArgumentException(EVENTS_SOCKET + " must be an absolute path of at most"
          + " 107 bytes other than " + AGENT_SOCKET + " (default: " + EVENTS_SOCKET_NAME
          + " beside it), got '" + events + "'");
    }
    long register = positiveLong(conf, REGISTER_TIMEOUT_MS, DEFAULT_REGISTER_TIMEOUT_MS, 0,
        Integer.MAX_VALUE);
    long rpc = positiveLong(conf, RPC_TIMEOUT_MS, DEFAULT_RPC_TIMEOUT_MS, 1, Integer.MAX_VALUE);
    int queue = (int) positiveLong(conf, REPORT_QUEUE_SIZE, DEFAULT_REPORT_QUEUE_SIZE, 1,
        Integer.MAX_VALUE);
    int batch = (int) positiveLong(conf, REPORT_BATCH_SIZE, DEFAULT_REPORT_BATCH_SIZE, 1,
        MAX_REPORT_BATCH_SIZE);
    long suspend = positiveLong(conf, SUSPEND_MAX_MS, DEFAULT_SUSPEND_MAX_MS, 1,
        Integer.MAX_VALUE);
    return new AgentConfig(socket, events, Duration.ofMillis(register), Duration.ofMillis(rpc),
        queue, batch, Duration.ofMillis(suspend));
  }

  private static long positiveLong(Configuration conf, String key, long dflt, long min,
      long max) {
    String raw = conf.getTrimmed(key);
    if (raw == null || raw.isEmpty()) {
      return dflt;
    }
    long v;
    try {
      v = Long.parseLong(raw);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + " must be an integer >= " + min + ", got '" + raw + "'");
    }
    if (v < min || v > max) {
      throw new IllegalArgumentException(
          key + " must be an integer in [" + min + ", " + max + "], got '" + raw + "'");
    }
    return v;
  }
}
