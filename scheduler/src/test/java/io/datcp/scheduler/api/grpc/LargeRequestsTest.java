package io.datcp.scheduler.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.linecorp.armeria.client.grpc.GrpcClients;
import com.linecorp.armeria.common.util.EventLoopGroups;
import com.linecorp.armeria.server.Server;
import com.linecorp.armeria.server.grpc.GrpcService;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import java.util.Collections;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A large request no longer holds up the calls behind it on its event loop: the server here has
 * one loop, and the report service blocks on a large report until the test lets it go. Handled
 * on the loop (before {@link LargeRequests}), the small report sent after it on the same
 * connection was never answered meanwhile.
 */
class LargeRequestsTest {
  private final EventLoopGroup oneLoop = EventLoopGroups.newEventLoopGroup(1);
  private final LargeRequests large = new LargeRequests(1, 4);
  private final CountDownLatch largeArrived = new CountDownLatch(1);
  private final CountDownLatch releaseLarge = new CountDownLatch(1);
  private final AtomicReference<String> handledOn = new AtomicReference<>();
  private Server server;

  @AfterEach
  void stop() {
    releaseLarge.countDown();
    if (server != null) {
      server.stop().join();
    }
    large.close();
    oneLoop.shutdownGracefully(0, 0, TimeUnit.SECONDS);
  }

  /** Answers a small report at once; a large one when the test releases it. */
  private final class BlockingReports extends ShuffleReportServiceGrpc.ShuffleReportServiceImplBase {
    @Override
    public void report(ShuffleReport request, StreamObserver<ReportAck> out) {
      if (request.getSerializedSize() >= LargeRequests.LARGE_BYTES) {
        largeArrived.countDown();
        try {
          releaseLarge.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      out.onNext(ReportAck.newBuilder().setAccepted(request.getEventsCount()).build());
      out.onCompleted();
    }
  }

  private static ShuffleReport report(int mapOutputs, int sizes) {
    ShuffleReport.Builder b = ShuffleReport.newBuilder();
    for (int m = 0; m < mapOutputs; m++) {
      b.addEvents(ShuffleEvent.newBuilder().setMapOutputIndexed(MapOutputIndexed.newBuilder()
          .setJobId("job_1_1").setMapId(m).setHost("node1")
          .addAllPartitionBytes(Collections.nCopies(sizes, 1_000_000L))));
    }
    return b.build();
  }

  @Test
  void aSmallCallIsAnsweredWhileALargeOneOnTheSameLoopIsStillBeingHandled() throws Exception {
    server = Server.builder().http(0).workerGroup(oneLoop, false).maxRequestLength(4L << 20)
        .service(GrpcService.builder()
            .addService(large.offload(new BlockingReports().bindService()))
            .maxRequestMessageLength(2 << 20).build())
        .build();
    server.start().join();
    var client = GrpcClients.builder("http://127.0.0.1:" + server.activeLocalPort())
        .build(ShuffleReportServiceGrpc.ShuffleReportServiceFutureStub.class);

    ShuffleReport big = report(30, 10_000);
    assertThat(big.getSerializedSize()).isGreaterThanOrEqualTo(LargeRequests.LARGE_BYTES);
    var bigAnswer = client.report(big);
    assertThat(largeArrived.await(30, TimeUnit.SECONDS)).isTrue();

    var smallAnswer = client.report(report(1, 10));
    assertThat(smallAnswer.get(30, TimeUnit.SECONDS).getAccepted()).isEqualTo(1);
    assertThat(bigAnswer.isDone()).isFalse();

    releaseLarge.countDown();
    assertThat(bigAnswer.get(30, TimeUnit.SECONDS).getAccepted()).isEqualTo(30);
  }

  @Test
  void largeCallsBeyondTheQueueAreHandledOnTheirLoopNotRefused() throws Exception {
    LargeRequests none = new LargeRequests(1, 0);
    try {
      server = Server.builder().http(0).maxRequestLength(4L << 20)
          .service(GrpcService.builder()
              .addService(none.offload(new ShuffleReportServiceGrpc.ShuffleReportServiceImplBase() {
                @Override
                public void report(ShuffleReport request, StreamObserver<ReportAck> out) {
                  handledOn.set(Thread.currentThread().getName());
                  out.onNext(ReportAck.newBuilder().setAccepted(request.getEventsCount()).build());
                  out.onCompleted();
                }
              }.bindService()))
              .maxRequestMessageLength(2 << 20).build())
          .build();
      server.start().join();
      var client = GrpcClients.builder("http://127.0.0.1:" + server.activeLocalPort())
          .build(ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
      assertThat(client.report(report(30, 10_000)).getAccepted()).isEqualTo(30);
      assertThat(handledOn.get()).doesNotStartWith("scheduler-large-requests");
    } finally {
      none.close();
    }
  }
}
