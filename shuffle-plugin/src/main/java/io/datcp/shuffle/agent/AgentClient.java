package io.datcp.shuffle.agent;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEnded;
import io.datcp.proto.v1.FlowOrder;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.LocalAgentServiceGrpc;
import io.datcp.proto.v1.OrdersRequest;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleReport;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.io.Closeable;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * gRPC client of the host's agent (LocalAgentService) over its Unix domain socket. Every call is
 * bounded by the rpc timeout and fails fast while the agent is absent; callers treat a failure as
 * "plain Hadoop shuffle" and this class logs one line per outage.
 */
public final class AgentClient implements Closeable {
  private static final long MAX_RESUBSCRIBE_DELAY_MS = 10_000;

  private final AgentConfig config;
  private final EventLoopGroup eventLoop;
  private final ManagedChannel channel;
  private final ScheduledExecutorService timer;
  private final OutageLog outage;
  private volatile boolean closed;

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
  }

  public AgentConfig config() {
    return config;
  }

  /** True while the last call to the agent failed (an outage is going on). */
  public boolean isDown() {
    return outage.isDown();
  }

  /** Registers a flow; the future fails (never hangs) when the agent is absent or slow. */
  public ListenableFuture<FlowRegistered> registerFlow(FlowRegistration registration) {
    ListenableFuture<FlowRegistered> reply = LocalAgentServiceGrpc.newFutureStub(channel)
        .withDeadlineAfter(config.rpcTimeout().toMillis(), TimeUnit.MILLISECONDS)
        .registerFlow(registration);
    watch(reply);
    return reply;
  }

  /** Tells the agent a flow's response ended; fire and forget. */
  public void endFlow(FlowEnd end) {
    ListenableFuture<FlowEnded> reply = LocalAgentServiceGrpc.newFutureStub(channel)
        .withDeadlineAfter(config.rpcTimeout().toMillis(), TimeUnit.MILLISECONDS)
        .endFlow(end);
    watch(reply);
  }

  /** Forwards one batch of events and waits for the agent's acknowledgement (bounded). */
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
   */
  public void subscribeOrders(String subscriberId, Consumer<FlowOrder> onOrder) {
    subscribe(OrdersRequest.newBuilder().setSubscriberId(subscriberId).build(), onOrder, 100);
  }

  private void subscribe(OrdersRequest request, Consumer<FlowOrder> onOrder, long retryMs) {
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
              long next = gotAny ? 100 : Math.min(retryMs * 2, MAX_RESUBSCRIBE_DELAY_MS);
              timer.schedule(() -> subscribe(request, onOrder, next), next, TimeUnit.MILLISECONDS);
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
