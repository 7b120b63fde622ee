package io.datcp.shuffle.reduceside;

import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.FetchStarted;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.shuffle.agent.AgentClient;
import io.datcp.shuffle.agent.AgentConfig;
import io.datcp.shuffle.agent.EventForwarder;
import io.datcp.shuffle.agent.Events;
import java.util.List;
import org.apache.hadoop.conf.Configuration;

/**
 * What a reduce task does to report its shuffle, as DatcpShuffle and its wrappers do it (the
 * configuration read, the forwarder, one event of each kind, close), for runs in a class loader
 * of their own (ReduceSideClassLoadingTest). Public: it is called by reflection.
 */
public final class ReduceSideRun {
  static final int EVENTS = 5;

  private ReduceSideRun() { }

  private static AgentConfig config(String agentSocket) {
    Configuration conf = new Configuration(false);
    conf.set(AgentConfig.AGENT_SOCKET, agentSocket);
    conf.setInt(AgentConfig.RPC_TIMEOUT_MS, 5_000);
    return AgentConfig.from(conf);
  }

  private static List<ShuffleEvent> events() {
    String job = "job_1700000000000_0001";
    return List.of(
        Events.now().setReduceStarted(ReduceStarted.newBuilder().setJobId(job).setReduceId(0)
            .setHost(Events.localHostName()).setTotalMaps(1).setTotalReduces(1)).build(),
        Events.now().setMapCompleted(MapCompleted.newBuilder().setJobId(job).setMapId(0)
            .setReduceId(0).setHost("h")).build(),
        Events.now().setFetchStarted(FetchStarted.newBuilder().setJobId(job).setReduceId(0)
            .addMapIds(0).setSourceHost("h")).build(),
        Events.now().setFetchFinished(FetchFinished.newBuilder().setJobId(job).setReduceId(0)
            .addMapIds(0).setSourceHost("h").setBytes(100)).build(),
        Events.now().setShuffleFinished(ShuffleFinished.newBuilder().setJobId(job)
            .setReduceId(0)).build());
  }

  /** The reduce side's way; returns the events delivered. */
  public static long reduceSide(String agentSocket) {
    EventForwarder forwarder = EventForwarder.connecting(config(agentSocket), "reduce probe",
        Events.localHostName());
    events().forEach(forwarder::offer);
    forwarder.close();
    return forwarder.delivered();
  }

  /** The same events through the map side's gRPC client; returns the events delivered. */
  public static long overGrpc(String agentSocket) {
    try (AgentClient client = new AgentClient(config(agentSocket), "grpc probe");
        EventForwarder forwarder = new EventForwarder(client, Events.localHostName())) {
      events().forEach(forwarder::offer);
      forwarder.close();
      return forwarder.delivered();
    }
  }
}
