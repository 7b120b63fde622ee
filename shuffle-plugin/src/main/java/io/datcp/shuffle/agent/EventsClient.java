package io.datcp.shuffle.agent;

import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleReport;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * A reduce task's client of the agent's events socket: each ShuffleReport goes in protobuf's
 * length-delimited form and is answered by a length-delimited ReportAck (the contract is in
 * datcp.proto, next to LocalAgentService.Forward). It needs only the JDK's Unix domain sockets
 * and protobuf, so a reduce JVM loads neither gRPC nor Netty to report its shuffle.
 *
 * <p>It connects on the first report and keeps the connection. Each report, its connect
 * included, is bounded by the rpc timeout; after any failure the connection is dropped (a late
 * answer would pair with the wrong report) and the next report connects again. One log line
 * per outage.
 */
public final class EventsClient implements ReportTransport {
  private final AgentConfig config;
  private final UnixDomainSocketAddress address;
  private final OutageLog outage;
  /** Serialises reports and guards the connection. */
  private final Object lock = new Object();
  private SocketChannel channel;
  /** Waits for the non-blocking channel within the deadline; close() wakes it. */
  private volatile Selector selector;
  private volatile boolean closed;

  public EventsClient(AgentConfig config, String who) {
    this.config = config;
    this.address = UnixDomainSocketAddress.of(config.eventsSocketPath());
    this.outage = new OutageLog(who + " -> " + config.eventsSocketPath());
  }

  @Override
  public ReportAck forward(ShuffleReport report) {
    synchronized (lock) {
      long deadline = System.nanoTime() + config.rpcTimeout().toNanos();
      try {
        if (closed) {
          throw new IOException("events client closed");
        }
        if (channel != null && !stillOpen()) {
          disconnect(); // the agent closed it meanwhile (e.g. it restarted): not an outage
        }
        if (channel == null) {
          connect(deadline);
        }
        write(delimited(report), deadline);
        ReportAck ack = ReportAck.parseDelimitedFrom(new Answer(deadline));
        if (ack == null) {
          throw new EOFException("the agent closed the connection without an answer");
        }
        outage.succeeded();
        return ack;
      } catch (IOException e) {
        disconnect();
        if (!closed) {
          outage.failed(e);
        }
        throw new UncheckedIOException(e);
      }
    }
  }

  /** True while the last report failed (an outage is going on). */
  public boolean isDown() {
    return outage.isDown();
  }

  /** True when nothing came from the agent between answers: no end of stream, no stray byte. */
  private boolean stillOpen() {
    try {
      return channel.read(ByteBuffer.allocate(1)) == 0;
    } catch (IOException e) {
      return false;
    }
  }

  private void connect(long deadline) throws IOException {
    channel = SocketChannel.open(StandardProtocolFamily.UNIX);
    channel.configureBlocking(false);
    selector = Selector.open();
    channel.register(selector, 0);
    if (!channel.connect(address)) {
      while (!channel.finishConnect()) {
        await(SelectionKey.OP_CONNECT, deadline);
      }
    }
  }

  private static ByteBuffer delimited(ShuffleReport report) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream(report.getSerializedSize() + 5);
    report.writeDelimitedTo(out);
    return ByteBuffer.wrap(out.toByteArray());
  }

  private void write(ByteBuffer bytes, long deadline) throws IOException {
    while (bytes.hasRemaining()) {
      if (channel.write(bytes) == 0) {
        await(SelectionKey.OP_WRITE, deadline);
      }
    }
  }

  /** Waits until the channel is ready for op, or throws when the deadline has passed. */
  private void await(int op, long deadline) throws IOException {
    long left = deadline - System.nanoTime();
    if (left <= 0) {
      throw new SocketTimeoutException("no answer from the agent within "
          + AgentConfig.RPC_TIMEOUT_MS + " (" + config.rpcTimeout().toMillis() + " ms)");
    }
    channel.keyFor(selector).interestOps(op);
    selector.select(TimeUnit.NANOSECONDS.toMillis(left) + 1);
    selector.selectedKeys().clear();
    if (closed) {
      throw new IOException("events client closed");
    }
    if (Thread.currentThread().isInterrupted()) {
      throw new InterruptedIOException("interrupted while talking to the agent");
    }
  }

  /**
   * The answer's bytes as protobuf's parseDelimitedFrom reads them; it never asks for more than
   * the answer's length, so nothing of a later answer is consumed.
   */
  private final class Answer extends InputStream {
    private final long deadline;

    Answer(long deadline) {
      this.deadline = deadline;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xFF;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      ByteBuffer into = ByteBuffer.wrap(b, off, len);
      int n;
      while ((n = channel.read(into)) == 0) {
        await(SelectionKey.OP_READ, deadline);
      }
      return n;
    }
  }

  private void disconnect() {
    closeQuietly(selector);
    closeQuietly(channel);
    selector = null;
    channel = null;
  }

  private static void closeQuietly(Closeable c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (IOException e) {
      // closing a local socket: nothing left to do
    }
  }

  @Override
  public void close() {
    closed = true;
    Selector s = selector;
    if (s != null) {
      s.wakeup(); // a report waiting for its answer gives up now
    }
    synchronized (lock) {
      disconnect();
    }
  }
}
