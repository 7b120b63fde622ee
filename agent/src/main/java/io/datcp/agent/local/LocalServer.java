package io.datcp.agent.local;

import io.datcp.agent.flows.FlowListener;
import io.datcp.agent.flows.FlowRegistry;
import io.datcp.agent.flows.Owner;
import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.ShuffleEvent;
import io.grpc.Server;
import io.grpc.netty.InternalNettyServerCredentials;
import io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * LocalAgentService on a Unix domain socket (Netty epoll), and beside it the events socket
 * ({@link EventsServer}: ShuffleReports without gRPC, for reduce tasks). Calls run on the
 * sockets' event loop: every handler only touches memory and one bpf() map update, so a thread
 * hand-off would cost more than it saves. Both sockets check the connecting process
 * (SO_PEERCRED) against a {@link PeerRule}; the file's group and mode are the first fence, not
 * the only one.
 */
public final class LocalServer implements AutoCloseable {
  /** Largest request: a registration is small; a Forward batch holds up to 1000 events. */
  static final int MAX_MESSAGE_BYTES = 4 << 20;

  private final Path socket;
  private final Server server;
  private final EventsServer events;
  private final EpollEventLoopGroup boss;
  private final EpollEventLoopGroup workers;
  private final OrderHub orders;

  private LocalServer(Path socket, Server server, EventsServer events, EpollEventLoopGroup boss,
      EpollEventLoopGroup workers, OrderHub orders) {
    this.socket = socket;
    this.server = server;
    this.events = events;
    this.boss = boss;
    this.workers = workers;
    this.orders = orders;
  }

  /** The hub that delivers orders to subscribers (the registry's listener uses it). */
  public static OrderSink orderSink(MeterRegistry meters) {
    return new OrderSink(new OrderHub(meters));
  }

  /** Orders to the plugin; pass it to the registry's listener, then to {@link #start}. */
  public static final class OrderSink {
    private final OrderHub hub;

    private OrderSink(OrderHub hub) {
      this.hub = hub;
    }

    /**
     * To owner's subscription subscriber, or to every subscription of owner when subscriber is
     * empty (registered without one).
     */
    public void send(long flowId, Owner owner, String subscriber, FlowAction action,
        String reason) {
      hub.send(flowId, owner, subscriber, action, reason);
    }

    public int subscribers() {
      return hub.subscribers();
    }
  }

  /**
   * Binds both sockets (replacing stale ones), sets their group and mode, and starts serving.
   * Reports from either socket go through one {@link ReportIntake} over {@code forward}.
   *
   * @param eventsSocket the events socket (local.eventsSocketPath)
   * @param group owning group of the socket files; empty = the agent's
   * @param mode octal permissions, e.g. "0660"
   * @param peers who may call on socket (every rpc; local.nodeManagerUser)
   * @param eventsPeers who may report on eventsSocket (local.eventsSocketPeers)
   * @param forward queues events for the scheduler, returns how many were queued
   */
  public static LocalServer start(Path socket, Path eventsSocket, String group, String mode,
      PeerRule peers, PeerRule eventsPeers, FlowRegistry registry, OrderSink orders,
      Function<List<ShuffleEvent>, Integer> forward) throws IOException {
    replaceStale(socket, "local.socketPath");
    replaceStale(eventsSocket, "local.eventsSocketPath");
    ReportIntake reports = new ReportIntake(forward, orders.hub.meters());
    EpollEventLoopGroup boss = new EpollEventLoopGroup(1);
    EpollEventLoopGroup workers = new EpollEventLoopGroup(1);
    MeterRegistry meters = orders.hub.meters();
    Server server = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()),
            InternalNettyServerCredentials.create(new PeerCredentialsNegotiator()))
        .channelType(EpollServerDomainSocketChannel.class)
        .bossEventLoopGroup(boss)
        .workerEventLoopGroup(workers)
        .directExecutor()
        .maxInboundMessageSize(MAX_MESSAGE_BYTES)
        .addService(new LocalAgentGrpcService(registry, orders.hub, reports, meters))
        .intercept(new PeerCheck(peers, refusedCounter(meters, "grpc")))
        .build();
    EventsServer events = null;
    try {
      server.start();
      restrict(socket, group, mode);
      events = EventsServer.start(eventsSocket, boss, workers, reports, meters,
          EventsServer.Limits.DEFAULT, eventsPeers, refusedCounter(meters, "events"));
      restrict(eventsSocket, group, mode);
    } catch (IOException | RuntimeException e) {
      if (events != null) {
        events.close();
      }
      server.shutdownNow();
      boss.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      workers.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      throw e;
    }
    return new LocalServer(socket, server, events, boss, workers, orders.hub);
  }

  private static Counter refusedCounter(MeterRegistry meters, String socket) {
    return Counter.builder("datcp.agent.local.refused").tag("socket", socket)
        .description("connections and calls refused for the peer's uid (SO_PEERCRED)")
        .register(meters);
  }

  /** Removes a socket file left by a previous agent process; refuses to touch a directory. */
  private static void replaceStale(Path socket, String key) throws IOException {
    Files.createDirectories(socket.getParent());
    if (Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
      if (Files.isDirectory(socket, LinkOption.NOFOLLOW_LINKS)) {
        throw new IOException(key + " " + socket + " is a directory");
      }
      Files.delete(socket);
    }
  }

  private static void restrict(Path socket, String group, String mode) throws IOException {
    PosixFileAttributeView attrs = Files.getFileAttributeView(socket,
        PosixFileAttributeView.class);
    if (!group.isEmpty()) {
      attrs.setGroup(socket.getFileSystem().getUserPrincipalLookupService()
          .lookupPrincipalByGroupName(group));
    }
    attrs.setPermissions(permissions(mode));
  }

  static Set<PosixFilePermission> permissions(String octal) {
    int m = Integer.parseInt(octal, 8);
    PosixFilePermission[] bits = {PosixFilePermission.OTHERS_EXECUTE,
        PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
        PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE,
        PosixFilePermission.GROUP_READ, PosixFilePermission.OWNER_EXECUTE,
        PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ};
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < bits.length; i++) {
      if ((m & (1 << i)) != 0) {
        set.add(bits[i]);
      }
    }
    return set;
  }

  /** A listener that sends orders here and outcomes to outcomeSink. */
  public static FlowListener listener(OrderSink orders, Consumer<FlowOutcome> outcomeSink) {
    return new FlowListener() {
      @Override
      public void order(long flowId, Owner owner, String subscriber, FlowAction action,
          String reason) {
        orders.send(flowId, owner, subscriber, action, reason);
      }

      @Override
      public void outcome(FlowOutcome outcome) {
        outcomeSink.accept(outcome);
      }
    };
  }

  public Path socket() {
    return socket;
  }

  public Path eventsSocket() {
    return events.socket();
  }

  @Override
  public void close() {
    events.close();
    orders.closeAll();
    server.shutdown();
    try {
      if (!server.awaitTermination(1, TimeUnit.SECONDS)) {
        server.shutdownNow();
        server.awaitTermination(1, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    try {
      Files.deleteIfExists(socket);
      Files.deleteIfExists(events.socket());
    } catch (IOException e) {
      // the next start replaces them
    }
  }
}
