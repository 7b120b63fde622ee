package io.datcp.agent.local;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import io.datcp.agent.flows.Owner;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleReport;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.channel.unix.DomainSocketChannel;
import io.netty.channel.unix.PeerCredentials;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The events socket: reduce tasks send ShuffleReports here without gRPC (its client costs a
 * short-lived reduce JVM more CPU than everything it reports). The wire is protobuf's own
 * length-delimited format (writeDelimitedTo / parseDelimitedFrom): a stream of delimited
 * ShuffleReports, each answered in order with a delimited ReportAck; the reports go through the
 * same {@link ReportIntake} as the Forward rpc. A connection that breaks the rules (a message
 * over {@link #MAX_MESSAGE_BYTES}, bytes that are not a ShuffleReport, a report Forward would
 * refuse, a message left half-sent, more than its {@link Limits}) is closed: the caller's
 * answer is the closed connection, as Forward's is an error status. The first close of each
 * kind is logged, every one is counted.
 */
// Netty, not java.nio: the agent already runs epoll loops for gRPC; this shares them.
final class EventsServer implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(EventsServer.class.getName());
  /** Largest report, the gRPC socket's inbound limit. */
  static final int MAX_MESSAGE_BYTES = LocalServer.MAX_MESSAGE_BYTES;

  /**
   * What one local process may hold of the agent.
   *
   * @param maxConnections connections at once; more are closed at once, so a local process
   *     cannot take every descriptor of the agent
   * @param maxBufferedBytes bytes of unfinished messages over all connections (reserved at their
   *     length prefix); a message that does not fit closes its connection
   * @param partialTimeoutMs a message's last byte must follow its first within this long
   */
  record Limits(int maxConnections, long maxBufferedBytes, long partialTimeoutMs) {
    /**
     * A host's reduce tasks hold one connection each; a real report is tens of kilobytes, so
     * 32 MiB only binds when processes announce large messages on many connections at once
     * (which would otherwise take the agent's memory, and gRPC's with it); a sender is local,
     * so ten seconds for one message is generous.
     */
    static final Limits DEFAULT = new Limits(1024, 32L << 20, 10_000);
  }

  /** Longest varint32 protobuf's parseDelimitedFrom reads (it takes 64-bit encodings). */
  private static final int MAX_PREFIX_BYTES = 10;

  /** Why a connection was closed; the {@code reason} tag of the metric. */
  enum Reason {
    TOO_LARGE, MALFORMED, INVALID, PARTIAL_TIMEOUT, BUFFERS_FULL, TOO_MANY_CONNECTIONS;

    String tag() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final Path socket;
  private final Channel server;
  private final ReportIntake reports;
  private final Limits limits;
  private final PeerRule peers;
  private final Counter refusedPeers;
  private final AtomicBoolean refusedPeerLogged = new AtomicBoolean();
  private final AtomicInteger open = new AtomicInteger();
  private final AtomicLong buffered = new AtomicLong();
  private final Map<Reason, Counter> closed = new EnumMap<>(Reason.class);
  private final Map<Reason, AtomicBoolean> logged = new EnumMap<>(Reason.class);
  private final AtomicBoolean unexpectedLogged = new AtomicBoolean();

  private EventsServer(Path socket, EventLoopGroup boss, EventLoopGroup workers,
      ReportIntake reports, MeterRegistry meters, Limits limits, PeerRule peers,
      Counter refusedPeers) {
    this.socket = socket;
    this.reports = reports;
    this.limits = limits;
    this.peers = peers;
    this.refusedPeers = refusedPeers;
    for (Reason r : Reason.values()) {
      closed.put(r, Counter.builder("datcp.agent.events.closed").tag("reason", r.tag())
          .description("events-socket connections the agent closed").register(meters));
      logged.put(r, new AtomicBoolean());
    }
    Gauge.builder("datcp.agent.events.connections", open, AtomicInteger::get)
        .description("events-socket connections open").register(meters);
    server = new ServerBootstrap().group(boss, workers)
        .channel(EpollServerDomainSocketChannel.class)
        .childHandler(new ChannelInitializer<DomainSocketChannel>() {
          @Override
          protected void initChannel(DomainSocketChannel ch) {
            accept(ch);
          }
        })
        .bind(new DomainSocketAddress(socket.toString())).syncUninterruptibly().channel();
  }

  /**
   * Binds the socket (the caller has removed a stale one and sets its group and mode).
   *
   * @param peers who may connect (SO_PEERCRED); others are closed at once, counted in
   *     refusedPeers
   */
  static EventsServer start(Path socket, EventLoopGroup boss, EventLoopGroup workers,
      ReportIntake reports, MeterRegistry meters, Limits limits, PeerRule peers,
      Counter refusedPeers) {
    return new EventsServer(socket, boss, workers, reports, meters, limits, peers,
        refusedPeers);
  }

  Path socket() {
    return socket;
  }

  private void accept(DomainSocketChannel ch) {
    String refusal;
    try {
      PeerCredentials c = ((EpollDomainSocketChannel) ch).peerCredentials();
      refusal = peers.refusal(new Owner(c.uid(), c.pid()));
    } catch (IOException e) {
      refusal = "the connecting process's credentials (SO_PEERCRED) could not be read";
    }
    if (refusal != null) {
      refusedPeers.increment();
      if (refusedPeerLogged.compareAndSet(false, true)) {
        LOG.log(Level.WARNING, "events socket {0}: closed a connection: {1} (or"
            + " local.eventsSocketPeers=any; further ones are only counted:"
            + " datcp_agent_local_refused_total)", new Object[] {socket, refusal});
      }
      ch.close();
      return;
    }
    if (open.incrementAndGet() > limits.maxConnections()) {
      open.decrementAndGet();
      refused(Reason.TOO_MANY_CONNECTIONS, "more than " + limits.maxConnections()
          + " connections");
      ch.close();
      return;
    }
    ch.closeFuture().addListener(f -> open.decrementAndGet());
    ch.pipeline().addLast(new Frames(), new Answers());
  }

  private void refused(Reason reason, String detail) {
    closed.get(reason).increment();
    if (logged.get(reason).compareAndSet(false, true)) {
      LOG.log(Level.WARNING, "events socket {0}: closed a connection: {1} (further ones are"
          + " only counted: datcp_agent_events_closed_total'{'reason=\"{2}\"'}')",
          new Object[] {socket, detail, reason.tag()});
    }
  }

  /**
   * Cuts the byte stream into ShuffleReports at protobuf's varint length prefixes. The
   * prefix is read with protobuf's own decoder; a message is parsed once all its bytes are in.
   */
  private final class Frames extends ByteToMessageDecoder {
    /** Bytes reserved from {@code buffered} for the message being received. */
    private long reserved;
    /** Closes the connection when the message being received is not complete in time. */
    private ScheduledFuture<?> timeout;
    private boolean closing;

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
      if (closing) {
        in.skipBytes(in.readableBytes());
        return;
      }
      int readable = in.readableBytes();
      int size;
      int prefix;
      try {
        CodedInputStream cis = CodedInputStream.newInstance(
            in.nioBuffer(in.readerIndex(), Math.min(readable, MAX_PREFIX_BYTES)));
        size = cis.readRawVarint32();
        prefix = cis.getTotalBytesRead();
      } catch (IOException e) {
        if (readable >= MAX_PREFIX_BYTES) {
          close(ctx, in, Reason.MALFORMED, "a length prefix that is not a varint");
        } else {
          awaitRest(ctx);
        }
        return;
      }
      if (size < 0 || size > MAX_MESSAGE_BYTES) {
        close(ctx, in, Reason.TOO_LARGE, "a message of " + Integer.toUnsignedString(size)
            + " bytes, at most " + MAX_MESSAGE_BYTES);
        return;
      }
      if (readable - prefix < size) {
        if (reserved == 0 && size > 0) {
          if (buffered.addAndGet(size) > limits.maxBufferedBytes()) {
            buffered.addAndGet(-size);
            close(ctx, in, Reason.BUFFERS_FULL, "unfinished messages over "
                + limits.maxBufferedBytes() + " bytes on all connections");
            return;
          }
          reserved = size;
        }
        awaitRest(ctx);
        return;
      }
      ShuffleReport report;
      try {
        report = ShuffleReport.parseFrom(in.nioBuffer(in.readerIndex() + prefix, size));
      } catch (InvalidProtocolBufferException e) {
        close(ctx, in, Reason.MALFORMED, "bytes that are not a ShuffleReport ("
            + e.getMessage() + ")");
        return;
      }
      in.skipBytes(prefix + size);
      done();
      out.add(report);
    }

    private void awaitRest(ChannelHandlerContext ctx) {
      if (timeout == null) {
        timeout = ctx.executor().schedule(() -> {
          timeout = null;
          closing = true;
          refused(Reason.PARTIAL_TIMEOUT, "a message unfinished after "
              + limits.partialTimeoutMs() + " ms");
          ctx.close();
        }, limits.partialTimeoutMs(), TimeUnit.MILLISECONDS);
      }
    }

    /** The message is complete (or will never be): its reservation and timeout end. */
    private void done() {
      buffered.addAndGet(-reserved);
      reserved = 0;
      if (timeout != null) {
        timeout.cancel(false);
        timeout = null;
      }
    }

    private void close(ChannelHandlerContext ctx, ByteBuf in, Reason reason, String detail) {
      closing = true;
      in.skipBytes(in.readableBytes());
      done();
      refused(reason, detail);
      ctx.close();
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
      done();
    }
  }

  /**
   * Hands each report to the intake and collects its answer; the answers of one read burst go
   * out as one buffer (a burst can hold many small reports).
   */
  private final class Answers extends SimpleChannelInboundHandler<ShuffleReport> {
    private ByteBuf pending;

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, ShuffleReport report) {
      if (!ctx.channel().isActive()) {
        return; // closed for an earlier message of the same read
      }
      ReportAck ack;
      try {
        ack = reports.accept(report, ReportIntake.Via.EVENTS);
      } catch (ReportIntake.Refused e) {
        refused(Reason.INVALID, e.getMessage());
        ctx.close();
        return;
      }
      if (pending == null) {
        pending = ctx.alloc().buffer();
      }
      try {
        ack.writeDelimitedTo(new ByteBufOutputStream(pending));
      } catch (IOException e) {
        throw new UncheckedIOException(e); // a ByteBuf grows; it does not fail to write
      }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
      if (pending != null) {
        ctx.writeAndFlush(pending);
        pending = null;
      }
      // a caller that sends without reading its answers stalls itself, not the agent's memory
      if (!ctx.channel().isWritable()) {
        ctx.channel().config().setAutoRead(false);
      }
      ctx.fireChannelReadComplete();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
      ctx.channel().config().setAutoRead(ctx.channel().isWritable());
      ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
      if (pending != null) {
        pending.release();
        pending = null;
      }
    }

    /** Last in the pipeline: every error of the connection ends here, and ends it. */
    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      // an IOException is the peer resetting or going away: nothing to tell anyone
      if (!(cause instanceof IOException) && unexpectedLogged.compareAndSet(false, true)) {
        LOG.log(Level.WARNING, "events socket " + socket + ": closed a connection after an"
            + " unexpected error (further ones are not logged)", cause);
      }
      ctx.close();
    }
  }

  /** Stops accepting; open connections close with the event loops. */
  @Override
  public void close() {
    server.close().syncUninterruptibly();
  }
}
