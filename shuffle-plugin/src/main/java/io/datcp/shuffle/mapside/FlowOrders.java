package io.datcp.shuffle.mapside;

import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowOrder;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Routes the agent's orders (DATCP Algorithm 2 quenching: suspend, resume, kill) to the channel
 * that carries the flow. An order can overtake the RegisterFlow reply that tells us the flow id
 * (separate streams), so orders for ids not bound yet are kept, a bounded number, until bound.
 */
final class FlowOrders {
  private static final int MAX_EARLY_ORDERS = 1024;

  private final Map<Long, FlowTracker> live = new HashMap<>();
  private final Map<Long, FlowAction> early = new LinkedHashMap<>() {
    @Override
    protected boolean removeEldestEntry(Map.Entry<Long, FlowAction> eldest) {
      return size() > MAX_EARLY_ORDERS;
    }
  };

  synchronized void dispatch(FlowOrder order) {
    FlowTracker tracker = live.get(order.getFlowId());
    if (tracker != null) {
      tracker.order(order.getFlowId(), order.getAction(), order.getReason());
    } else {
      early.put(order.getFlowId(), order.getAction());
    }
  }

  /** Binds a flow id to its channel; returns an order that arrived before, or null. */
  synchronized FlowAction bind(long flowId, FlowTracker tracker) {
    live.put(flowId, tracker);
    return early.remove(flowId);
  }

  synchronized void ordersLost() {
  }

  synchronized void unbind(long flowId) {
    live.remove(flowId);
  }
}
