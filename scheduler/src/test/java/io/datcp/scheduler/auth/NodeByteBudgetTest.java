package io.datcp.scheduler.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.linecorp.armeria.client.grpc.GrpcClients;
import com.linecorp.armeria.common.auth.AuthToken;
import com.linecorp.armeria.server.Server;
import com.linecorp.armeria.server.grpc.GrpcService;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ServerCalls;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.Collections;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the byte budget buys: a refused call's message is never parsed. The report service here
 * counts every message its marshaller parses, behind the scheduler's node authentication and
 * budget on Armeria's gRPC server as the scheduler wires them ({@link NodeByteBudget#guard}).
 */
class NodeByteBudgetTest {
  private static final long SECOND = 1_000_000_000L;

  @TempDir Path dir;
  private final AtomicLong nanos = new AtomicLong(1);
  private final AtomicInteger parsed = new AtomicInteger();
  private final AtomicInteger served = new AtomicInteger();
  private Server server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop().join();
    }
  }

  /** The report method with a marshaller that counts what it parses. */
  private ServerServiceDefinition countingReportService() {
    MethodDescriptor.Marshaller<ShuffleReport> proto =
        ProtoUtils.marshaller(ShuffleReport.getDefaultInstance());
    MethodDescriptor.Marshaller<ShuffleReport> counting = new MethodDescriptor.Marshaller<>() {
      @Override
      public InputStream stream(ShuffleReport value) {
        return proto.stream(value);
      }

      @Override
      public ShuffleReport parse(InputStream stream) {
        parsed.incrementAndGet();
        return proto.parse(stream);
      }
    };
    MethodDescriptor<ShuffleReport, ReportAck> method = ShuffleReportServiceGrpc.getReportMethod()
        .toBuilder(counting, ProtoUtils.marshaller(ReportAck.getDefaultInstance())).build();
    return ServerServiceDefinition.builder(ShuffleReportServiceGrpc.SERVICE_NAME)
        .addMethod(method, ServerCalls.asyncUnaryCall((request, out) -> {
          served.incrementAndGet();
          out.onNext(ReportAck.newBuilder().setAccepted(request.getEventsCount()).build());
          out.onCompleted();
        })).build();
  }

  /** 30 map outputs of 10,000 sizes: about 1 MB. */
  private static ShuffleReport largest() {
    ShuffleReport.Builder b = ShuffleReport.newBuilder();
    for (int m = 0; m < 30; m++) {
      b.addEvents(ShuffleEvent.newBuilder().setMapOutputIndexed(MapOutputIndexed.newBuilder()
          .setJobId("job_666_1").setMapId(m).setHost("evil")
          .addAllPartitionBytes(Collections.nCopies(10_000, 1_000_000L))));
    }
    return b.build();
  }

  @Test
  void aCallRefusedForItsHostsBudgetIsNeverParsed() throws Exception {
    NodeCredentials nodes = NodeCredentials.open(dir);
    String token = nodes.mint("evil");
    // 1 MiB/s, a burst of 1 MiB: one largest message at once
    NodeByteBudget budget = new NodeByteBudget(1L << 20, 1L << 20, nanos::get,
        new SimpleMeterRegistry());
    serve(budget, nodes);
    var evil = stub(token);
    ShuffleReport message = largest();
    assertThat(message.getSerializedSize()).isBetween(900_000, 1 << 20);

    assertThat(evil.report(message).getAccepted()).isEqualTo(30);
    assertThat(evil.report(message).getAccepted()).isEqualTo(30);
    // two messages overdrew the 1 MiB bucket: the next ten are refused unread
    for (int i = 0; i < 10; i++) {
      assertThatThrownBy(() -> evil.report(message))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(e.getStatus().getDescription())
                .contains("reports.maxBytesPerSecondPerHost").contains("'evil'");
          });
    }
    assertThat(parsed).hasValue(2);
    assertThat(served).hasValue(2);

    // a second pays back the debt (less than 1 MiB) and the host is read again
    nanos.addAndGet(SECOND);
    assertThat(evil.report(message).getAccepted()).isEqualTo(30);
    assertThat(parsed).hasValue(3);
  }

  @Test
  void aHostSendingMoreThanAnEighthOfItsBudgetIsHeavyUntilItHasPaidItBackAndALightOneNever() {
    // 8 MiB/s and a burst of 32 MiB: heavy beyond 1 MiB/s once a 4 MiB burst is spent
    NodeByteBudget budget = new NodeByteBudget(8L << 20, 32L << 20, nanos::get,
        new SimpleMeterRegistry());
    for (int second = 0; second < 10; second++) {
      budget.charge("agent", 512L << 10);
      budget.charge("evil", 2L << 20);
      assertThat(budget.heavy("agent")).isFalse();
      // the 4 MiB burst and 1 MiB/s of refill are spent by the third 2 MiB
      assertThat(budget.heavy("evil")).isEqualTo(second >= 2);
      nanos.addAndGet(SECOND);
    }
    // 7 MiB in debt a second after the last: light again once 1 MiB/s has paid it back
    nanos.addAndGet(5 * SECOND);
    assertThat(budget.heavy("evil")).isTrue();
    nanos.addAndGet(2 * SECOND);
    assertThat(budget.heavy("evil")).isFalse();
    assertThat(budget.nanosUntilAdmitted("evil")).isZero();
  }

  @Test
  void aHostWithManyEventsRefusedForLimitsHasItsCallsRefusedUnreadUntilThatHasPaidBack()
      throws Exception {
    NodeCredentials nodes = NodeCredentials.open(dir);
    String evilToken = nodes.mint("evil");
    String agentToken = nodes.mint("agent");
    NodeByteBudget budget = new NodeByteBudget(8L << 20, 32L << 20, nanos::get,
        new SimpleMeterRegistry());
    serve(budget, nodes);
    var evil = stub(evilToken);
    var agent = stub(agentToken);
    ShuffleReport small = ShuffleReport.newBuilder().addEvents(ShuffleEvent.getDefaultInstance())
        .build();

    // 2,000 events refused for limits may be forgiven at once; 3,000 not
    budget.refusedForLimits("evil", 1_500);
    assertThat(evil.report(small).getAccepted()).isEqualTo(1);
    budget.refusedForLimits("evil", 1_500);
    for (int i = 0; i < 3; i++) {
      assertThatThrownBy(() -> evil.report(small))
          .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
            assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
            assertThat(e.getStatus().getDescription()).contains("'evil'")
                .contains("refused for a limit");
          });
    }
    assertThat(parsed).hasValue(1);
    // another host is not touched
    assertThat(agent.report(small).getAccepted()).isEqualTo(1);

    // 1,000 over, paid back at 100 a second: refused for ten seconds, then read again
    nanos.addAndGet(9 * SECOND);
    assertThatThrownBy(() -> evil.report(small)).isInstanceOf(StatusRuntimeException.class);
    nanos.addAndGet(2 * SECOND);
    assertThat(evil.report(small).getAccepted()).isEqualTo(1);
  }

  /** The counting report service behind node authentication and {@code budget}, started. */
  private void serve(NodeByteBudget budget, NodeCredentials nodes) {
    server = Server.builder().http(0).maxRequestLength(4L << 20)
        .service(GrpcService.builder()
            .addService(budget.guard(countingReportService(),
                new NodeAuthInterceptor(nodes, true)))
            .maxRequestMessageLength(2 << 20).build())
        .build();
    server.start().join();
  }

  private ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub stub(String token) {
    return GrpcClients.builder("http://127.0.0.1:" + server.activeLocalPort())
        .auth(AuthToken.ofOAuth2(token))
        .build(ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
  }
}
