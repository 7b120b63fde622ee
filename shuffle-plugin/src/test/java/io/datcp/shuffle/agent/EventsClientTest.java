package io.datcp.shuffle.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.shuffle.FakeAgent;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.Logger;
import org.apache.log4j.spi.LoggingEvent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The events-socket client against the fake agent's events socket: it connects lazily and keeps
 * one connection, fails fast without an agent and within the rpc timeout with a silent one (one
 * log line per outage), and reconnects after the agent closed or restarted.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EventsClientTest {
  private static final long RPC_TIMEOUT_MS = 400;

  @TempDir
  Path dir;
  private AgentConfig config;
  private final List<String> lines = new CopyOnWriteArrayList<>();
  private final AppenderSkeleton capture = new AppenderSkeleton() {
    @Override
    protected void append(LoggingEvent e) {
      lines.add(e.getLevel() + " " + e.getRenderedMessage());
    }

    @Override
    public void close() {}

    @Override
    public boolean requiresLayout() {
      return false;
    }
  };

  @BeforeEach
  void setUp() throws Exception {
    config = new AgentConfig(dir.resolve("agent.sock").toString(),
        dir.resolve("events.sock").toString(), Duration.ofMillis(5),
        Duration.ofMillis(RPC_TIMEOUT_MS), 100, 10, Duration.ofSeconds(5));
    Logger.getLogger(OutageLog.class).addAppender(capture);
  }

  @AfterEach
  void tearDown() {
    Logger.getLogger(OutageLog.class).removeAppender(capture);
  }

  private static ShuffleReport report(long batch) {
    return ShuffleReport.newBuilder().setReporterHost("h").setReporterId("r").setBatchId(batch)
        .addEvents(ShuffleEvent.newBuilder().setShuffleFinished(
            ShuffleFinished.newBuilder().setJobId("job_1_1").setReduceId((int) batch)))
        .build();
  }

  @Test
  void reportsGoOverOneConnectionMadeAtTheFirstReport() throws Exception {
    try (FakeAgent agent = new FakeAgent(dir); EventsClient client = new EventsClient(config, "t")) {
      Thread.sleep(100);
      assertThat(agent.socketConnections).as("lazy").hasValue(0);
      for (int i = 1; i <= 3; i++) {
        assertThat(client.forward(report(i)).getAccepted()).isEqualTo(1);
      }
      assertThat(client.forward(report(3)).getDuplicate()).isTrue();
      assertThat(agent.socketConnections).hasValue(1);
      assertThat(agent.socketEvents).hasSize(3);
      assertThat(client.isDown()).isFalse();
    }
  }

  @Test
  void withoutAnAgentReportsFailFastWithOneLogLineUntilItIsBack() throws Exception {
    try (EventsClient client = new EventsClient(config, "t")) {
      for (int i = 0; i < 5; i++) {
        long start = System.nanoTime();
        assertThatThrownBy(() -> client.forward(report(1)))
            .isInstanceOf(UncheckedIOException.class);
        assertThat(Duration.ofNanos(System.nanoTime() - start))
            .isLessThan(Duration.ofMillis(RPC_TIMEOUT_MS));
      }
      assertThat(client.isDown()).isTrue();
      assertThat(lines).hasSize(1).allMatch(l -> l.startsWith("WARN")
          && l.contains(config.eventsSocketPath()));
      try (FakeAgent agent = new FakeAgent(dir)) {
        assertThat(client.forward(report(1)).getAccepted()).isEqualTo(1);
        assertThat(client.isDown()).isFalse();
        assertThat(lines).hasSize(2);
        assertThat(lines.get(1)).startsWith("INFO").contains("reachable again");
      }
    }
  }

  @Test
  void aSilentAgentCostsAtMostTheRpcTimeoutAndTheNextReportReconnects() throws Exception {
    try (FakeAgent agent = new FakeAgent(dir); EventsClient client = new EventsClient(config, "t")) {
      agent.eventsReplyDelayMs = 3_000;
      long start = System.nanoTime();
      assertThatThrownBy(() -> client.forward(report(1)))
          .hasRootCauseInstanceOf(SocketTimeoutException.class)
          .hasMessageContaining(AgentConfig.RPC_TIMEOUT_MS);
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(RPC_TIMEOUT_MS))
          .isLessThan(Duration.ofMillis(RPC_TIMEOUT_MS + 1_000));
      assertThat(client.isDown()).isTrue();

      agent.eventsReplyDelayMs = 0;
      // the late answer to batch 1 went to a closed connection, not to this report
      ReportAck ack = client.forward(report(2));
      assertThat(ack.getAccepted()).isEqualTo(1);
      assertThat(agent.socketConnections).hasValue(2);
      assertThat(client.isDown()).isFalse();
    }
  }

  @Test
  void aConnectionTheAgentClosedIsReplacedWithoutAnOutage() throws Exception {
    try (FakeAgent agent = new FakeAgent(dir); EventsClient client = new EventsClient(config, "t")) {
      assertThat(client.forward(report(1)).getAccepted()).isEqualTo(1);
      agent.dropEventsConnections();
      Thread.sleep(50);
      assertThat(client.forward(report(2)).getAccepted()).isEqualTo(1);
      assertThat(agent.socketConnections).hasValue(2);
    }
    assertThat(lines).isEmpty();
  }

  @Test
  void anAgentRestartCostsNoReport() throws Exception {
    try (EventsClient client = new EventsClient(config, "t")) {
      try (FakeAgent agent = new FakeAgent(dir)) {
        assertThat(client.forward(report(1)).getAccepted()).isEqualTo(1);
      }
      try (FakeAgent agent = new FakeAgent(dir)) {
        assertThat(client.forward(report(2)).getAccepted()).isEqualTo(1);
        assertThat(agent.socketEvents).hasSize(1);
      }
      assertThat(lines).isEmpty();
    }
  }

  @Test
  void aConnectionClosedBeforeTheAnswerIsAFailure() throws Exception {
    try (FakeAgent agent = new FakeAgent(dir); EventsClient client = new EventsClient(config, "t")) {
      agent.answerEvents = false;
      assertThatThrownBy(() -> client.forward(report(1)))
          .hasMessageContaining("closed the connection without an answer");
      assertThat(client.isDown()).isTrue();
      agent.answerEvents = true;
      assertThat(client.forward(report(1)).getAccepted()).isEqualTo(1);
    }
  }

  @Test
  void closeAndInterruptEndAWaitingReportAtOnce() throws Exception {
    AgentConfig patient = new AgentConfig(config.socketPath(), config.eventsSocketPath(),
        Duration.ofMillis(5), Duration.ofSeconds(30), 100, 10, Duration.ofSeconds(5));
    try (FakeAgent agent = new FakeAgent(dir)) {
      agent.eventsReplyDelayMs = 20_000;
      EventsClient client = new EventsClient(patient, "t");
      CompletableFuture<ReportAck> waiting = CompletableFuture.supplyAsync(
          () -> client.forward(report(1)));
      Thread.sleep(300);
      long start = System.nanoTime();
      client.close();
      assertThatThrownBy(() -> waiting.get(5, TimeUnit.SECONDS))
          .hasMessageContaining("closed");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
      assertThat(lines).as("closing is not an outage").isEmpty();

      EventsClient other = new EventsClient(patient, "t");
      Thread sender = new Thread(() -> {
        try {
          other.forward(report(2));
        } catch (UncheckedIOException expected) {
          lines.add("interrupted: " + expected.getCause());
        }
      });
      sender.start();
      Thread.sleep(300);
      start = System.nanoTime();
      sender.interrupt();
      sender.join(5_000);
      assertThat(sender.isAlive()).isFalse();
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
      assertThat(lines).anyMatch(l -> l.contains("InterruptedIOException"));
      other.close();
    }
  }
}
