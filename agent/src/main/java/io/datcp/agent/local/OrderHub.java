package io.datcp.agent.local;

import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowOrder;
import io.grpc.stub.ServerCallStreamObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The shuffle services subscribed to orders. Flows carry no subscriber, and one NodeManager
 * runs one shuffle service, so every order goes to every subscriber; a subscriber ignores flow
 * ids it did not register.
 */
final class OrderHub {
  private final Map<String, ServerCallStreamObserver<FlowOrder>> subscribers =
      new ConcurrentHashMap<>();
  private final MeterRegistry meters;

  OrderHub(MeterRegistry meters) {
    this.meters = meters;
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

  void send(long flowId, FlowAction action, String reason) {
    Counter.builder("datcp.agent.orders").tag("action", action.name())
        .description("orders sent to the shuffle service").register(meters).increment();
    FlowOrder order = FlowOrder.newBuilder().setFlowId(flowId).setAction(action)
        .setReason(reason).build();
    for (Map.Entry<String, ServerCallStreamObserver<FlowOrder>> e : subscribers.entrySet()) {
      ServerCallStreamObserver<FlowOrder> out = e.getValue();
      synchronized (out) {
        if (out.isCancelled()) {
          subscribers.remove(e.getKey(), out);
        } else {
          out.onNext(order);
        }
      }
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
