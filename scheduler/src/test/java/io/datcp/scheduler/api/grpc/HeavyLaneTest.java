package io.datcp.scheduler.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.linecorp.armeria.client.grpc.GrpcClients;
import com.linecorp.armeria.common.util.EventLoopGroups;
import com.linecorp.armeria.server.Server;
import com.linecorp.armeria.server.grpc.GrpcService;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.scheduler.auth.NodeAuthInterceptor;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the heavy-host lane buys, on a server with one event loop: a call that runs long (the
 * report service blocks on it until the test lets it go) no longer holds up the calls behind it
 * on that loop when it is large or its host is heavy. Handled on the loop, as before, the small
 * report sent after it was never answered meanwhile. The calling host comes from a header here,
 * where the scheduler has it from the node's credential.
 */
class HeavyLaneTest {
  private static final Metadata.Key<String> HOST_HEADER =
      Metadata.Key.of("x-test-host", Metadata.ASCII_STRING_MARSHALLER);

  private final EventLoopGroup oneLoop = EventLoopGroups.newEventLoopGroup(1);
  private final Set<String> heavyHosts = ConcurrentHashMap.newKeySet();
  /** Reports whose first map id is at least this wait for {@link #release}. */
  private final CountDownLatch release = new CountDownLatch(1);
  private final CountDownLatch blocked = new CountDownLatch(1);
  /** The first map id of every report handled, in the order handled. */
  private final List<Integer> handled = new CopyOnWriteArrayList<>();
  private final AtomicReference<String> handledOn = new AtomicReference<>();
  private HeavyLane lane;
  private Server server;

  @AfterEach
  void stop() {
    release.countDown();
    if (server != null) {
      server.stop().join();
    }
    if (lane != null) {
      lane.close();
    }
    oneLoop.shutdownGracefully(0, 0, TimeUnit.SECONDS);
  }

  /** Answers at once, except a report whose first map id is 1000 or more: when released. */
  private final class BlockingReports extends ShuffleReportServiceGrpc.ShuffleReportServiceImplBase {
    @Override
    public void report(ShuffleReport request, StreamObserver<ReportAck> out) {
      int first = request.getEvents(0).getMapOutputIndexed().getMapId();
      handledOn.set(Thread.currentThread().getName());
      if (first >= 1000) {
        blocked.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      handled.add(first);
      out.onNext(ReportAck.newBuilder().setAccepted(request.getEventsCount()).build());
      out.onCompleted();
    }
  }

  /** The calling host from a header, where NodeAuthInterceptor puts it. */
  private static final ServerInterceptor HOST_FROM_HEADER = new ServerInterceptor() {
    @Override
    public <Q, A> io.grpc.ServerCall.Listener<Q> interceptCall(io.grpc.ServerCall<Q, A> call,
        Metadata headers, io.grpc.ServerCallHandler<Q, A> next) {
      return Contexts.interceptCall(
          Context.current().withValue(NodeAuthInterceptor.HOST, headers.get(HOST_HEADER)),
          call, headers, next);
    }
  };

  private ShuffleReportServiceGrpc.ShuffleReportServiceFutureStub start(int perHost, int queued) {
    lane = new HeavyLane(heavyHosts::contains, perHost, queued, System::nanoTime,
        HeavyLane::workerCpuNanos);
    return startOn(lane, new BlockingReports()::report);
  }

  private ShuffleReportServiceGrpc.ShuffleReportServiceFutureStub startOn(HeavyLane lane,
      BiConsumer<ShuffleReport, StreamObserver<ReportAck>> report) {
    var service = new ShuffleReportServiceGrpc.ShuffleReportServiceImplBase() {
      @Override
      public void report(ShuffleReport request, StreamObserver<ReportAck> out) {
        report.accept(request, out);
      }
    };
    server = Server.builder().http(0).workerGroup(oneLoop, false).maxRequestLength(4L << 20)
        .service(GrpcService.builder()
            .addService(ServerInterceptors.intercept(
                lane.offload(service.bindService()), HOST_FROM_HEADER))
            .maxRequestMessageLength(2 << 20).build())
        .build();
    server.start().join();
    return client(null);
  }

