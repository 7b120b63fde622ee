package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.Collections;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reports large enough to be parsed and applied off the event loops (64 KiB and more) are judged
 * exactly as small ones: as the reports of the host whose node credential sent them, which the
 * worker thread must still know.
 */
class HeavyLaneReportsTest {
  @TempDir Path dir;
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();

  /** A reduce of a 10,000-reduce job on {@code host} and ten of its maps' indexes: 300 KB. */
  private static ShuffleReport.Builder large(String job, String host) {
    long now = System.currentTimeMillis() * 1_000_000L;
    ShuffleReport.Builder b = ShuffleReport.newBuilder().addEvents(ShuffleEvent.newBuilder()
        .setTimeUnixNanos(now).setReduceStarted(ReduceStarted.newBuilder().setJobId(job).setReduceId(0).setHost(host)
            .setTotalMaps(100).setTotalReduces(10_000)));
    for (int m = 0; m < 10; m++) {
      b.addEvents(ShuffleEvent.newBuilder().setTimeUnixNanos(now).setMapOutputIndexed(MapOutputIndexed.newBuilder()
          .setJobId(job).setMapId(m).setHost(host)
          .addAllPartitionBytes(Collections.nCopies(10_000, 1_000_000L))));
    }
    assertThat(b.build().getSerializedSize()).isGreaterThan(200_000);
    return b;
  }

  @Test
  void aLargeReportIsAppliedAsItsNodesOwnAndOneNamingAnotherHostIsRefused() throws Exception {
    SchedulerServer server = servers.start(dir);
    var node1 = servers.asNode(server, "node1",
        ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);

    ReportAck ack = node1.report(large("job_1_1", "node1").build());
    assertThat(ack.getRefusedList()).isEmpty();
    assertThat(ack.getAccepted()).isEqualTo(11);
    assertThat(server.service().job("job_1_1")).isPresent();

    assertThatThrownBy(() -> node1.report(large("job_1_2", "node2").setReporterHost("node2")
        .build())).isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
          assertThat(e.getStatus().getDescription()).contains("reporterHost").contains("node1");
        });
    assertThat(server.service().job("job_1_2")).isEmpty();
  }
}
