package io.datcp.shuffle.mapside;

import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowOrder;
import io.datcp.shuffle.agent.AgentConfig;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes the agent's orders (DATCP Algorithm 2 quenching: suspend, resume, kill) to the channel
 * that carries the flow. An order can overtake the RegisterFlow reply that tells us the flow id
 * (separate streams), so orders for ids not bound yet are kept, a bounded number, until bound.
 * When the orders stream breaks, every flow resumes: the orders meant for it are lost meanwhile,
 * and a restarted agent no longer knows what it suspended.
 */
final class FlowOrders {
  private static final Logger LOG = LoggerFactory.getLogger(FlowOrders.class);
  private static final int MAX_EARLY_ORDERS = 1024;

  private final AtomicBoolean suspendOutlastedLogged = new AtomicBoolean();
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

  /** The orders stream to the agent broke. */
  synchronized void ordersLost() {
    early.clear(); // from an agent that is gone
    for (FlowTracker tracker : live.values()) {
      tracker.ordersLost();
    }
  }

  /** A response resumed by itself after its suspend bound: logged once, counted always. */
  void suspendOutlasted(Duration bound) {
    if (suspendOutlastedLogged.compareAndSet(false, true)) {
      LOG.warn("A fetch response suspended by the DATCP agent for {} ms ({}) resumed by itself;"
          + " later ones are counted in FlowsResumedOnTimeout, not logged",
          bound.toMillis(), AgentConfig.SUSPEND_MAX_MS);
    }
  }

  synchronized void unbind(long flowId) {
    live.remove(flowId);
  }
}
