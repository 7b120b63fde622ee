package io.datcp.agent.local;

import io.datcp.agent.flows.FlowRegistry;
import io.datcp.agent.flows.Owner;
import io.datcp.agent.flows.Rejected;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEnded;
import io.datcp.proto.v1.FlowOrder;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.FlowRegistrationAnswer;
import io.datcp.proto.v1.FlowRegistrationAnswers;
import io.datcp.proto.v1.FlowRegistrationBatch;
import io.datcp.proto.v1.FlowRegistrationItem;
import io.datcp.proto.v1.LocalAgentServiceGrpc;
import io.datcp.proto.v1.OrdersRequest;
import io.datcp.proto.v1.RegistrationError;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleReport;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/** LocalAgentService: a thin adapter over {@link FlowRegistry} and the order hub. */
final class LocalAgentGrpcService extends LocalAgentServiceGrpc.LocalAgentServiceImplBase {
  /**
   * Messages of one RegisterFlows or RegisterFlowBatches stream read ahead of the answers the
   * caller has taken: enough to keep the event loop busy, few enough that a caller who stops
   * reading holds little (at most this many batches of MAX_BATCH_ITEMS).
   */
  static final int STREAM_READ_AHEAD = 64;
  /** Reads are requested again in groups of this many handled messages (a call each costs). */
  static final int STREAM_REQUEST_BATCH = 16;
  /** Most items in one FlowRegistrationBatch (the proto's documented bound). */
  static final int MAX_BATCH_ITEMS = 256;

  private final FlowRegistry registry;
  private final OrderHub orders;
  private final ReportIntake reports;
  private final AtomicInteger openStreams = new AtomicInteger();

  LocalAgentGrpcService(FlowRegistry registry, OrderHub orders, ReportIntake reports,
      MeterRegistry meters) {
    this.registry = registry;
    this.orders = orders;
    this.reports = reports;
    Gauge.builder("datcp.agent.registration.streams", openStreams, AtomicInteger::get)
        .description("RegisterFlows and RegisterFlowBatches streams open").register(meters);
  }