  private ShuffleReportServiceGrpc.ShuffleReportServiceFutureStub client(String host) {
    var b = GrpcClients.builder("http://127.0.0.1:" + server.activeLocalPort());
    if (host != null) {
      b.addHeader(HOST_HEADER.name(), host);
    }
    return b.build(ShuffleReportServiceGrpc.ShuffleReportServiceFutureStub.class);
  }

  /** {@code mapOutputs} indexes of {@code sizes} partitions, map ids from {@code firstMap}. */
  private static ShuffleReport report(int firstMap, int mapOutputs, int sizes) {
    ShuffleReport.Builder b = ShuffleReport.newBuilder();
    for (int m = 0; m < mapOutputs; m++) {
      b.addEvents(ShuffleEvent.newBuilder().setMapOutputIndexed(MapOutputIndexed.newBuilder()
          .setJobId("job_1_1").setMapId(firstMap + m).setHost("node1")
          .addAllPartitionBytes(Collections.nCopies(sizes, 1_000_000L))));
    }
    return b.build();
  }

  @Test
  void aSmallCallIsAnsweredWhileALargeOneOnTheSameLoopIsStillBeingHandled() throws Exception {
    var client = start(4, 4);
    ShuffleReport big = report(1000, 30, 10_000);
    assertThat(big.getSerializedSize()).isGreaterThanOrEqualTo(HeavyLane.LARGE_BYTES);
    var bigAnswer = client.report(big);
    assertThat(blocked.await(30, TimeUnit.SECONDS)).isTrue();

    assertThat(client.report(report(1, 1, 10)).get(30, TimeUnit.SECONDS).getAccepted())
        .isEqualTo(1);
    assertThat(bigAnswer.isDone()).isFalse();

    release.countDown();
    assertThat(bigAnswer.get(30, TimeUnit.SECONDS).getAccepted()).isEqualTo(30);
  }

