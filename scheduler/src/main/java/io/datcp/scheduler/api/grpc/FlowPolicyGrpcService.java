package io.datcp.scheduler.api.grpc;

import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.WatchRequest;
import io.datcp.scheduler.InvalidFieldException;
import io.datcp.scheduler.SchedulerService;
import io.datcp.scheduler.flows.FlowOutcome;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;

/** gRPC adapter for the per-host agents: lookups, the update stream, flow outcomes. */
public final class FlowPolicyGrpcService extends FlowPolicyServiceGrpc.FlowPolicyServiceImplBase {
  private final SchedulerService scheduler;

  public FlowPolicyGrpcService(SchedulerService scheduler) {
    this.scheduler = scheduler;
  }

  @Override
  public void lookupPolicy(PolicyLookup request, StreamObserver<FlowPolicy> out) {
    GrpcCalls.unary(out, () -> ProtoMapping.policy(scheduler.lookup(request.getAgentHost(),
        request.getJobId(), request.getReduceId(), request.getBytes())));
  }

  @Override
  public void watchPolicies(WatchRequest request, StreamObserver<PolicyUpdate> out) {
    ServerCallStreamObserver<PolicyUpdate> stream = (ServerCallStreamObserver<PolicyUpdate>) out;
    Runnable stop;
    try {
      stop = scheduler.watch(request.getAgentHost(), u -> {
        PolicyUpdate.Builder b = PolicyUpdate.newBuilder()
            .setTimeUnixNanos(u.timeUnixNanos())
            .setJobFinished(u.jobFinished())
            .setPolicy(ProtoMapping.policy(u.policy()));
        synchronized (stream) {
          if (!stream.isCancelled()) {
            stream.onNext(b.build());
          }
        }
      });
    } catch (InvalidFieldException e) {
      out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    stream.setOnCancelHandler(stop);
  }

  @Override
  public void reportOutcomes(FlowOutcomes request, StreamObserver<ReportAck> out) {
    GrpcCalls.unary(out, () -> {
      List<FlowOutcome> outcomes = new ArrayList<>(request.getOutcomesCount());
      request.getOutcomesList().forEach(o -> outcomes.add(ProtoMapping.outcome(o)));
      int n = scheduler.reportOutcomes(request.getAgentHost(), outcomes);
      return ReportAck.newBuilder().setAccepted(n).build();
    });
  }
}
