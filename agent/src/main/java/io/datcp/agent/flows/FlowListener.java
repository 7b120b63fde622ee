package io.datcp.agent.flows;

import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowOutcome;

/** Where the registry sends what it learns: orders for the plugin, outcomes for the scheduler. */
public interface FlowListener {
  /**
   * An order for the shuffle service about one of its flows.
   *
   * @param owner the process that registered the flow: only its subscriptions get the order
   * @param subscriber the registering service's subscriber id; empty = unknown
   */
  void order(long flowId, Owner owner, String subscriber, FlowAction action, String reason);

  /** How a flow ended. */
  void outcome(FlowOutcome outcome);
}
