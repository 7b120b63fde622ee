package io.datcp.shuffle.agent;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.common.util.concurrent.SettableFuture;
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
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleReport;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * gRPC client of the host's agent (LocalAgentService) over its Unix domain socket. Every call is
 * bounded by the rpc timeout and fails fast while the agent is absent; callers treat a failure as
 * "plain Hadoop shuffle" and this class logs one line per outage.
 *
 * <p>Registrations go over one long-lived RegisterFlowBatches stream (a unary call per flow costs
 * the agent an HTTP/2 stream each): a registration is queued and the client's event loop sends
 * everything queued by the time it runs as one batch, so a burst of fetches costs one message
 * each way while a lone registration waits for no timer. While that stream is broken, for
 * {@link #STREAM_RETRY_MS} after each break, registrations use RegisterFlow; an agent without
 * RegisterFlowBatches gets RegisterFlow for good.
 */
public final class AgentClient implements ReportTransport {
  private static final Logger LOG = LoggerFactory.getLogger(AgentClient.class);
  private static final long MAX_RESUBSCRIBE_DELAY_MS = 10_000;
  /** After a registration stream breaks, registrations use RegisterFlow this long. */
  static final long STREAM_RETRY_MS = 1_000;
  /** Most items per batch: the agent refuses batches of more than 256. */
  static final int MAX_BATCH_ITEMS = 256;

  private final AgentConfig config;
  private final EventLoopGroup eventLoop;
  private final ManagedChannel channel;
  private final ScheduledExecutorService timer;
  private final OutageLog outage;
  private volatile boolean closed;
  /** Guards the registration stream's state and queue, and serialises its sends. */
  private final Object streamLock = new Object();
  private RegistrationStream stream;
  private long nextSequence;
  private long streamRetryAtNanos;
  private boolean streamUnsupported;

  public AgentClient(AgentConfig config, String who) {
    this.config = config;
    this.outage = new OutageLog(who + " -> " + config.socketPath());
    this.eventLoop = new EpollEventLoopGroup(1, new DefaultThreadFactory("datcp-agent-client", true));
    this.channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(config.socketPath()))
        .eventLoopGroup(eventLoop)
        .channelType(EpollDomainSocketChannel.class)
        // gRPC sets SO_KEEPALIVE on every transport; a domain socket has no such option and
        // Netty would log a warning per reconnect attempt (null removes the option).
        .withOption(ChannelOption.SO_KEEPALIVE, null)
        .usePlaintext()
        .build();
    channel.getState(true); // connect now, so the first call does not pay for it
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "datcp-agent-orders");
      t.setDaemon(true);
      return t;
    });
    long sweepMs = Math.max(10, Math.min(1_000, config.rpcTimeout().toMillis() / 2));
    timer.scheduleWithFixedDelay(this::expireRegistrations, sweepMs, sweepMs,
        TimeUnit.MILLISECONDS);
  }

  public AgentConfig config() {
    return config;
  }

  /** True while the last call to the agent failed (an outage is going on). */
  public boolean isDown() {
    return outage.isDown();
  }

  /**
   * Registers a flow; the future fails (never hangs: at most the rpc timeout) when the agent is
   * absent, slow or refuses it (the status RegisterFlow would end with).
   */
  public ListenableFuture<FlowRegistered> registerFlow(FlowRegistration registration) {
    ListenableFuture<FlowRegistered> streamed = registerOnStream(registration);
    return streamed != null ? streamed : registerUnary(registration);
  }

  private ListenableFuture<FlowRegistered> registerUnary(FlowRegistration registration) {
    ListenableFuture<FlowRegistered> reply = LocalAgentServiceGrpc.newFutureStub(channel)
        .withDeadlineAfter(config.rpcTimeout().toMillis(), TimeUnit.MILLISECONDS)
        .registerFlow(registration);
    watch(reply);
    return reply;
  }

  /** Sends the registration on the stream (opened if needed); null = use RegisterFlow. */
  private ListenableFuture<FlowRegistered> registerOnStream(FlowRegistration registration) {
    synchronized (streamLock) {
      if (closed || streamUnsupported
          || stream == null && System.nanoTime() - streamRetryAtNanos < 0) {
        return null;
      }
      if (stream == null) {
        stream = new RegistrationStream();
        if (stream.done) { // failed at once (no agent): its onError has set the retry pause
          stream = null;
          return null;
        }
      }
      long sequence = ++nextSequence;
      Pending p = new Pending(registration, SettableFuture.create(), System.nanoTime());
      stream.pending.put(sequence, p);
      stream.queued.add(FlowRegistrationItem.newBuilder().setSequence(sequence)
          .setRegistration(registration).build());
      if (!stream.flushScheduled) {
        stream.flushScheduled = true;
        // close() shuts the loop down only after it has set closed under this lock
        eventLoop.execute(stream::flush);
      }
      return p.future;
    }
  }

  /** A registration sent on the stream and not answered yet. */
  private record Pending(FlowRegistration registration, SettableFuture<FlowRegistered> future,
      long sentNanos) { }

  /**
   * One RegisterFlowBatches call. Answers are handled on the transport thread (they only
   * complete futures), without a hop through gRPC's executor.
   */
  private final class RegistrationStream
      implements ClientResponseObserver<FlowRegistrationBatch, FlowRegistrationAnswers> {
    final Map<Long, Pending> pending = new ConcurrentHashMap<>();
    /** Items not sent yet, and whether a flush is on the event loop's queue (streamLock). */
    final List<FlowRegistrationItem> queued = new ArrayList<>();
    boolean flushScheduled;
    ClientCallStreamObserver<FlowRegistrationBatch> requests;
    /** Closed: set before the stream is dropped, even when that happens inside its start. */
    volatile boolean done;

    RegistrationStream() {
      LocalAgentServiceGrpc.newStub(channel).withExecutor(MoreExecutors.directExecutor())
          .registerFlowBatches(this); // sets requests in beforeStart
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<FlowRegistrationBatch> requestStream) {
      requests = requestStream;
    }

    /** On the event loop: sends what queued up, in batches of at most MAX_BATCH_ITEMS. */
    void flush() {
      synchronized (streamLock) {
        flushScheduled = false;
        if (done) { // onError has failed or re-sent every pending item
          queued.clear();
          return;
        }
        for (int from = 0; from < queued.size(); from += MAX_BATCH_ITEMS) {
          requests.onNext(FlowRegistrationBatch.newBuilder()
              .addAllItems(queued.subList(from, Math.min(queued.size(), from + MAX_BATCH_ITEMS)))
              .build());
        }
        queued.clear();
      }
    }

    @Override
    public void onNext(FlowRegistrationAnswers answers) {
      outage.succeeded();
      for (FlowRegistrationAnswer answer : answers.getAnswersList()) {
        Pending p = pending.remove(answer.getSequence());
        if (p == null) {
          continue; // expired meanwhile
        }
        if (answer.hasRegistered()) {
          p.future.set(answer.getRegistered());
        } else {
          p.future.setException(Status.fromCodeValue(answer.getError().getCode())
              .withDescription(answer.getError().getMessage()).asRuntimeException());
        }
      }
    }

    @Override
    public void onError(Throwable t) {
      Status status = Status.fromThrowable(t);
      done = true;
      synchronized (streamLock) {
        // null: this stream failed inside its own start, before it was stored
        if (stream == this || stream == null) {
          stream = null;
          if (status.getCode() == Status.Code.UNIMPLEMENTED) {
            streamUnsupported = true;
          } else {
            streamRetryAtNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(
                STREAM_RETRY_MS);
          }
        }
      }
      // no more sends on this stream from here on
      if (status.getCode() == Status.Code.UNIMPLEMENTED) {
        LOG.info("DATCP agent at {} has no RegisterFlowBatches stream; registering with "
            + "RegisterFlow",
            config.socketPath());
        // the agent handled none of them: each goes again as a RegisterFlow call
        for (Long sequence : pending.keySet()) {
          Pending p = pending.remove(sequence);
          if (p != null) {
            p.future.setFuture(registerUnary(p.registration));
          }
        }
        return;
      }
      if (!closed) {
        outage.failed(t);
      }
      failAll(status.asRuntimeException());
    }

    @Override
    public void onCompleted() {
      onError(Status.UNAVAILABLE.withDescription("registration stream ended by the agent")
          .asRuntimeException());
    }

    void failAll(Throwable why) {
      for (Long sequence : pending.keySet()) {
        Pending p = pending.remove(sequence);
        if (p != null) {
          p.future.setException(why);
        }
      }
    }
  }

  /**
   * Registrations unanswered after the rpc timeout fail; the stream that holds them is cancelled
   * (a stuck stream is replaced by a new one after STREAM_RETRY_MS, RegisterFlow meanwhile).
   */
  private void expireRegistrations() {
    long limit = System.nanoTime() - config.rpcTimeout().toNanos();
    RegistrationStream overdue = null;
    synchronized (streamLock) {
      if (stream == null) {
        return;
      }
      for (Pending p : stream.pending.values()) {
        if (p.sentNanos - limit < 0) {
          overdue = stream;
          break;
        }
      }
    }
    if (overdue == null) {
      return;
    }
    // before the cancel, whose onError would fail them as CANCELLED: callers tell an agent that
    // does not answer from one that is gone by the status
    overdue.failAll(Status.DEADLINE_EXCEEDED.withDescription("no answer within "
        + AgentConfig.RPC_TIMEOUT_MS).asRuntimeException());
    synchronized (streamLock) { // the call's sends and cancel are not thread-safe
      overdue.requests.cancel("registration answers overdue (" + AgentConfig.RPC_TIMEOUT_MS
          + ")", null);
    }
  }

  /** Tells the agent a flow's response ended; fire and forget. */
  public void endFlow(FlowEnd end) {
    ListenableFuture<FlowEnded> reply = LocalAgentServiceGrpc.newFutureStub(channel)
        .withDeadlineAfter(config.rpcTimeout().toMillis(), TimeUnit.MILLISECONDS)
        .endFlow(end);
    watch(reply);
  }

  /** Forwards one batch of events with the Forward rpc (bounded by the rpc timeout). */
  @Override
  public ReportAck forward(ShuffleReport report) {
    try {
      ReportAck ack = LocalAgentServiceGrpc.newBlockingStub(channel)
          .withDeadlineAfter(config.rpcTimeout().toMillis(), TimeUnit.MILLISECONDS)
          .forward(report);
      outage.succeeded();
      return ack;
    } catch (RuntimeException e) {
      outage.failed(e);
      throw e;
    }
  }

  /**
   * Follows the agent's orders for this subscriber until close(); re-subscribes with backoff
   * after the stream breaks (agent restart), so orders resume without the caller's help.
   * {@code onLost} runs at each break, before the pause: orders sent meanwhile are lost (a
   * restarted agent has also forgotten what it suspended), so the caller must not wait for them.
   */
  public void subscribeOrders(String subscriberId, Consumer<FlowOrder> onOrder,
      Runnable onLost) {
    subscribe(OrdersRequest.newBuilder().setSubscriberId(subscriberId).build(), onOrder, onLost,
        100);
  }

  private void subscribe(OrdersRequest request, Consumer<FlowOrder> onOrder, Runnable onLost,
      long retryMs) {
    if (closed) {
      return;
    }
    LocalAgentServiceGrpc.newStub(channel).orders(request,
        new ClientResponseObserver<OrdersRequest, FlowOrder>() {
          private boolean gotAny;

          @Override
          public void beforeStart(ClientCallStreamObserver<OrdersRequest> requestStream) {
            // the stream is server-to-client only; nothing to configure
          }

          @Override
          public void onNext(FlowOrder order) {
            gotAny = true;
            outage.succeeded();
            onOrder.accept(order);
          }

          @Override
          public void onError(Throwable t) {
            if (!closed) {
              outage.failed(t);
              onLost.run();
              long next = gotAny ? 100 : Math.min(retryMs * 2, MAX_RESUBSCRIBE_DELAY_MS);
              timer.schedule(() -> subscribe(request, onOrder, onLost, next), next,
                  TimeUnit.MILLISECONDS);
            }
          }

          @Override
          public void onCompleted() {
            onError(new IllegalStateException("orders stream ended by the agent"));
          }
        });
  }

  private <T> void watch(ListenableFuture<T> reply) {
    Futures.addCallback(reply, new FutureCallback<T>() {
      @Override
      public void onSuccess(T result) {
        outage.succeeded();
      }

      @Override
      public void onFailure(Throwable t) {
        outage.failed(t);
      }
    }, MoreExecutors.directExecutor());
  }

  @Override
  public void close() {
    closed = true;
    RegistrationStream s;
    synchronized (streamLock) {
      s = stream;
      stream = null;
      if (s != null) {
        s.requests.cancel("client closed", null);
      }
    }
    if (s != null) {
      s.failAll(Status.CANCELLED.withDescription("client closed").asRuntimeException());
    }
    timer.shutdownNow();
    channel.shutdownNow();
    try {
      channel.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    // bounded wait, so nothing of the client runs after close() returns
    eventLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(2, TimeUnit.SECONDS);
  }
}
