package io.datcp.shuffle.agent;

import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleReport;
import java.io.Closeable;

/**
 * Where an {@link EventForwarder} sends its batches: the NodeManager's {@link AgentClient}
 * (Forward over the gRPC channel it has anyway) or a reduce task's {@link EventsClient} (the
 * events socket, without gRPC's start-up cost in a short-lived JVM).
 */
public interface ReportTransport extends Closeable {
  /**
   * Sends one report and returns the agent's answer, waiting at most the rpc timeout; throws a
   * RuntimeException when it may not have been delivered (the caller resends it unchanged).
   */
  ReportAck forward(ShuffleReport report);

  @Override
  void close();
}
