package io.datcp.shuffle.mapside;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;
import org.apache.hadoop.metrics2.MetricsCollector;
import org.apache.hadoop.metrics2.MetricsInfo;
import org.apache.hadoop.metrics2.MetricsRecordBuilder;
import org.apache.hadoop.metrics2.MetricsSource;
import org.apache.hadoop.metrics2.lib.Interns;
import org.apache.hadoop.metrics2.lib.MetricsRegistry;
import org.apache.hadoop.metrics2.lib.MutableCounterLong;

/**
 * The shuffle service's DATCP counters, a metrics2 source (registered by DatcpShuffleHandler as
 * "DatcpShuffleFlows"; usable unregistered in tests).
 *
 * <p>A flow is untagged when the kernel had no entry for it while its bytes went: the
 * registration failed, or the agent's answer came after the response's last byte was handed to
 * the socket. The registration latency (from the call to the agent's accepting answer, as the
 * response's wait sees it) is a cumulative histogram: RegisterAnsweredWithinNms over
 * FlowsRegistered is the share of flows a register timeout of N ms lets start tagged.
 */
public final class FlowMetrics implements MetricsSource {
  static final String SOURCE_NAME = "DatcpShuffleFlows";

  /** Why a registration failed, as its gRPC status tells. */
  public enum NotRegistered {
    /** UNAVAILABLE: no agent on the socket, or its connection broke (agent restarting). */
    NO_AGENT("FlowsNotRegisteredNoAgent",
        "Fetch responses sent as plain TCP: agent unreachable or its connection broke"),
    /** DEADLINE_EXCEEDED: no answer within datcp.shuffle.agent.rpc-timeout-ms. */
    NO_ANSWER("FlowsNotRegisteredNoAnswer",
        "Fetch responses sent as plain TCP: the agent did not answer within the rpc timeout"),
    /** Any other status: the agent refused (rate limit, flow table full, invalid, ...). */
    REFUSED("FlowsNotRegisteredRefused",
        "Fetch responses sent as plain TCP: the agent refused the registration");

    final MetricsInfo info;

    NotRegistered(String name, String description) {
      info = Interns.info(name, description);
    }
  }

  /** Upper bounds of the latency histogram's buckets, ms (the last: the default rpc timeout). */
  static final long[] LATENCY_BOUNDS_MS =
      {1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 1000, 2000};
  private static final MetricsInfo[] LATENCY_INFO = Arrays.stream(LATENCY_BOUNDS_MS)
      .mapToObj(ms -> Interns.info("RegisterAnsweredWithin" + ms + "ms",
          "Registrations the agent accepted within " + ms + " ms of the call"))
      .toArray(MetricsInfo[]::new);
  /** Answers per bucket (not cumulative): index i counts (bound i-1, bound i]. */
  private final AtomicLongArray latencyBuckets = new AtomicLongArray(LATENCY_BOUNDS_MS.length);
  private final AtomicLongArray notRegisteredBy =
      new AtomicLongArray(NotRegistered.values().length);

  private final MetricsRegistry registry = new MetricsRegistry(SOURCE_NAME).setContext("mapred");
  final MutableCounterLong registered = registry.newCounter("FlowsRegistered",
      "Fetch responses the agent accepted", 0L);
  final MutableCounterLong notRegistered = registry.newCounter("FlowsNotRegistered",
      "Fetch responses sent as plain TCP: the agent was absent, failed or refused", 0L);
  final MutableCounterLong registerTimeouts = registry.newCounter("RegisterTimeouts",
      "Fetch responses that started before the agent answered (register timeout passed)", 0L);
  final MutableCounterLong untagged = registry.newCounter("FlowsUntagged",
      "Fetch responses whose bytes all went as plain TCP: registration failed, or answered only"
          + " after the last byte was handed to the socket", 0L);
  final MutableCounterLong suspended = registry.newCounter("FlowsSuspended",
      "SUSPEND orders applied", 0L);
  final MutableCounterLong resumedOnTimeout = registry.newCounter("FlowsResumedOnTimeout",
      "Suspended responses resumed by the plugin: suspended for datcp.shuffle.suspend.max-ms", 0L);
  final MutableCounterLong resumedAgentLost = registry.newCounter("FlowsResumedAgentLost",
      "Suspended responses resumed by the plugin: the orders stream to the agent broke", 0L);
  final MutableCounterLong killed = registry.newCounter("FlowsKilled",
      "Connections closed on KILL orders", 0L);

  private static final MetricsInfo EVENTS_DROPPED = Interns.info("EventsDropped",
      "Map-side events (partition sizes, running containers) dropped: forward queue full");
  private volatile LongSupplier eventsDropped = () -> 0;

  void countDroppedEventsFrom(LongSupplier dropped) {
    eventsDropped = dropped;
  }

  @Override
  public void getMetrics(MetricsCollector collector, boolean all) {
    MetricsRecordBuilder record = collector.addRecord(registry.info());
    registry.snapshot(record, all);
    record.addCounter(EVENTS_DROPPED, eventsDropped.getAsLong());
    for (NotRegistered why : NotRegistered.values()) {
      record.addCounter(why.info, notRegisteredBy.get(why.ordinal()));
    }
    long within = 0;
    for (int i = 0; i < LATENCY_BOUNDS_MS.length; i++) {
      within += latencyBuckets.get(i);
      record.addCounter(LATENCY_INFO[i], within);
    }
  }

  /** A registration failed: the response goes as plain TCP. The total last, for readers. */
  void countNotRegistered(NotRegistered why) {
    notRegisteredBy.incrementAndGet(why.ordinal());
    notRegistered.incr();
  }

  /** The agent accepted a registration latencyNanos after the call. */
  void countAnswer(long latencyNanos) {
    long micros = TimeUnit.NANOSECONDS.toMicros(latencyNanos);
    for (int i = 0; i < LATENCY_BOUNDS_MS.length; i++) {
      if (micros <= LATENCY_BOUNDS_MS[i] * 1000) {
        latencyBuckets.incrementAndGet(i);
        return;
      }
    }
  }

  public long registered() {
    return registered.value();
  }

  public long notRegistered() {
    return notRegistered.value();
  }

  public long notRegistered(NotRegistered why) {
    return notRegisteredBy.get(why.ordinal());
  }

  public long untagged() {
    return untagged.value();
  }

  /** Registrations accepted within ms (one of LATENCY_BOUNDS_MS) of their call. */
  public long answeredWithin(long ms) {
    int bucket = Arrays.binarySearch(LATENCY_BOUNDS_MS, ms);
    if (bucket < 0) {
      throw new IllegalArgumentException(ms + " ms is not a bucket bound: "
          + Arrays.toString(LATENCY_BOUNDS_MS));
    }
    long within = 0;
    for (int i = 0; i <= bucket; i++) {
      within += latencyBuckets.get(i);
    }
    return within;
  }

  public long registerTimeouts() {
    return registerTimeouts.value();
  }

  public long suspended() {
    return suspended.value();
  }

  public long resumedOnTimeout() {
    return resumedOnTimeout.value();
  }

  public long resumedAgentLost() {
    return resumedAgentLost.value();
  }

  public long killed() {
    return killed.value();
  }
}
