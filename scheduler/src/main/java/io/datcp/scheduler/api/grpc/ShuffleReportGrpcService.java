package io.datcp.scheduler.api.grpc;

import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.scheduler.ingest.Reports;
import io.datcp.scheduler.jobs.JobEvent;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;

/**
 * gRPC adapter for the plugins' and map-side reports (node credentials checked first). A report
 * whose claims the ResourceManager must confirm first is answered when it did, off the event
 * loop's stack.
 */
public final class ShuffleReportGrpcService
    extends ShuffleReportServiceGrpc.ShuffleReportServiceImplBase {
  private final Reports reports;

  public ShuffleReportGrpcService(Reports reports) {
    this.reports = reports;
  }

  @Override
  public void report(ShuffleReport request, StreamObserver<ReportAck> out) {
    GrpcCalls.unaryAsync(out, () -> {
      List<JobEvent> events = new ArrayList<>(request.getEventsCount());
      for (int i = 0; i < request.getEventsCount(); i++) {
        events.add(ProtoMapping.event(request.getEvents(i), i));
      }
      return reports.report(GrpcCalls.caller(request.getReporterHost(), "reporterHost"),
          request.getReporterId(), request.getBatchId(), events).thenApply(ProtoMapping::ack);
    });
  }
}
