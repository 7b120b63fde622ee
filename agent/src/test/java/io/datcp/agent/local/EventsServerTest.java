package io.datcp.agent.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.testing.WarningLog;
import io.datcp.proto.v1.ContainersRunning;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.epoll.EpollEventLoopGroup;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The events socket on a real Unix socket, against a well-behaved client and against what a
 * hostile or broken local process sends: garbage, a huge length prefix, half a message then
 * silence, more connections or unfinished bytes than allowed, answers never read. After each,
 * the connection is closed (or stalled) and the next well-behaved client is served.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EventsServerTest {
  @TempDir
  Path dir;
  private Path socket;
  private EpollEventLoopGroup boss;
  private EpollEventLoopGroup workers;
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final List<ShuffleEvent> forwarded = new CopyOnWriteArrayList<>();
  private final AtomicInteger forwardCalls = new AtomicInteger();
  /** Makes the forward function throw (a bug behind the intake). */
  private volatile boolean forwardThrows;
  private EventsServer server;
  private final WarningLog capture = new WarningLog();
  private final List<LogRecord> warnings = capture.records;
  /** Held strongly: the log manager keeps loggers only weakly. */
  private final Logger serverLog = Logger.getLogger(EventsServer.class.getName());

  @BeforeEach
  void setUp() {
    socket = dir.resolve("events.sock");
    boss = new EpollEventLoopGroup(1);
    workers = new EpollEventLoopGroup(1);
    serverLog.addHandler(capture);
  }

  @AfterEach
  void tearDown() throws Exception {
    serverLog.removeHandler(capture);
    if (server != null) {
      server.close();
    }
    boss.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    workers.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
  }

  private void start(EventsServer.Limits limits) {
    ReportIntake intake = new ReportIntake(events -> {
      if (forwardThrows) {
        throw new IllegalStateException("test: the scheduler queue broke");
      }
      forwardCalls.incrementAndGet();
      forwarded.addAll(events);
      return events.size();
    }, meters);
    server = EventsServer.start(socket, boss, workers, intake, meters, limits,
        PeerRule.nodeManager(OptionalInt.empty()), meters.counter("refused"));
  }

  private void start() {
    start(EventsServer.Limits.DEFAULT);
  }

  private static ShuffleEvent event(int n) {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(n).setContainersRunning(
        ContainersRunning.newBuilder().setJobId("job_1_1").setRunning(n)).build();
  }

  private static ShuffleReport report(String reporter, long batch, int... events) {
    ShuffleReport.Builder b = ShuffleReport.newBuilder().setReporterHost("nm1")
        .setReporterId(reporter).setBatchId(batch);
    for (int e : events) {
      b.addEvents(event(e));
    }
    return b.build();
  }

  private static byte[] delimited(ShuffleReport... reports) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (ShuffleReport r : reports) {
      r.writeDelimitedTo(out);
    }
    return out.toByteArray();
  }

  /** A local process on the events socket. */
  private final class Peer implements AutoCloseable {
    final SocketChannel ch;
    final InputStream in;

    Peer() throws IOException {
      ch = SocketChannel.open(StandardProtocolFamily.UNIX);
      ch.connect(UnixDomainSocketAddress.of(socket));
      in = Channels.newInputStream(ch);
    }

    void send(byte[] bytes) throws IOException {
      ByteBuffer b = ByteBuffer.wrap(bytes);
      while (b.hasRemaining()) {
        ch.write(b);
      }
    }

    ReportAck ack() throws IOException {
      ReportAck ack = ReportAck.parseDelimitedFrom(in);
      assertThat(ack).as("an answer, not the end of the stream").isNotNull();
      return ack;
    }

    ReportAck exchange(ShuffleReport r) throws IOException {
      send(delimited(r));
      return ack();
    }

    /** True once the agent has closed the connection (end of stream), within the wait. */
    boolean closedWithin(Duration wait) throws IOException {
      ch.configureBlocking(false);
      long end = System.nanoTime() + wait.toNanos();
      ByteBuffer b = ByteBuffer.allocate(64);
      try {
        while (System.nanoTime() < end) {
          b.clear();
          if (ch.read(b) < 0) {
            return true;
          }
          Thread.sleep(10);
        }
      } catch (IOException e) {
        return true; // reset by the agent
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        ch.configureBlocking(true);
      }
      return false;
    }

    @Override
    public void close() throws IOException {
      ch.close();
    }
  }

  private double closedCount(EventsServer.Reason reason) {
    return meters.get("datcp.agent.events.closed").tag("reason", reason.tag()).counter().count();
  }

  private double reports(String result) {
    return meters.get("datcp.agent.forward.reports").tag("via", "events").tag("result", result)
        .counter().count();
  }

  private void assertStillServes() throws IOException {
    try (Peer good = new Peer()) {
      int before = forwarded.size();
      assertThat(good.exchange(report("", 0, 77)).getAccepted()).isEqualTo(1);
      assertThat(forwarded).hasSize(before + 1);
    }
  }

  @Test
  void reportsOnOneConnectionAreAnsweredInOrderAndForwarded() throws Exception {
    start();
    try (Peer p = new Peer()) {
      // three reports in one write: each gets its own answer, in order
      p.send(delimited(report("r1", 1, 1, 2), report("r1", 2), report("r1", 3, 3, 4, 5)));
      assertThat(p.ack().getAccepted()).isEqualTo(2);
      assertThat(p.ack().getAccepted()).isZero();
      assertThat(p.ack().getAccepted()).isEqualTo(3);
      assertThat(forwarded).extracting(ShuffleEvent::getTimeUnixNanos)
          .containsExactly(1L, 2L, 3L, 4L, 5L);
      assertThat(p.exchange(report("r1", 4, 6)).getAccepted()).isEqualTo(1);
    }
    assertThat(reports("accepted")).isEqualTo(4);
    await().atMost(Duration.ofSeconds(5)).until(
        () -> meters.get("datcp.agent.events.connections").gauge().value() == 0);
  }

  @Test
  void aResentBatchIsAnsweredAsADuplicateAndForwardedOnce() throws Exception {
    start();
    try (Peer p = new Peer()) {
      assertThat(p.exchange(report("r1", 1, 1)).getAccepted()).isEqualTo(1);
    }
    // the answer was lost: the plugin sends the same batch again on a new connection
    try (Peer p = new Peer()) {
      ReportAck again = p.exchange(report("r1", 1, 1));
      assertThat(again.getDuplicate()).isTrue();
      assertThat(again.getAccepted()).isZero();
      assertThat(p.exchange(report("r1", 2, 2)).getDuplicate()).isFalse();
      // another reporter's batch 1 is its own
      assertThat(p.exchange(report("r2", 1, 3)).getAccepted()).isEqualTo(1);
      // without a reporter id there is nothing to dedup by
      assertThat(p.exchange(report("", 0, 4)).getAccepted()).isEqualTo(1);
      assertThat(p.exchange(report("", 0, 4)).getAccepted()).isEqualTo(1);
    }
    assertThat(forwarded).extracting(ShuffleEvent::getTimeUnixNanos)
        .containsExactly(1L, 2L, 3L, 4L, 4L);
    assertThat(reports("duplicate")).isEqualTo(1);
  }

  @Test
  void garbageBytesCloseTheConnectionWithOneLogLine() throws Exception {
    start();
    byte[] garbage = new byte[32];
    Arrays.fill(garbage, (byte) 0xFF); // a varint that never ends
    for (int i = 0; i < 2; i++) {
      try (Peer p = new Peer()) {
        p.send(garbage);
        assertThat(p.closedWithin(Duration.ofSeconds(5))).isTrue();
      }
    }
    // a complete message whose body is not a ShuffleReport (wire type 7 does not exist)
    try (Peer p = new Peer()) {
      p.send(new byte[] {3, 0x0F, 0, 0});
      assertThat(p.closedWithin(Duration.ofSeconds(5))).isTrue();
    }
    assertThat(closedCount(EventsServer.Reason.MALFORMED)).isEqualTo(3);
    assertThat(warnings).hasSize(1);
    assertThat(warnings.get(0).getParameters()[1].toString()).contains("not a varint");
    assertThat(forwardCalls).hasValue(0);
    assertStillServes();
  }

  @Test
  void aHugeLengthPrefixClosesTheConnectionAtOnce() throws Exception {
    // the half-message timeout is far away: only the prefix can close these
    start(new EventsServer.Limits(16, 32L << 20, 60_000));
    byte[][] prefixes = {
        {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x07}, // 2^31 - 1
        {(byte) 0x81, (byte) 0x80, (byte) 0x80, 0x02}, // 4 MiB + 1
        // -1 as a 10-byte varint: what parseDelimitedFrom would read as a negative size
        {(byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF,
            (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x01},
    };
    for (byte[] prefix : prefixes) {
      try (Peer p = new Peer()) {
        // the prefix alone: on a Unix socket a write after the agent has closed fails with a
        // broken pipe, so a second write raced the close this test waits for
        p.send(prefix);
        assertThat(p.closedWithin(Duration.ofSeconds(5))).isTrue();
      }
    }
    assertThat(closedCount(EventsServer.Reason.TOO_LARGE)).isEqualTo(3);
    assertThat(warnings).hasSize(1);
    assertStillServes();
  }

  @Test
  void aHalfMessageThenSilenceIsClosedAfterTheTimeoutAndReleasesItsBytes() throws Exception {
    start(new EventsServer.Limits(16, 1000, 300));
    byte[] whole = delimited(report("r1", 1, 1, 2, 3));
    try (Peer half = new Peer(); Peer halfPrefix = new Peer()) {
      half.send(Arrays.copyOf(whole, whole.length / 2));
      halfPrefix.send(new byte[] {(byte) 0x80}); // the first byte of a two-byte prefix
      assertThat(half.closedWithin(Duration.ofSeconds(10))).isTrue();
      assertThat(halfPrefix.closedWithin(Duration.ofSeconds(10))).isTrue();
    }
    assertThat(closedCount(EventsServer.Reason.PARTIAL_TIMEOUT)).isEqualTo(2);
    assertThat(forwardCalls).hasValue(0);
    // its reservation is back: a message of nearly the whole budget, sent in two parts, fits
    ShuffleReport big = padded(900);
    byte[] bytes = delimited(big);
    try (Peer p = new Peer()) {
      p.send(Arrays.copyOf(bytes, 10));
      Thread.sleep(50);
      p.send(Arrays.copyOfRange(bytes, 10, bytes.length));
      assertThat(p.ack().getAccepted()).isEqualTo(1);
    }
  }

  /** A one-event report of exactly {@code size} bytes (padded in reporter_host). */
  private static ShuffleReport padded(int size) {
    ShuffleReport r = report("", 0, 1).toBuilder().clearReporterHost().build();
    int pad = size - r.getSerializedSize() - 3; // field tag and a two-byte length
    return r.toBuilder().setReporterHost("x".repeat(pad)).build();
  }

  @Test
  void unfinishedMessagesOverTheBudgetCloseTheConnectionThatWouldExceedIt() throws Exception {
    start(new EventsServer.Limits(16, 1000, 60_000));
    byte[] first = delimited(padded(800));
    byte[] second = delimited(padded(800));
    assertThat(padded(800).getSerializedSize()).isEqualTo(800);
    try (Peer a = new Peer(); Peer b = new Peer()) {
      a.send(Arrays.copyOf(first, 10));
      Thread.sleep(100); // a's prefix is read (and its 800 bytes reserved) first
      b.send(Arrays.copyOf(second, 10));
      assertThat(b.closedWithin(Duration.ofSeconds(5))).isTrue();
      assertThat(closedCount(EventsServer.Reason.BUFFERS_FULL)).isEqualTo(1);
      a.send(Arrays.copyOfRange(first, 10, first.length));
      assertThat(a.ack().getAccepted()).isEqualTo(1);
      // a's bytes are released: the same 800 fit now
      try (Peer c = new Peer()) {
        c.send(Arrays.copyOf(second, 10));
        Thread.sleep(100);
        c.send(Arrays.copyOfRange(second, 10, second.length));
        assertThat(c.ack().getAccepted()).isEqualTo(1);
      }
    }
  }

  @Test
  void connectionsOverTheLimitAreClosedAtOnce() throws Exception {
    start(new EventsServer.Limits(3, 32L << 20, 60_000));
    List<Peer> held = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        Peer p = new Peer();
        held.add(p);
        assertThat(p.exchange(report("", 0, i)).getAccepted()).isEqualTo(1);
      }
      try (Peer extra = new Peer()) {
        assertThat(extra.closedWithin(Duration.ofSeconds(5))).isTrue();
      }
      assertThat(closedCount(EventsServer.Reason.TOO_MANY_CONNECTIONS)).isEqualTo(1);
      held.remove(0).close();
      await().atMost(Duration.ofSeconds(5)).until(
          () -> meters.get("datcp.agent.events.connections").gauge().value() == 2);
      assertStillServes();
    } finally {
      for (Peer p : held) {
        p.close();
      }
    }
  }

  @Test
  void reportsForwardWouldRefuseCloseTheConnectionAndForwardNothing() throws Exception {
    start();
    ShuffleReport.Builder big = ShuffleReport.newBuilder();
    for (int i = 0; i < ReportIntake.MAX_EVENTS + 1; i++) {
      big.addEvents(event(i));
    }
    try (Peer p = new Peer()) {
      p.send(delimited(big.build()));
      assertThat(p.closedWithin(Duration.ofSeconds(5))).isTrue();
    }
    try (Peer p = new Peer()) {
      p.send(delimited(ShuffleReport.newBuilder()
          .addEvents(ShuffleEvent.newBuilder().setTimeUnixNanos(1)).build()));
      assertThat(p.closedWithin(Duration.ofSeconds(5))).isTrue();
    }
    assertThat(closedCount(EventsServer.Reason.INVALID)).isEqualTo(2);
    assertThat(reports("invalid")).isEqualTo(2);
    assertThat(forwardCalls).hasValue(0);
    assertStillServes();
  }

  @Test
  void anUnexpectedErrorBehindTheIntakeClosesOnlyThatConnectionAndIsLoggedOnce()
      throws Exception {
    start();
    forwardThrows = true;
    for (int i = 0; i < 2; i++) {
      try (Peer p = new Peer()) {
        p.send(delimited(report("", 0, 1)));
        assertThat(p.closedWithin(Duration.ofSeconds(5))).isTrue();
      }
    }
    assertThat(warnings).hasSize(1);
    assertThat(warnings.get(0).getThrown()).hasMessageContaining("the scheduler queue broke");
    forwardThrows = false;
    assertStillServes();
  }

  @Test
  void aPeerThatNeverReadsItsAnswersStallsOnlyItself() throws Exception {
    start();
    try (Peer flood = new Peer()) {
      flood.ch.configureBlocking(false);
      ByteBuffer empties = ByteBuffer.allocate(64 * 1024); // 65,536 empty reports of one byte
      long sent = 0;
      int stuck = 0;
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (stuck < 50 && System.nanoTime() < end) {
        if (!empties.hasRemaining()) {
          empties.clear();
        }
        int n = flood.ch.write(empties);
        sent += n;
        stuck = n == 0 ? stuck + 1 : 0;
        if (n == 0) {
          Thread.sleep(10);
        }
      }
      assertThat(stuck).as("the agent stopped reading a peer that does not read").isEqualTo(50);
      int calls = forwardCalls.get();
      Thread.sleep(300);
      assertThat(forwardCalls.get()).isEqualTo(calls).isLessThan((int) sent);
      assertStillServes();
    }
  }
}
