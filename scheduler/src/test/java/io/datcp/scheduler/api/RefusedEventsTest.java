package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.JobFinished;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.scheduler.MutableClock;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobView;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Events a host may not send, or that are invalid, are refused one by one: the batch's other
 * events are applied and the answer names the refused ones, so a reporter (an agent merging
 * several tasks' events) loses nothing legitimate and is not blocked by a batch it can never get
 * accepted. And a job that ended is not brought back by a late report, which is how the trace
 * replay's hosts came to be refused reports of their own reduces.
 */
class RefusedEventsTest {
  private static final String JOB = "job_1795644578425_0016";
  private static final long MB = 1_000_000L;

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private SchedulerServer server;

  private void start() throws Exception {
    server = servers.start(dir, clock, SchedulerConf.fromMap(Map.of("tls.plaintext", "true")));
  }

  private ReportAck report(String host, long batchId, ShuffleEvent... events) {
    return servers.asNode(server, host, ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub
        .class).report(ShuffleReport.newBuilder().setReporterId("agent-" + host)
        .setBatchId(batchId).addAllEvents(List.of(events)).build());
  }

  private ShuffleEvent.Builder at() {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(clock.nanos());
  }

  private ShuffleEvent started(int reduce, String host) {
    return at().setReduceStarted(ReduceStarted.newBuilder().setJobId(JOB).setReduceId(reduce)
        .setHost(host).setTotalMaps(1).setTotalReduces(3)).build();
  }

  private ShuffleEvent mapDone(int reduce, int map) {
    return at().setMapCompleted(MapCompleted.newBuilder().setJobId(JOB).setReduceId(reduce)
        .setMapId(map).setHost("m0").setOutputBytes(MB).setMapsRunning(-1)).build();
  }

  private ShuffleEvent fetched(int reduce) {
    return at().setFetchFinished(FetchFinished.newBuilder().setJobId(JOB).setReduceId(reduce)
        .setSourceHost("m0").addMapIds(0).setBytes(MB).setDurationNanos(1)).build();
  }

  private ShuffleEvent shuffleDone(int reduce) {
    return at().setShuffleFinished(ShuffleFinished.newBuilder().setJobId(JOB)
        .setReduceId(reduce)).build();
  }

  private ShuffleEvent jobDone() {
    return at().setJobFinished(JobFinished.newBuilder().setJobId(JOB).setSucceeded(true))
        .build();
  }

  private JobView job() {
    return server.service().job(JOB).orElseThrow();
  }

  @Test
  void aLateReduceStartedDoesNotBringAnEndedJobBackToRefuseItsOtherReducesReports()
      throws Exception {
    // the trace replay's order (D2a: job_..._0016, reduce 3's host h7 late, reduce 1's and
    // reduce 2's hosts refused ever after): each host's agent sends its own batches, so
    // the JobFinished the first reduce's host sends once every reduce is done can overtake
    // reports other hosts queued earlier
    start();
    report("node0", 1, started(0, "node0"));
    report("node1", 1, started(1, "node1"));
    report("node0", 2, mapDone(0, 0), shuffleDone(0), jobDone());
    assertThat(job().state()).isEqualTo("succeeded");

    ReportAck late = report("node2", 1, started(2, "node2"), mapDone(2, 0), shuffleDone(2));
    ReportAck trailing = report("node1", 2, mapDone(1, 0), fetched(1), shuffleDone(1));

    assertThat(late.getRefusedList()).isEmpty();
    assertThat(trailing.getRefusedList()).isEmpty();
    assertThat(job().state()).isEqualTo("succeeded");
    assertThat(job().reduces()).extracting(JobView.ReduceView::id).containsExactly(0, 1);
  }

  @Test
  void eventsAHostMayNotSendAreRefusedOneByOneAndTheOthersApplied() throws Exception {
    start();
    report("node1", 1, started(1, "node1"));

    ReportAck ack = report("node2", 1, started(2, "node2"), mapDone(1, 0), fetched(1),
        started(0, "node1"), mapDone(0, 0), mapDone(2, 0), jobDone());

    assertThat(ack.getAccepted()).isEqualTo(3);
    assertThat(ack.getDuplicate()).isFalse();
    assertThat(ack.getRefusedList()).extracting(r -> r.getIndex()).containsExactly(1, 2, 3, 4);
    assertThat(ack.getRefusedList()).allSatisfy(r -> assertThat(r.getCode())
        .isEqualTo(Status.Code.PERMISSION_DENIED.value()));
    assertThat(ack.getRefused(0).getMessage())
        .isEqualTo("the reporting host may not report reduce 1 of " + JOB
            + ", which does not run on it");
    assertThat(ack.getRefused(2).getMessage()).contains("ReduceStarted.host node1");
    // a refused ReduceStarted starts nothing, so its reduce's later events are refused too
    assertThat(ack.getRefused(3).getMessage()).contains("reduce 0 of " + JOB);
    // node2 runs reduce 2 now, so it may end the job
    assertThat(job().state()).isEqualTo("succeeded");
    assertThat(job().reduces()).extracting(JobView.ReduceView::id, JobView.ReduceView::host,
        JobView.ReduceView::fetchedBytes)
        .containsExactly(tuple(1, "node1", 0L), tuple(2, "node2", 0L));
  }

  @Test
  void aJobEndFromAHostRunningNoneOfItsReducesIsRefused() throws Exception {
    start();
    report("node1", 1, started(1, "node1"));

    ReportAck ack = report("node2", 1, jobDone());

    assertThat(ack.getAccepted()).isZero();
    assertThat(ack.getRefusedList()).singleElement().satisfies(r -> {
      assertThat(r.getIndex()).isZero();
      assertThat(r.getCode()).isEqualTo(Status.Code.PERMISSION_DENIED.value());
      assertThat(r.getMessage()).contains("the end of job " + JOB);
    });
    assertThat(job().state()).isEqualTo("running");
  }

  @Test
  void anInvalidEventIsRefusedNamingItsFieldAndTheOthersApplied() throws Exception {
    start();
    ShuffleEvent bad = at().setMapCompleted(MapCompleted.newBuilder().setJobId(JOB)
        .setReduceId(1).setMapId(-1).setHost("m0").setOutputBytes(MB)).build();

    ReportAck ack = report("node1", 1, started(1, "node1"), bad, mapDone(1, 0));

    assertThat(ack.getAccepted()).isEqualTo(2);
    assertThat(ack.getRefusedList()).singleElement().satisfies(r -> {
      assertThat(r.getIndex()).isEqualTo(1);
      assertThat(r.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
      assertThat(r.getMessage()).startsWith("events[1].mapId: must be >= 0");
    });
    assertThat(job().mapsDone()).isEqualTo(1);
  }

  /**
   * A hostile report of more running maps' starts than running maps (or than the proto's bound,
   * however many it says run) is refused alone; a report of one start per running map is
   * applied.
   */
  @Test
  void moreRunningMapStartsThanRunningMapsOrThanTheBoundAreRefused() throws Exception {
    start();
    long t = clock.nanos();
    ShuffleEvent tooMany = at().setMapCompleted(MapCompleted.newBuilder().setJobId(JOB)
        .setReduceId(1).setMapId(0).setHost("m0").setOutputBytes(MB).setMapsRunning(2)
        .addAllRunningMapStartsUnixNanos(List.of(t - 3, t - 2, t - 1))).build();
    MapCompleted.Builder pastBound = MapCompleted.newBuilder().setJobId(JOB).setReduceId(1)
        .setMapId(0).setHost("m0").setOutputBytes(MB).setMapsRunning(5_000);
    for (int i = 0; i < JobEvent.MapCompleted.MAX_RUNNING_MAP_STARTS + 1; i++) {
      pastBound.addRunningMapStartsUnixNanos(t - i);
    }
    ShuffleEvent unknownCount = at().setMapCompleted(MapCompleted.newBuilder().setJobId(JOB)
        .setReduceId(1).setMapId(0).setHost("m0").setOutputBytes(MB).setMapsRunning(-1)
        .addRunningMapStartsUnixNanos(t)).build();
    ShuffleEvent fits = at().setMapCompleted(MapCompleted.newBuilder().setJobId(JOB)
        .setReduceId(1).setMapId(0).setHost("m0").setOutputBytes(MB).setMapsRunning(2)
        .addAllRunningMapStartsUnixNanos(List.of(t - 2, t - 1))).build();

    ReportAck ack = report("node1", 1, started(1, "node1"), tooMany,
        at().setMapCompleted(pastBound).build(), unknownCount, fits);

    assertThat(ack.getAccepted()).isEqualTo(2);
    assertThat(ack.getRefusedList()).extracting(r -> r.getIndex(), r -> r.getCode(),
        r -> r.getMessage()).containsExactly(
            tuple(1, Status.Code.INVALID_ARGUMENT.value(), "events[1].runningMapStartsUnixNanos:"
                + " must hold at most mapsRunning starts, and at most 1000"),
            tuple(2, Status.Code.INVALID_ARGUMENT.value(), "events[2].runningMapStartsUnixNanos:"
                + " must hold at most mapsRunning starts, and at most 1000"),
            tuple(3, Status.Code.INVALID_ARGUMENT.value(), "events[3].runningMapStartsUnixNanos:"
                + " must hold at most mapsRunning starts, and at most 1000"));
    assertThat(job().mapsDone()).isEqualTo(1);
  }

  @Test
  void aBatchWithRefusedEventsIsAppliedOnceAndItsRetryIsADuplicate() throws Exception {
    start();
    report("node1", 1, started(1, "node1"));

    ReportAck first = report("node2", 1, started(2, "node2"), mapDone(1, 0));
    ReportAck retry = report("node2", 1, started(2, "node2"), mapDone(1, 0));

    assertThat(first.getAccepted()).isEqualTo(1);
    assertThat(first.getRefusedCount()).isEqualTo(1);
    assertThat(retry.getDuplicate()).isTrue();
    assertThat(retry.getAccepted()).isZero();
  }
}
