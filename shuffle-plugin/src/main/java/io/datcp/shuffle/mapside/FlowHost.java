package io.datcp.shuffle.mapside;

import io.datcp.shuffle.agent.AgentClient;
import io.datcp.shuffle.agent.AgentConfig;
import java.util.List;

/** What a connection's FlowTracker needs from the shuffle service that owns it. */
interface FlowHost {
  AgentConfig config();

  AgentClient agent();

  FlowOrders orders();

  /** The id this service subscribes to the agent's orders with; its registrations carry it, so
   *  the agent sends their orders here and not to another NodeManager's service. */
  String subscriberId();

  FlowMetrics metrics();

  /** A response for these map attempts of the job is about to be sent. */
  void mapOutputsServed(String jobId, List<String> mapAttempts);

  /** A connection was closed on the agent's KILL order. */
  void flowKilled(String reason);
}
