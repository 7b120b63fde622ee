package io.datcp.shuffle.mapside;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowOrder;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.shuffle.FakeAgent;
import io.datcp.shuffle.agent.AgentClient;
import io.datcp.shuffle.agent.AgentConfig;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.metrics2.AbstractMetric;
import org.apache.hadoop.metrics2.impl.MetricsCollectorImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The flow tracker in a real Netty pipeline on loopback, in front of a stand-in for Hadoop's
 * shuffle handler that answers like it does (a response with Content-Length, then header and
 * body of each map in turn, each written after the previous completed), with a fake agent.
 */
class FlowTrackerTest {
  private static final int MAP_BYTES = 64 * 1024;
  private static final String JOB = "job_1700000000000_0001";

  private Path dir;
  private FakeAgent agent;
  private AgentClient client;
  private EventLoopGroup group;
  private int port;
  private final AtomicInteger killed = new AtomicInteger();
  private final FlowMetrics metrics = new FlowMetrics();
  private final List<String> served = new CopyOnWriteArrayList<>();
  private long registerTimeoutMs = 2000;
  private long rpcTimeoutMs = 5000;
  private long suspendMaxMs = 30_000;
  /** Orders the service took from the agent's stream, in the order they came. */
  private final List<FlowOrder> ordersSeen = new CopyOnWriteArrayList<>();
  /** The stand-in sends a response's second map only once this completes. */
  private volatile CompletableFuture<Void> secondMap = CompletableFuture.completedFuture(null);
  private final CountDownLatch atSecondMap = new CountDownLatch(1);

  @BeforeEach
  void startAgent() throws Exception {
    dir = Files.createTempDirectory("datcp-tracker");
    agent = new FakeAgent(dir);
  }

