package io.datcp.agent.local;

import io.datcp.agent.flows.Owner;
import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowOrder;
import io.grpc.stub.ServerCallStreamObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The shuffle services subscribed to orders. An order goes to the subscription that registered
 * the flow: the same process (its SO_PEERCRED pid) and the registration's subscriber_id.
 * Several NodeManagers on one host, or a restarted one, must not act on each other's flows,
 * and another process (a task of the NodeManager's user) that subscribes with the service's
 * subscriber id gets a subscription of its own, not the service's orders. A flow registered
 * without a subscriber id (an older plugin) goes to every subscription of its process, which
 * ignore flow ids they did not register. An order whose subscription is not open at the moment
 * is dropped and counted.
 */
final class OrderHub {
  /** One subscription: the subscribing process and the subscriber id it gave. */
  private record Subscriber(Owner owner, String id) {}

  private final Map<Subscriber, ServerCallStreamObserver<FlowOrder>> subscribers =
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

  /** A new subscription replaces the previous one of the same process and id. */
  void subscribe(Owner owner, String id, ServerCallStreamObserver<FlowOrder> out) {
    Subscriber key = new Subscriber(owner, id);
    out.setOnCancelHandler(() -> subscribers.remove(key, out));
    ServerCallStreamObserver<FlowOrder> old = subscribers.put(key, out);
    if (old != null) {
      synchronized (old) {
        old.onCompleted();
      }
    }
  }

  /** Sends to owner's subscription id, or to all of owner's when id is empty (unknown). */
  void send(long flowId, Owner owner, String id, FlowAction action, String reason) {
    Counter.builder("datcp.agent.orders").tag("action", action.name())
        .description("orders sent to the shuffle service").register(meters).increment();
    FlowOrder order = FlowOrder.newBuilder().setFlowId(flowId).setAction(action)
        .setReason(reason).build();
    if (!id.isEmpty()) {
      Subscriber key = new Subscriber(owner, id);
      ServerCallStreamObserver<FlowOrder> out = subscribers.get(key);
      if (out == null || !deliver(key, out, order)) {
        undelivered.increment();
      }
      return;
    }
    for (Map.Entry<Subscriber, ServerCallStreamObserver<FlowOrder>> e : subscribers.entrySet()) {
      if (e.getKey().owner().equals(owner)) {
        deliver(e.getKey(), e.getValue(), order);
      }
    }
  }

  private boolean deliver(Subscriber key, ServerCallStreamObserver<FlowOrder> out,
      FlowOrder order) {
    synchronized (out) {
      if (out.isCancelled()) {
        subscribers.remove(key, out);
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
