package io.datcp.agent.testing;

import io.datcp.proto.v1.LocalAgentServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.channel.ChannelOption;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** The plugin's side of LocalAgentService: a real gRPC client over the agent's Unix socket. */
public final class AgentClient implements AutoCloseable {
  private final EpollEventLoopGroup group = new EpollEventLoopGroup(1);
  private final ManagedChannel channel;

  public AgentClient(Path socket) {
    channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollDomainSocketChannel.class).eventLoopGroup(group).usePlaintext()
        // gRPC sets SO_KEEPALIVE, which a domain socket lacks (Netty warns per connection)
        .withOption(ChannelOption.SO_KEEPALIVE, null)
        .build();
  }

  public LocalAgentServiceGrpc.LocalAgentServiceBlockingStub blocking() {
    return LocalAgentServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10,
        TimeUnit.SECONDS);
  }

  public LocalAgentServiceGrpc.LocalAgentServiceStub async() {
    return LocalAgentServiceGrpc.newStub(channel);
  }

  /** The channel's event loop (one thread), for callers that batch on it as the plugin does. */
  public EpollEventLoopGroup eventLoop() {
    return group;
  }

  public LocalAgentServiceGrpc.LocalAgentServiceFutureStub future() {
    return LocalAgentServiceGrpc.newFutureStub(channel);
  }

  @Override
  public void close() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
  }
}
