package io.datcp.shuffle.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.shuffle.FakeAgent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

class EventForwarderTest {

  private static ShuffleEvent event(int reduce) {
    return Events.now().setShuffleFinished(
        ShuffleFinished.newBuilder().setJobId("job_1_0001").setReduceId(reduce)).build();
  }

  private static AgentConfig config(Path socket, int queue) {
    return config(socket, queue, 500);
  }

  private static AgentConfig config(Path socket, int queue, int rpcTimeoutMs) {
    Configuration conf = new Configuration(false);
    conf.set(AgentConfig.AGENT_SOCKET, socket.toString());
    conf.setInt(AgentConfig.REPORT_QUEUE_SIZE, queue);
    conf.setInt(AgentConfig.RPC_TIMEOUT_MS, rpcTimeoutMs);
    return AgentConfig.from(conf);
  }

  @Test
  void withoutAnAgentEventsAreDroppedWithoutBlockingAndDeliveredOnceItIsBack() throws Exception {
    Path dir = Files.createTempDirectory("datcp-fwd");
    Path socket = dir.resolve("agent.sock");
    try (AgentClient client = new AgentClient(config(socket, 10), "test");
        EventForwarder forwarder = new EventForwarder(client, "host-a")) {
      long start = System.nanoTime();
      int accepted = 0;
      for (int i = 0; i < 1000; i++) {
        accepted += forwarder.offer(event(i)) ? 1 : 0;
      }
      // loose: a blocking offer would wait out the 500 ms rpc timeout per event (minutes)
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
      int sent = accepted;
      assertThat(accepted).isLessThanOrEqualTo(10 + 500); // queue + at most one batch in hand
      assertThat(forwarder.dropped()).isEqualTo(1000 - accepted);
      await().atMost(Duration.ofSeconds(5)).until(client::isDown);

      try (FakeAgent agent = new FakeAgent(dir)) {
        await().atMost(Duration.ofSeconds(10)).until(() -> agent.events.size() == sent);
        // the agent records a batch before its reply reaches the forwarder's counters
        await().atMost(Duration.ofSeconds(5)).until(() -> forwarder.delivered() == sent);
        assertThat(client.isDown()).isFalse();
        assertThat(agent.events).hasSize(sent);
        assertThat(forwarder.offer(event(5000))).isTrue();
        await().atMost(Duration.ofSeconds(5)).until(() -> agent.events.size() == sent + 1);
      }
    }
  }

  @Test
  void badConfigurationNamesTheKey() {
    Configuration conf = new Configuration(false);
    conf.set(AgentConfig.REGISTER_TIMEOUT_MS, "soon");
    assertThatThrownBy(() -> AgentConfig.from(conf))
        .hasMessageContaining(AgentConfig.REGISTER_TIMEOUT_MS).hasMessageContaining("soon");
    Configuration noSuspend = new Configuration(false);
    noSuspend.set(AgentConfig.SUSPEND_MAX_MS, "0"); // a suspend must end by itself
    assertThatThrownBy(() -> AgentConfig.from(noSuspend))
        .hasMessageContaining(AgentConfig.SUSPEND_MAX_MS).hasMessageContaining("[1, ");
    Configuration relative = new Configuration(false);
    relative.set(AgentConfig.AGENT_SOCKET, "agent.sock");
    assertThatThrownBy(() -> AgentConfig.from(relative))
        .hasMessageContaining(AgentConfig.AGENT_SOCKET);
    // the agent refuses a Forward of more events, and a refused batch would be sent again
    Configuration big = new Configuration(false);
    big.set(AgentConfig.REPORT_BATCH_SIZE, "1001");
    assertThatThrownBy(() -> AgentConfig.from(big))
        .hasMessageContaining(AgentConfig.REPORT_BATCH_SIZE).hasMessageContaining("1000");
    AgentConfig defaults = AgentConfig.from(new Configuration(false));
    assertThat(defaults.socketPath()).isEqualTo(AgentConfig.DEFAULT_AGENT_SOCKET);
    assertThat(defaults.eventsSocketPath()).isEqualTo("/run/datcp/events.sock");
    assertThat(defaults.registerTimeout()).isEqualTo(Duration.ofMillis(200));
    assertThat(defaults.suspendMax()).isEqualTo(Duration.ofSeconds(5));

    Configuration moved = new Configuration(false);
    moved.set(AgentConfig.AGENT_SOCKET, "/var/run/x/agent.sock");
    assertThat(AgentConfig.from(moved).eventsSocketPath()).isEqualTo("/var/run/x/events.sock");
    moved.set(AgentConfig.EVENTS_SOCKET, "/tmp/ev.sock");
    assertThat(AgentConfig.from(moved).eventsSocketPath()).isEqualTo("/tmp/ev.sock");
    for (String bad : new String[] {"events.sock", "/var/run/x/agent.sock",
        "/" + "x".repeat(107)}) {
      moved.set(AgentConfig.EVENTS_SOCKET, bad);
      assertThatThrownBy(() -> AgentConfig.from(moved))
          .hasMessageContaining(AgentConfig.EVENTS_SOCKET).hasMessageContaining(bad);
    }
  }

