package io.datcp.shuffle.mapside;

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
 */
public final class FlowMetrics implements MetricsSource {
  static final String SOURCE_NAME = "DatcpShuffleFlows";

  private final MetricsRegistry registry = new MetricsRegistry(SOURCE_NAME).setContext("mapred");
  final MutableCounterLong registered = registry.newCounter("FlowsRegistered",
      "Fetch responses the agent accepted", 0L);
  final MutableCounterLong notRegistered = registry.newCounter("FlowsNotRegistered",
      "Fetch responses sent as plain TCP: the agent was absent, failed or refused", 0L);
  final MutableCounterLong registerTimeouts = registry.newCounter("RegisterTimeouts",
      "Fetch responses that started before the agent answered (register timeout passed)", 0L);
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
  }

  public long registered() {
    return registered.value();
  }

  public long notRegistered() {
    return notRegistered.value();
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
