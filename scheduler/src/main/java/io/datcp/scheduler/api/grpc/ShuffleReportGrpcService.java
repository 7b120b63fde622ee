package io.datcp.scheduler.api.grpc;

import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.scheduler.ingest.Ack;
import io.datcp.scheduler.ingest.Reports;
import io.datcp.scheduler.jobs.JobEvent;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;

/** gRPC adapter for the plugins' and map-side reports (node credentials checked first). */
public final class ShuffleReportGrpcService
    extends ShuffleReportServiceGrpc.ShuffleReportServiceImplBase {
  private final Reports reports;

  public ShuffleReportGrpcService(Reports reports) {
    this.reports = reports;
  }

  @Override
  public void report(ShuffleReport request, StreamObserver<ReportAck> out) {
    GrpcCalls.unary(out, () -> {
      List<JobEvent> events = new ArrayList<>(request.getEventsCount());
      for (int i = 0; i < request.getEventsCount(); i++) {
        events.add(ProtoMapping.event(request.getEvents(i), i));
      }
      Ack ack = reports.report(
          GrpcCalls.caller(request.getReporterHost(), "reporterHost"),
          request.getReporterId(), request.getBatchId(), events);
      return ProtoMapping.ack(ack);
    });
  }
}