  @Test
  void aHeavyHostsSmallCallRunsOffTheLoopSoALightHostIsAnsweredMeanwhile() throws Exception {
    start(4, 4);
    heavyHosts.add("evil");
    var evil = client("evil").report(report(1000, 1, 10));
    assertThat(blocked.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(handledOn.get()).isEqualTo("scheduler-heavy-lane");

    assertThat(client("node1").report(report(1, 1, 10)).get(30, TimeUnit.SECONDS).getAccepted())
        .isEqualTo(1);
    assertThat(handledOn.get()).isNotEqualTo("scheduler-heavy-lane");
    assertThat(evil.isDone()).isFalse();
    release.countDown();
    assertThat(evil.get(30, TimeUnit.SECONDS).getAccepted()).isEqualTo(1);
  }

  @Test
  void aHeavyHostBeyondItsShareOfTheLaneIsRefusedAndAnotherIsServedInTurn() throws Exception {
    start(2, 8);
    heavyHosts.add("evil");
    heavyHosts.add("big");
    var evil = client("evil");
    var first = evil.report(report(1000, 1, 10));
    assertThat(blocked.await(30, TimeUnit.SECONDS)).isTrue();
    var second = evil.report(report(2, 1, 10));
    var third = evil.report(report(3, 1, 10));
    awaitInLane(2);
    // evil's first is running (its message parsed) and two wait: a fourth is refused
    assertThatThrownBy(() -> evil.report(report(5, 1, 10)).get(30, TimeUnit.SECONDS))
        .hasCauseInstanceOf(StatusRuntimeException.class)
        .cause().satisfies(e -> {
          Status s = ((StatusRuntimeException) e).getStatus();
          assertThat(s.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
          assertThat(s.getDescription()).contains("'evil'").contains("heavy-host lane");
        });
    var big = client("big").report(report(4, 1, 10));
    awaitInLane(3);
    release.countDown();
    for (var answer : List.of(first, second, third, big)) {
      assertThat(answer.get(30, TimeUnit.SECONDS).getAccepted()).isEqualTo(1);
    }
    // in turn: big's one message before evil's second waiting one, not after all of evil's
    assertThat(handled).containsExactly(1000, 2, 4, 3);
    assertThat(lane.messagesInLane()).isZero();
  }

  private void awaitInLane(int messages) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (lane.messagesInLane() != messages && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(lane.messagesInLane()).isEqualTo(messages);
  }

  @Test
  void largeCallsOfALightHostBeyondTheLaneAreHandledOnTheirLoopNotRefused() throws Exception {
    var client = start(0, 0);
    assertThat(client.report(report(1, 30, 10_000)).get(30, TimeUnit.SECONDS).getAccepted())
        .isEqualTo(30);
    assertThat(handledOn.get()).isNotEqualTo("scheduler-heavy-lane");
  }

  /**
   * Host evil sends five reports (map ids 0-4) to {@link #lane}, whose service runs {@code task}
   * with each report's map id and accepts it.
   */
  private List<com.google.common.util.concurrent.ListenableFuture<ReportAck>> fiveReportsFromEvil(
      java.util.function.IntConsumer task) {
    startOn(lane, (request, out) -> {
      task.accept(request.getEvents(0).getMapOutputIndexed().getMapId());
      out.onNext(ReportAck.newBuilder().setAccepted(1).build());
      out.onCompleted();
    });
    var client = client("evil");
    List<com.google.common.util.concurrent.ListenableFuture<ReportAck>> answers = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      answers.add(client.report(report(i, 1, 10)));
    }
    return answers;
  }

  @Test
  void theLaneRestsOnceItHasUsedMoreThanItsShareOfACore() throws Exception {
    AtomicLong clock = new AtomicLong();
    lane = new HeavyLane(h -> true, 100, 100, clock::get, clock::get);
    List<Integer> ran = new CopyOnWriteArrayList<>();
    // each task "runs" 20 ms on the lane's clock: the 50 ms burst pays for three
    var answers = fiveReportsFromEvil(map -> {
      ran.add(map);
      clock.addAndGet(20_000_000L);
    });
    answers.get(2).get(30, TimeUnit.SECONDS);
    // 60 ms used of a 50 ms burst: the lane rests until 10% of the time since pays 10 ms back
    Thread.sleep(300);
    assertThat(ran).containsExactly(0, 1, 2);
    clock.addAndGet(100_000_000L);
    assertThat(answers.get(3).get(30, TimeUnit.SECONDS).getAccepted()).isEqualTo(1);
    Thread.sleep(300);
    assertThat(ran).containsExactly(0, 1, 2, 3);
    clock.addAndGet(200_000_000L);
    assertThat(answers.get(4).get(30, TimeUnit.SECONDS).getAccepted()).isEqualTo(1);
  }

  @Test
  void theLaneChargesATaskTheCpuItUsedNotTheTimeTheMachineRanOtherWork() throws Exception {
    // ByteBudgetTest's calls timed out after 10 s on a machine loaded by other work: the lane
    // charged each task its wall time, so a task preempted for 1 s made the lane rest 10 s
    AtomicLong wall = new AtomicLong();
    AtomicLong cpu = new AtomicLong();
    lane = new HeavyLane(h -> true, 100, 100, wall::get, cpu::get);
    var answers = fiveReportsFromEvil(map -> {
      // 100 ms pass while the task computes for 1 ms: other processes had the core
      wall.addAndGet(100_000_000L);
      cpu.addAndGet(1_000_000L);
    });
    // 5 ms of the 50 ms burst used: no rest, though the clock moved 500 ms
    for (var answer : answers) {
      assertThat(answer.get(30, TimeUnit.SECONDS).getAccepted()).isEqualTo(1);
    }
  }
}