  @Override
  public void registerFlow(FlowRegistration req, StreamObserver<FlowRegistered> out) {
    FlowRegistered answer;
    try {
      answer = registry.register(req, PeerCheck.CALLER.get());
    } catch (Rejected e) {
      out.onError(status(e).withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    out.onNext(answer);
    out.onCompleted();
  }

  @Override
  public StreamObserver<FlowRegistrationItem> registerFlows(
      StreamObserver<FlowRegistrationAnswer> out) {
    Owner caller = PeerCheck.CALLER.get();
    return new RegistrationStream<>((ServerCallStreamObserver<FlowRegistrationAnswer>) out,
        item -> answer(item, caller));
  }

  @Override
  public StreamObserver<FlowRegistrationBatch> registerFlowBatches(
      StreamObserver<FlowRegistrationAnswers> out) {
    Owner caller = PeerCheck.CALLER.get();
    return new RegistrationStream<>((ServerCallStreamObserver<FlowRegistrationAnswers>) out,
        batch -> answer(batch, caller));
  }

  /** One item, as RegisterFlow handles it; a refusal becomes the answer's error. */
  private FlowRegistrationAnswer answer(FlowRegistrationItem item, Owner caller) {
    FlowRegistrationAnswer.Builder answer = FlowRegistrationAnswer.newBuilder()
        .setSequence(item.getSequence());
    if (!item.hasRegistration()) {
      return answer.setError(error(Status.Code.INVALID_ARGUMENT, "registration: missing"))
          .build();
    }
    try {
      answer.setRegistered(registry.register(item.getRegistration(), caller));
    } catch (Rejected e) {
      answer.setError(error(status(e).getCode(), e.getMessage()));
    }
    return answer.build();
  }

  /** Every item in order; a batch out of bounds is refused whole, before any item is handled. */
  private FlowRegistrationAnswers answer(FlowRegistrationBatch batch, Owner caller) {
    FlowRegistrationAnswers.Builder answers = FlowRegistrationAnswers.newBuilder();
    int n = batch.getItemsCount();
    if (n == 0 || n > MAX_BATCH_ITEMS) {
      RegistrationError refused = error(Status.Code.INVALID_ARGUMENT, "items: " + n
          + " items in one batch, allowed 1.." + MAX_BATCH_ITEMS);
      for (FlowRegistrationItem item : batch.getItemsList()) {
        answers.addAnswers(FlowRegistrationAnswer.newBuilder().setSequence(item.getSequence())
            .setError(refused));
      }
      return answers.build();
    }
    for (int i = 0; i < n; i++) {
      answers.addAnswers(answer(batch.getItems(i), caller));
    }
    return answers.build();
  }

  private static RegistrationError error(Status.Code code, String message) {
    return RegistrationError.newBuilder().setCode(code.value()).setMessage(message).build();
  }

  /**
   * One RegisterFlows or RegisterFlowBatches stream: one answer message per message read. Every
   * callback runs on the socket's event loop (direct executor, serialised per call), so its
   * state needs no lock. Reads are requested by hand: a message is read only while the caller
   * takes answers, so a caller who stops reading stalls its own stream (HTTP/2 flow control)
   * instead of filling the agent's memory.
   */
  private final class RegistrationStream<I, A> implements StreamObserver<I> {
    private final ServerCallStreamObserver<A> out;
    private final Function<I, A> handler;
    /** Messages handled and not requested again yet (all of them while answers cannot go). */
    private int owed;
    private boolean closed;

    RegistrationStream(ServerCallStreamObserver<A> out, Function<I, A> handler) {
      this.out = out;
      this.handler = handler;
      openStreams.incrementAndGet();
      out.disableAutoRequest();
      out.setOnReadyHandler(this::ready);
      out.setOnCancelHandler(this::close); // also: answers after a cancel are dropped quietly
      out.request(STREAM_READ_AHEAD);
    }

    private void ready() {
      if (owed > 0 && !closed) {
        int n = owed;
        owed = 0;
        out.request(n);
      }
    }

    @Override
    public void onNext(I message) {
      out.onNext(handler.apply(message));
      if (++owed >= STREAM_REQUEST_BATCH && out.isReady()) {
        int n = owed;
        owed = 0;
        out.request(n);
      }
    }

    @Override
    public void onError(Throwable t) {
      close(); // cancelled by the caller or the connection broke: accepted items stay
    }

    @Override
    public void onCompleted() {
      if (close()) {
        out.onCompleted();
      }
    }

    private synchronized boolean close() {
      if (closed) {
        return false;
      }
      closed = true;
      openStreams.decrementAndGet();
      return true;
    }
  }

  @Override
  public void endFlow(FlowEnd req, StreamObserver<FlowEnded> out) {
    boolean known;
    try {
      known = registry.end(req.getFlowId(), req.getReason(), PeerCheck.CALLER.get());
    } catch (Rejected e) {
      out.onError(status(e).withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    out.onNext(FlowEnded.newBuilder().setKnown(known).build());
    out.onCompleted();
  }

  @Override
  public void orders(OrdersRequest req, StreamObserver<FlowOrder> out) {
    if (req.getSubscriberId().isEmpty() || req.getSubscriberId().length() > 256) {
      out.onError(Status.INVALID_ARGUMENT
          .withDescription("subscriber_id: must be 1 to 256 characters").asRuntimeException());
      return;
    }
    orders.subscribe(PeerCheck.CALLER.get(), req.getSubscriberId(),
        (ServerCallStreamObserver<FlowOrder>) out);
  }

  @Override
  public void forward(ShuffleReport req, StreamObserver<ReportAck> out) {
    ReportAck ack;
    try {
      ack = reports.accept(req, ReportIntake.Via.GRPC);
    } catch (ReportIntake.Refused e) {
      out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    out.onNext(ack);
    out.onCompleted();
  }

  private static Status status(Rejected e) {
    switch (e.reason()) {
      case ALREADY_EXISTS:
        return Status.ALREADY_EXISTS;
      case RESOURCE_EXHAUSTED:
        return Status.RESOURCE_EXHAUSTED;
      case PERMISSION_DENIED:
        return Status.PERMISSION_DENIED;
      default:
        return Status.INVALID_ARGUMENT;
    }
  }
}
