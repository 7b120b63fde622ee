package io.datcp.agent.local;

import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowOrder;
import io.grpc.stub.ServerCallStreamObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The shuffle services subscribed to orders. An order goes to the subscriber that registered
 * the flow (its registration's subscriber_id): several NodeManagers on one host, or a restarted
 * one, must not act on each other's flows. A flow registered without a subscriber id (an older
 * plugin) has no known owner: its orders go to every subscriber, which ignore flow ids they did
 * not register. An order whose owner is not subscribed at the moment is dropped and counted.
 */
final class OrderHub {
  private final Map<String, ServerCallStreamObserver<FlowOrder>> subscribers =
      new ConcurrentHashMap<>();
  private final MeterRegistry meters;
  private final Counter undelivered;

  OrderHub(MeterRegistry meters) {
    this.meters = meters;
    undelivered = Counter.builder("datcp.agent.orders.undelivered")
        .description("orders whose flow's subscriber was not subscribed").register(meters);
    Gauge.builder("datcp.agent.orders.subscribers", subscribers, Map::size)
        .description("Orders streams open").register(meters);
  }

  /** A new subscriber replaces the previous one of the same id. */
  void subscribe(String id, ServerCallStreamObserver<FlowOrder> out) {
    out.setOnCancelHandler(() -> subscribers.remove(id, out));
    ServerCallStreamObserver<FlowOrder> old = subscribers.put(id, out);
    if (old != null) {
      synchronized (old) {
        old.onCompleted();
      }
    }
  }

  /** Sends to owner, or to every subscriber when owner is empty (unknown). */
  void send(long flowId, String owner, FlowAction action, String reason) {
    Counter.builder("datcp.agent.orders").tag("action", action.name())
        .description("orders sent to the shuffle service").register(meters).increment();
    FlowOrder order = FlowOrder.newBuilder().setFlowId(flowId).setAction(action)
        .setReason(reason).build();
    if (!owner.isEmpty()) {
      ServerCallStreamObserver<FlowOrder> out = subscribers.get(owner);
      if (out == null || !deliver(owner, out, order)) {
        undelivered.increment();
      }
      return;
    }
    for (Map.Entry<String, ServerCallStreamObserver<FlowOrder>> e : subscribers.entrySet()) {
      deliver(e.getKey(), e.getValue(), order);
    }
  }

  private boolean deliver(String id, ServerCallStreamObserver<FlowOrder> out, FlowOrder order) {
    synchronized (out) {
      if (out.isCancelled()) {
        subscribers.remove(id, out);
        return false;
      }
      out.onNext(order);
      return true;
    }
  }

  MeterRegistry meters() {
    return meters;
  }

  int subscribers() {
    return subscribers.size();
  }

  void closeAll() {
    for (ServerCallStreamObserver<FlowOrder> out : subscribers.values()) {
      synchronized (out) {
        if (!out.isCancelled()) {
          out.onCompleted();
        }
      }
    }
    subscribers.clear();
  }
}