  private void startServer() throws InterruptedException {
    AgentConfig config = new AgentConfig(agent.socket.toString(),
        agent.eventsSocket.toString(), Duration.ofMillis(registerTimeoutMs),
        Duration.ofMillis(rpcTimeoutMs), 100, 10, Duration.ofMillis(suspendMaxMs));
    client = new AgentClient(config, "tracker-test");
    FlowOrders orders = new FlowOrders();
    client.subscribeOrders("tracker-test", order -> {
      orders.dispatch(order);
      ordersSeen.add(order);
    }, orders::ordersLost);
    FlowHost host = new FlowHost() {
      @Override
      public AgentConfig config() {
        return config;
      }

      @Override
      public AgentClient agent() {
        return client;
      }

      @Override
      public FlowOrders orders() {
        return orders;
      }

      @Override
      public String subscriberId() {
        return "tracker-test";
      }

      @Override
      public FlowMetrics metrics() {
        return metrics;
      }

      @Override
      public void mapOutputsServed(String jobId, List<String> mapAttempts) {
        served.addAll(mapAttempts);
      }

      @Override
      public void flowKilled(String reason) {
        killed.incrementAndGet();
      }
    };
    group = new NioEventLoopGroup(1);
    Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            ch.pipeline().addLast("http", new HttpServerCodec())
                .addLast("aggregator", new HttpObjectAggregator(1 << 16))
                .addLast("datcp", new FlowTracker(host))
                .addLast("shuffle", new HadoopLikeShuffle());
          }
        }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    port = ((InetSocketAddress) server.localAddress()).getPort();
    await().atMost(Duration.ofSeconds(10)).until(() -> agent.subscribers() > 0);
  }

  @AfterEach
  void stop() throws Exception {
    if (group != null) {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
    if (client != null) {
      client.close();
    }
    if (agent != null) {
      agent.close();
    }
  }

  /** Answers GET /mapOutput?...&map=a,b with, per map, an 8-byte header and MAP_BYTES of body. */
  private final class HadoopLikeShuffle extends SimpleChannelInboundHandler<FullHttpRequest> {
    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
      String maps = request.uri().replaceAll(".*map=([^&]*).*", "$1");
      String[] attempts = maps.split(",");
      DefaultHttpResponse response =
          new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
      HttpUtil.setContentLength(response, (long) attempts.length * (8 + MAP_BYTES));
      ctx.channel().write(response);
      sendMap(ctx.channel(), attempts.length, 0);
    }

    private void sendMap(Channel ch, int maps, int index) {
      if (index == maps) {
        ch.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
        return;
      }
      if (index == 1 && !secondMap.isDone()) {
        atSecondMap.countDown();
        secondMap.thenRun(() -> sendMap(ch, maps, index));
        return;
      }
      ch.write(Unpooled.wrappedBuffer(new byte[8]));
      byte[] body = new byte[MAP_BYTES];
      Arrays.fill(body, (byte) ('a' + index));
      ch.writeAndFlush(Unpooled.wrappedBuffer(body)).addListener((ChannelFutureListener) f -> {
        if (f.isSuccess()) {
          sendMap(ch, maps, index + 1);
        }
      });
    }
  }

  private static String request(int maps, String job) {
    StringBuilder m = new StringBuilder();
    for (int i = 0; i < maps; i++) {
      m.append(i == 0 ? "" : ",").append("attempt_1700000000000_0001_m_00000").append(i)
          .append("_0");
    }
    return "GET /mapOutput?job=" + job + "&reduce=3&map=" + m + " HTTP/1.1\r\n"
        + "name: mapreduce\r\nversion: 1.0.0\r\n\r\n";
  }

  /** Sends a fetch on the socket and returns the body, or null when the connection closed. */
  private static byte[] fetch(Socket s, int maps) throws IOException {
    return fetch(s, maps, JOB);
  }

  private static byte[] fetch(Socket s, int maps, String job) throws IOException {
    OutputStream out = s.getOutputStream();
    out.write(request(maps, job).getBytes(StandardCharsets.US_ASCII));
    out.flush();
    InputStream in = s.getInputStream();
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        return null;
      }
      head.write(b);
    }
    String headers = head.toString(StandardCharsets.US_ASCII).toLowerCase();
    int length = Integer.parseInt(headers.replaceAll("(?s).*content-length: (\\d+).*", "$1"));
    byte[] body = in.readNBytes(length);
    return body.length == length ? body : null;
  }

  private static void assertBody(byte[] body, int maps) {
    assertThat(body).hasSize(maps * (8 + MAP_BYTES));
    for (int i = 0; i < maps; i++) {
      assertThat(body[i * (8 + MAP_BYTES) + 8]).isEqualTo((byte) ('a' + i));
      assertThat(body[(i + 1) * (8 + MAP_BYTES) - 1]).isEqualTo((byte) ('a' + i));
    }
  }

  @Test
  void registersEachResponseWithItsExactBytesAndFourTuple() throws Exception {
    startServer();
    try (Socket s = new Socket("127.0.0.1", port)) {
      assertBody(fetch(s, 2), 2);
      assertBody(fetch(s, 1), 1); // keep-alive: a second response on the same connection
      await().atMost(Duration.ofSeconds(5)).until(() -> agent.ends.size() == 2);
      assertThat(agent.flows).hasSize(2);
      FlowRegistration first = agent.flows.get(0).registration();
      assertThat(first.getJobId()).isEqualTo(JOB);
      assertThat(first.getReduceId()).isEqualTo(3);
      assertThat(first.getMapIdsList()).containsExactly(0, 1);
      assertThat(first.getBytes()).isEqualTo(2L * (8 + MAP_BYTES));
      assertThat(first.getSourcePort()).isEqualTo(port);
      assertThat(first.getDestinationPort()).isEqualTo(s.getLocalPort());
      assertThat(first.getDestinationAddress()).isEqualTo("127.0.0.1");
      assertThat(first.getSubscriberId()).isEqualTo("tracker-test"); // its orders come back here
      assertThat(agent.flows.get(1).registration().getSourcePort()).isEqualTo(port);
      for (FakeAgent.Flow f : agent.flows) {
        FlowEnd end = agent.ends.get(f.flowId());
        assertThat(end.getReason()).isEqualTo(FlowEndReason.FLOW_END_REASON_WRITTEN);
        assertThat(end.getBytesWritten()).isEqualTo(f.registration().getBytes());
      }
      assertThat(served).hasSize(3);
      assertThat(metrics.registered()).isEqualTo(2);
      assertThat(metrics.registerTimeouts()).isZero();
      assertThat(metrics.untagged()).isZero();
      assertThat(metrics.answeredWithin(2000)).isEqualTo(2); // both waited less than 2 s
    }
  }

  @Test
  void theRegistrationLatencyHistogramCountsEachAnswerInItsBucket() throws Exception {
    agent.replyDelayMs = 300;
    startServer();
    try (Socket s = new Socket("127.0.0.1", port)) {
      assertBody(fetch(s, 1), 1);
    }
    assertThat(metrics.registered()).isEqualTo(1);
    assertThat(metrics.answeredWithin(200)).isZero(); // the agent took at least 300 ms
    assertThat(metrics.answeredWithin(2000)).isEqualTo(1); // the wait (2 s) did not run out
    assertThat(metrics.untagged()).isZero();
    MetricsCollectorImpl collector = new MetricsCollectorImpl();
    metrics.getMetrics(collector, true);
    Map<String, Number> exposed = new HashMap<>();
    for (AbstractMetric m : collector.getRecords().get(0).metrics()) {
      exposed.put(m.name(), m.value());
    }
    assertThat(exposed).containsEntry("RegisterAnsweredWithin200ms", 0L)
        .containsEntry("RegisterAnsweredWithin2000ms", 1L)
        .containsEntry("FlowsUntagged", 0L)
        .containsKeys("FlowsNotRegisteredNoAgent", "FlowsNotRegisteredNoAnswer",
            "FlowsNotRegisteredRefused", "RegisterAnsweredWithin1ms");
  }

  @Test
  void aSlowAgentDelaysTheResponseByAtMostTheRegisterTimeout() throws Exception {
    registerTimeoutMs = 100;
    agent.replyDelayMs = 4000;
    startServer();
    try (Socket s = new Socket("127.0.0.1", port)) {
      long start = System.nanoTime();
      assertBody(fetch(s, 1), 1);
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(100))
          .isLessThan(Duration.ofMillis(3000)); // loose: far below the agent's 4 s
      // the late reply still gives the agent its flow id, and the end follows
      await().atMost(Duration.ofSeconds(10)).until(() -> agent.ends.size() == 1);
      assertThat(agent.ends.values().iterator().next().getReason())
          .isEqualTo(FlowEndReason.FLOW_END_REASON_WRITTEN);
      assertThat(metrics.registerTimeouts()).isEqualTo(1);
      assertThat(metrics.registered()).isEqualTo(1);
      // the answer came after the response's last byte: the flow ran as plain TCP throughout
      assertThat(metrics.untagged()).isEqualTo(1);
      assertThat(metrics.answeredWithin(2000)).isZero();
    }
  }

  @Test
  void anAgentThatNeverAnswersCostsTheRegisterTimeoutAndTheFlowGoesUntagged() throws Exception {
    registerTimeoutMs = 100;
    rpcTimeoutMs = 500;
    agent.replyDelayMs = 3000; // past the rpc timeout: the client gives the registration up
    startServer();
    try (Socket s = new Socket("127.0.0.1", port)) {
      long start = System.nanoTime();
      assertBody(fetch(s, 2), 2);
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isGreaterThanOrEqualTo(Duration.ofMillis(100));
    }
    // the total is counted last: once it is 1, the reason and FlowsUntagged are too
    await().atMost(Duration.ofSeconds(10)).until(() -> metrics.notRegistered() == 1);
    assertThat(metrics.notRegistered(FlowMetrics.NotRegistered.NO_ANSWER)).isEqualTo(1);
    assertThat(metrics.notRegistered(FlowMetrics.NotRegistered.NO_AGENT)).isZero();
    assertThat(metrics.notRegistered(FlowMetrics.NotRegistered.REFUSED)).isZero();
    assertThat(metrics.registerTimeouts()).isEqualTo(1);
    assertThat(metrics.untagged()).isEqualTo(1);
    assertThat(metrics.registered()).isZero();
  }

  @Test
  void aRefusedRegistrationCountsAsRefusedAndTheFlowGoesUntagged() throws Exception {
    startServer();
    try (Socket s = new Socket("127.0.0.1", port)) {
      assertBody(fetch(s, 1, "job_bad"), 1); // the fake agent refuses this job
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> metrics.notRegistered() == 1);
    assertThat(metrics.notRegistered(FlowMetrics.NotRegistered.REFUSED)).isEqualTo(1);
    assertThat(metrics.untagged()).isEqualTo(1);
    assertThat(metrics.registerTimeouts()).isZero();
  }

  @Test
  void withoutAnAgentResponsesGoOutAtOnce() throws Exception {
    agent.close();
    agent = new FakeAgent(dir); // for subscribers() in startServer; closed again below
    startServer();
    agent.close();
    try (Socket s = new Socket("127.0.0.1", port)) {
      long start = System.nanoTime();
      assertBody(fetch(s, 2), 2);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(1900));
    }
    assertThat(metrics.notRegistered()).isEqualTo(1);
    assertThat(metrics.notRegistered(FlowMetrics.NotRegistered.NO_AGENT)).isEqualTo(1);
    assertThat(metrics.untagged()).isEqualTo(1);
    assertThat(metrics.registered()).isZero();
    agent = null;
  }

  @Test
  void suspendHoldsTheResponseUntilResume() throws Exception {
    agent.ordersBeforeReply(r -> FlowAction.FLOW_ACTION_SUSPEND);
    startServer();
    FakeAgent a = agent;
    Thread resume = new Thread(() -> {
      await().atMost(Duration.ofSeconds(5)).until(() -> !a.flows.isEmpty());
      try {
        Thread.sleep(700);
      } catch (InterruptedException e) {
        return;
      }
      a.order(a.flows.get(0).flowId(), FlowAction.FLOW_ACTION_RESUME);
    });
    resume.start();
    try (Socket s = new Socket("127.0.0.1", port)) {
      long start = System.nanoTime();
      assertBody(fetch(s, 2), 2);
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isGreaterThanOrEqualTo(Duration.ofMillis(700));
    } finally {
      resume.interrupt();
      resume.join();
    }
    assertThat(metrics.suspended()).isEqualTo(1);
  }

  /** A fetch on its own thread; the socket gives up after 10 s, far below any bound tested. */
  private static CompletableFuture<byte[]> fetchAsync(Socket s, int maps) throws IOException {
    s.setSoTimeout(10_000);
    return CompletableFuture.supplyAsync(() -> {
      try {
        return fetch(s, maps);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
  }

  /** Lets the held second map go, on the connections' event loop, after what is queued there. */
  private void releaseSecondMap() {
    group.execute(() -> secondMap.complete(null));
  }

  private void assertWrittenInFull() {
    await().atMost(Duration.ofSeconds(5)).until(() -> agent.ends.size() == 1);
    FlowEnd end = agent.ends.values().iterator().next();
    assertThat(end.getReason()).isEqualTo(FlowEndReason.FLOW_END_REASON_WRITTEN);
    assertThat(end.getBytesWritten()).isEqualTo(agent.flows.get(0).registration().getBytes());
  }

  @Test
  void aSuspendedResponseResumesByItselfAfterTheSuspendBound() throws Exception {
    suspendMaxMs = 300;
    agent.ordersBeforeReply(r -> FlowAction.FLOW_ACTION_SUSPEND); // and no RESUME ever comes
    startServer();
    try (Socket s = new Socket("127.0.0.1", port)) {
      long start = System.nanoTime();
      assertBody(fetchAsync(s, 2).get(), 2);
      assertThat(Duration.ofNanos(System.nanoTime() - start))
          .isGreaterThanOrEqualTo(Duration.ofMillis(300))
          .isLessThan(Duration.ofMillis(5000)); // loose: the point is far below Hadoop's 180 s
    }
    assertWrittenInFull();
    assertThat(metrics.suspended()).isEqualTo(1);
    assertThat(metrics.resumedOnTimeout()).isEqualTo(1);
    assertThat(metrics.resumedAgentLost()).isZero();
  }

  @Test
  void losingTheAgentMidSuspendResumesAtOnce() throws Exception {
    suspendMaxMs = 60_000;
    secondMap = new CompletableFuture<>();
    startServer();
    try (Socket s = new Socket("127.0.0.1", port)) {
      CompletableFuture<byte[]> body = fetchAsync(s, 2);
      assertThat(atSecondMap.await(10, TimeUnit.SECONDS)).isTrue(); // first map sent
      agent.order(agent.flows.get(0).flowId(), FlowAction.FLOW_ACTION_SUSPEND);
      await().atMost(Duration.ofSeconds(5)).until(() -> ordersSeen.size() == 1);
      releaseSecondMap(); // runs after the SUSPEND: the second map is held by it
      assertThatThrownBy(() -> body.get(300, TimeUnit.MILLISECONDS))
          .isInstanceOf(TimeoutException.class);
      assertThat(metrics.suspended()).isEqualTo(1);

      FakeAgent dying = agent;
      agent = null;
      long killed = System.nanoTime();
      dying.close(); // the orders stream breaks; no RESUME will ever come
      assertBody(body.get(), 2);
      assertThat(Duration.ofNanos(System.nanoTime() - killed))
          .isLessThan(Duration.ofSeconds(15)); // loose, and far below the 60 s bound
    }
    assertThat(metrics.resumedAgentLost()).isEqualTo(1);
    assertThat(metrics.resumedOnTimeout()).isZero();
  }

  @Test
  void afterResumingByItselfAResumeIsHarmlessAndTheSpentBoundRefusesSuspend() throws Exception {
    suspendMaxMs = 300;
    agent.ordersBeforeReply(r -> FlowAction.FLOW_ACTION_SUSPEND);
    secondMap = new CompletableFuture<>();
    startServer();
    try (Socket s = new Socket("127.0.0.1", port)) {
      CompletableFuture<byte[]> body = fetchAsync(s, 2);
      assertThat(atSecondMap.await(10, TimeUnit.SECONDS)).isTrue(); // resumed by itself
      assertThat(metrics.resumedOnTimeout()).isEqualTo(1);
      long flowId = agent.flows.get(0).flowId();
      agent.order(flowId, FlowAction.FLOW_ACTION_RESUME); // late: nothing to resume
      agent.order(flowId, FlowAction.FLOW_ACTION_SUSPEND); // the response's 300 ms are spent
      await().atMost(Duration.ofSeconds(5)).until(() -> ordersSeen.size() == 3);
      releaseSecondMap(); // runs after both orders were applied
      assertBody(body.get(), 2);
    }
    assertWrittenInFull();
    assertThat(metrics.suspended()).isEqualTo(1); // the second SUSPEND was not applied
    assertThat(metrics.resumedOnTimeout()).isEqualTo(1);
  }

  @Test
  void killClosesTheConnection() throws Exception {
    agent.ordersBeforeReply(r -> FlowAction.FLOW_ACTION_KILL);
    startServer();
    try (Socket s = new Socket("127.0.0.1", port)) {
      assertThat(fetch(s, 1)).isNull();
    }
    await().atMost(Duration.ofSeconds(5)).until(() -> agent.ends.size() == 1);
    FlowEnd end = agent.ends.values().iterator().next();
    assertThat(end.getReason()).isEqualTo(FlowEndReason.FLOW_END_REASON_ABORTED);
    assertThat(end.getBytesWritten()).isZero();
    assertThat(killed).hasValue(1);
    assertThat(metrics.killed()).isEqualTo(1);
  }
}