  @Test
  void aConnectingForwarderQueuesEventsOfferedBeforeItsClientIsUpAndClosesTheClient()
      throws Exception {
    Path dir = Files.createTempDirectory("datcp-fwd");
    try (FakeAgent agent = new FakeAgent(dir)) {
      EventForwarder forwarder = EventForwarder.connecting(config(agent.socket, 10), "test",
          "host-a");
      // offered at once, before the sender thread can have built the client
      assertThat(forwarder.offer(event(1))).isTrue();
      assertThat(forwarder.offer(event(2))).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> agent.events.size() == 2);
      assertThat(agent.socketEvents).as("over the events socket").hasSize(2);
      forwarder.close();
      assertThat(forwarder.delivered()).isEqualTo(2);
      assertThat(forwarder.dropped()).isZero();
      assertThat(forwarder.offer(event(3))).isFalse();
      await().atMost(Duration.ofSeconds(5)).until(() -> agent.eventsConnections() == 0);
    }
  }

  @Test
  void eventsOfAReduceThatEndsBeforeItsClientIsUpAreStillDelivered() throws Exception {
    Path dir = Files.createTempDirectory("datcp-fwd");
    try (FakeAgent agent = new FakeAgent(dir)) {
      AgentConfig config = config(agent.socket, 10);
      // the client's start-up (on a busy host) outlasts a short reduce's shuffle
      EventForwarder forwarder = new EventForwarder(config, () -> {
        try {
          Thread.sleep(500);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return new EventsClient(config, "slow");
      }, true, "host-a");
      assertThat(forwarder.offer(event(1))).isTrue();
      assertThat(forwarder.offer(event(2))).isTrue();
      forwarder.close();
      assertThat(forwarder.delivered()).isEqualTo(2);
      assertThat(agent.socketEvents).hasSize(2);
    }
  }

  /**
   * A reduce's first calls on a cold JVM, on a busy host, can take longer than one rpc timeout
   * in all: close() used to give the queue one rpc timeout and then cancel the call in flight,
   * and a short reduce lost its ShuffleFinished (ShuffleOnMiniYarnTest failed in CI this way).
   */
  @Test
  void closeWaitsForTheCallInFlightAndSendsWhatIsQueuedBehindIt() throws Exception {
    Path dir = Files.createTempDirectory("datcp-fwd");
    try (FakeAgent agent = new FakeAgent(dir);
        AgentClient client = new AgentClient(config(agent.socket, 10, 3000), "test")) {
      // each call inside the rpc timeout, the two together beyond it
      agent.forwardDelaysMs.add(2000L);
      agent.forwardDelaysMs.add(2000L);
      EventForwarder forwarder = new EventForwarder(client, "host-a");
      ShuffleEvent first = event(1);
      ShuffleEvent second = event(2);
      assertThat(forwarder.offer(first)).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> agent.forwardsStarted.get() == 1);
      assertThat(forwarder.offer(second)).isTrue();
      forwarder.close();
      assertThat(agent.events).containsExactly(first, second);
      assertThat(forwarder.delivered()).isEqualTo(2);
      assertThat(forwarder.dropped()).isZero();
    }
  }

  /** The same on the reduce side's own path: the events socket, the client the forwarder built. */
  @Test
  void overTheEventsSocketCloseWaitsForTheReportInFlightAndSendsWhatIsQueuedBehindIt()
      throws Exception {
    Path dir = Files.createTempDirectory("datcp-fwd");
    try (FakeAgent agent = new FakeAgent(dir)) {
      agent.eventsReplyDelayMs = 2000; // each report inside the rpc timeout, two beyond it
      EventForwarder forwarder = EventForwarder.connecting(config(agent.socket, 10, 3000),
          "test", "host-a");
      ShuffleEvent first = event(1);
      ShuffleEvent second = event(2);
      assertThat(forwarder.offer(first)).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> agent.socketReportsRead.get() == 1);
      assertThat(forwarder.offer(second)).isTrue();
      forwarder.close();
      assertThat(agent.socketEvents).containsExactly(first, second);
      assertThat(forwarder.delivered()).isEqualTo(2);
      assertThat(forwarder.dropped()).isZero();
    }
  }

  @Test
  void closeWhileTheAgentIsDownStillTriesWhatIsQueuedOnce() throws Exception {
    Path dir = Files.createTempDirectory("datcp-fwd");
    try (FakeAgent agent = new FakeAgent(dir);
        AgentClient client = new AgentClient(config(agent.socket, 10, 500), "test")) {
      agent.forwardDelaysMs.add(1500L); // the first call outlasts its deadline
      EventForwarder forwarder = new EventForwarder(client, "host-a");
      ShuffleEvent only = event(1);
      assertThat(forwarder.offer(only)).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(client::isDown);
      forwarder.close();
      assertThat(agent.events).containsExactly(only);
      assertThat(forwarder.delivered()).isEqualTo(1);
    }
  }

  @Test
  void closeWithoutAnAgentDropsWhatIsQueuedWithoutWaitingOutTheTimeout() throws Exception {
    Path dir = Files.createTempDirectory("datcp-fwd");
    try (AgentClient client = new AgentClient(config(dir.resolve("agent.sock"), 10, 5000),
        "test")) {
      EventForwarder forwarder = new EventForwarder(client, "host-a");
      assertThat(forwarder.offer(event(1))).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(client::isDown);
      assertThat(forwarder.offer(event(2))).isTrue();
      long start = System.nanoTime();
      forwarder.close();
      // loose: an absent agent refuses at once; waiting out the close bound would take 10 s
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(2500));
      assertThat(forwarder.dropped()).isEqualTo(2);
      assertThat(forwarder.delivered()).isZero();
    }
  }

  @Test
  void overTheEventsSocketABatchWhoseAnswerWasLateIsSentAgainAndTakenOnce() throws Exception {
    Path dir = Files.createTempDirectory("datcp-fwd");
    try (FakeAgent agent = new FakeAgent(dir)) {
      AgentConfig config = config(agent.socket, 100);
      // the agent takes the first batch only after the client has given up waiting for it
      agent.eventsReplyDelayMs = 800;
      EventForwarder forwarder = EventForwarder.connecting(config, "test", "host-a");
      for (int i = 0; i < 3; i++) {
        assertThat(forwarder.offer(event(i))).isTrue();
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> agent.socketReports.get() >= 1);
      agent.eventsReplyDelayMs = 0;
      await().atMost(Duration.ofSeconds(10)).until(() -> forwarder.delivered() == 3);
      forwarder.close();
      assertThat(agent.socketEvents).hasSize(3);
      assertThat(agent.events).hasSize(3);
      assertThat(agent.socketConnections.get()).as("reconnected after the timeout")
          .isGreaterThanOrEqualTo(2);
      assertThat(forwarder.dropped()).isZero();
    }
  }

  @Test
  void overTheEventsSocketEventsWaitOutAnOutageAndGoWhenTheAgentIsBack() throws Exception {
    Path dir = Files.createTempDirectory("datcp-fwd");
    AgentConfig config = config(dir.resolve("agent.sock"), 10);
    EventForwarder forwarder = EventForwarder.connecting(config, "test", "host-a");
    try {
      int accepted = 0;
      for (int i = 0; i < 1000; i++) {
        accepted += forwarder.offer(event(i)) ? 1 : 0;
      }
      int sent = accepted;
      assertThat(forwarder.dropped()).isEqualTo(1000 - accepted);
      Thread.sleep(300); // a few failed attempts
      try (FakeAgent agent = new FakeAgent(dir)) {
        await().atMost(Duration.ofSeconds(10)).until(() -> forwarder.delivered() == sent);
        assertThat(agent.socketEvents).hasSize(sent);
      }
    } finally {
      forwarder.close();
    }
  }
}
