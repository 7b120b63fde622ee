package io.datcp.agent.local;

import io.datcp.agent.flows.FlowRegistry;
import io.datcp.agent.flows.Rejected;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEnded;
import io.datcp.proto.v1.FlowOrder;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.LocalAgentServiceGrpc;
import io.datcp.proto.v1.OrdersRequest;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.function.Function;

/** LocalAgentService: a thin adapter over {@link FlowRegistry} and the order hub. */
final class LocalAgentGrpcService extends LocalAgentServiceGrpc.LocalAgentServiceImplBase {
  /** Most events in one Forward call (the scheduler's batch bound). */
  static final int MAX_FORWARD_EVENTS = 1000;

  private final FlowRegistry registry;
  private final OrderHub orders;
  private final Function<List<ShuffleEvent>, Integer> forward;

  /**
   * @param forward queues events for the scheduler, returns how many were queued
   */
  LocalAgentGrpcService(FlowRegistry registry, OrderHub orders,
      Function<List<ShuffleEvent>, Integer> forward) {
    this.registry = registry;
    this.orders = orders;
    this.forward = forward;
  }

  @Override
  public void registerFlow(FlowRegistration req, StreamObserver<FlowRegistered> out) {
    FlowRegistered answer;
    try {
      answer = registry.register(req);
    } catch (Rejected e) {
      out.onError(status(e).withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    out.onNext(answer);
    out.onCompleted();
  }

  @Override
  public void endFlow(FlowEnd req, StreamObserver<FlowEnded> out) {
    out.onNext(FlowEnded.newBuilder().setKnown(registry.end(req.getFlowId(), req.getReason()))
        .build());
    out.onCompleted();
  }

  @Override
  public void orders(OrdersRequest req, StreamObserver<FlowOrder> out) {
    if (req.getSubscriberId().isEmpty() || req.getSubscriberId().length() > 256) {
      out.onError(Status.INVALID_ARGUMENT
          .withDescription("subscriber_id: must be 1 to 256 characters").asRuntimeException());
      return;
    }
    orders.subscribe(req.getSubscriberId(), (ServerCallStreamObserver<FlowOrder>) out);
  }

  @Override
  public void forward(ShuffleReport req, StreamObserver<ReportAck> out) {
    if (req.getEventsCount() > MAX_FORWARD_EVENTS) {
      out.onError(Status.INVALID_ARGUMENT.withDescription("events: " + req.getEventsCount()
          + " events, at most " + MAX_FORWARD_EVENTS + " per call").asRuntimeException());
      return;
    }
    for (int i = 0; i < req.getEventsCount(); i++) {
      if (req.getEvents(i).getEventCase() == ShuffleEvent.EventCase.EVENT_NOT_SET) {
        out.onError(Status.INVALID_ARGUMENT.withDescription("events[" + i + "]: no event set")
            .asRuntimeException());
        return;
      }
    }
    int queued = forward.apply(req.getEventsList());
    out.onNext(ReportAck.newBuilder().setAccepted(queued).build());
    out.onCompleted();
  }

  private static Status status(Rejected e) {
    switch (e.reason()) {
      case ALREADY_EXISTS:
        return Status.ALREADY_EXISTS;
      case RESOURCE_EXHAUSTED:
        return Status.RESOURCE_EXHAUSTED;
      default:
        return Status.INVALID_ARGUMENT;
    }
  }
}
