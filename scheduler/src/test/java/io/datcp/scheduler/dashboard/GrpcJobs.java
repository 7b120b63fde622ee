package io.datcp.scheduler.dashboard;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.FlowKey;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub;
import io.datcp.proto.v1.JobFinished;
import io.datcp.proto.v1.JobPriority;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.QuenchOutcome;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import java.util.ArrayList;
import java.util.List;

/**
 * Jobs reported to a scheduler over its gRPC port as the reduce-side plugin and the agents report
 * them (development configuration: no node tokens, attributes from the reports), for the
 * dashboard's tests. Every job here has one reduce.
 */
final class GrpcJobs {
  static final long S = 1_000_000_000L;
  static final long MB = 1_000_000L;
  /** Length of every map, nanoseconds. */
  static final long MAP_NANOS = 5 * S;

  private final ShuffleReportServiceBlockingStub plugin;
  private final FlowPolicyServiceBlockingStub agent;
  private int port = 40000;

  GrpcJobs(SchedulerServer server) {
    plugin = TestServices.stub(server, null, ShuffleReportServiceBlockingStub.class);
    agent = TestServices.stub(server, null, FlowPolicyServiceBlockingStub.class);
  }

  private static ShuffleEvent.Builder at(long t) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(t);
  }

  private void report(String host, List<ShuffleEvent> events) {
    int accepted = plugin.report(ShuffleReport.newBuilder().setReporterHost(host)
        .addAllEvents(events).build()).getAccepted();
    assertThat(accepted).as("events accepted from %s", host).isEqualTo(events.size());
  }

  /**
   * Job {@code job}'s reduce starts on {@code host} at {@code start} and {@code done} of its
   * {@code maps} maps (10 MB each for the reduce, on hosts m0, m1, ...) complete 5 s later.
   */
  void start(String job, String queue, String user, String host, long start, int maps,
      int done) {
    List<ShuffleEvent> events = new ArrayList<>();
    events.add(at(start).setReduceStarted(ReduceStarted.newBuilder().setJobId(job)
        .setReduceId(0).setHost(host).setTotalMaps(maps).setTotalReduces(1).setQueue(queue)
        .setUser(user).setJobName("wordcount-" + job)
        .setPriority(JobPriority.JOB_PRIORITY_NORMAL)).build());
    for (int m = 0; m < done; m++) {
      events.add(at(start + MAP_NANOS).setMapCompleted(MapCompleted.newBuilder().setJobId(job)
          .setReduceId(0).setMapId(m).setHost("m" + m).setRunTimeNanos(MAP_NANOS)
          .setOutputBytes(10 * MB).setMapsRunning(maps - done)).build());
    }
    report(host, events);
  }

  /** The job's shuffle ends 1 s before {@code finish}, when the job ends. */
  void finish(String job, String host, long finish, boolean succeeded) {
    report(host, List.of(
        at(finish - S).setShuffleFinished(ShuffleFinished.newBuilder().setJobId(job)
            .setReduceId(0)).build(),
        at(finish).setJobFinished(JobFinished.newBuilder().setJobId(job)
            .setSucceeded(succeeded)).build()));
  }

  /** The reduce on {@code reduceHost} fetched map {@code map}'s 10 MB from {@code mapHost}. */
  void fetched(String job, int map, String mapHost, String reduceHost, long t) {
    report(reduceHost, List.of(at(t).setFetchFinished(FetchFinished.newBuilder().setJobId(job)
        .setReduceId(0).setSourceHost(mapHost).addMapIds(map).setBytes(10 * MB)
        .setDurationNanos(S)).build()));
  }

  /** The agent on {@code mapHost} looks up the flow of map {@code map} to the job's reduce. */
  FlowPolicy lookup(String job, int map, String mapHost, String reduceHost) {
    return agent.lookupPolicy(PolicyLookup.newBuilder().setAgentHost(mapHost).setJobId(job)
        .setReduceId(0).setBytes(10 * MB).addMapIds(map).setFlow(key(job, map, mapHost,
            reduceHost)).build());
  }

  private FlowKey key(String job, int map, String mapHost, String reduceHost) {
    return FlowKey.newBuilder().setJobId(job).setReduceId(0).setSourceHost(mapHost)
        .addMapIds(map).setSourceAddress("10.0.0." + (map + 10)).setSourcePort(13562)
        .setDestinationAddress(reduceHost.equals("node1") ? "10.0.1.1" : "10.0.1.2")
        .setDestinationPort(port++).setEpoch(1).build();
  }

  /**
   * The agent on {@code mapHost} reports the flow of map {@code map} ended: started at
   * {@code start} with deadline {@code deadline} (0: none), finished at {@code finish} (0:
   * never), met as the times say.
   */
  void ended(String job, int map, String mapHost, String reduceHost, long start, long deadline,
      long finish, QuenchOutcome quench) {
    boolean met = finish > 0 && (deadline == 0 || finish <= deadline);
    int accepted = agent.reportOutcomes(FlowOutcomes.newBuilder().setAgentHost(mapHost)
        .addOutcomes(FlowOutcome.newBuilder().setJobId(job).setReduceId(0)
            .setSourceHost(mapHost).setDestinationHost(reduceHost).setBytes(10 * MB)
            .setStartUnixNanos(start).setDeadlineUnixNanos(deadline)
            .setFinishUnixNanos(finish).setMet(met).setQuench(quench)
            .setFlow(key(job, map, mapHost, reduceHost)))
        .build()).getAccepted();
    assertThat(accepted).isEqualTo(1);
  }
}
