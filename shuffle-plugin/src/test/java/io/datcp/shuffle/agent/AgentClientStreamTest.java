package io.datcp.shuffle.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.datcp.proto.v1.FlowRegistered;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.shuffle.FakeAgent;
import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The plugin's registrations over the RegisterFlowBatches stream (what queued up goes as one
 * batch), and the fall-backs to RegisterFlow.
 */
class AgentClientStreamTest {
  private Path dir;
  private FakeAgent agent;
  private AgentClient client;

  @BeforeEach
  void start() throws Exception {
    dir = Files.createTempDirectory("datcp-stream");
    agent = new FakeAgent(dir);
  }

  @AfterEach
  void stop() throws Exception {
    if (client != null) {
      client.close();
    }
    agent.close();
  }

  private AgentClient client(long rpcTimeoutMs) {
    client = new AgentClient(new AgentConfig(dir.resolve("agent.sock").toString(),
        dir.resolve("events.sock").toString(), Duration.ofMillis(5),
        Duration.ofMillis(rpcTimeoutMs), 100, 10, Duration.ofSeconds(5)), "stream-test");
    return client;
  }

  private static FlowRegistration registration(String job, int port) {
    return FlowRegistration.newBuilder().setJobId(job).setReduceId(0).addMapIds(1)
        .setBytes(1000).setSourceAddress("192.0.2.1").setSourcePort(13562)
        .setDestinationAddress("192.0.2.2").setDestinationPort(port).build();
  }

  private static FlowRegistered get(ListenableFuture<FlowRegistered> f) throws Exception {
    return f.get(5, TimeUnit.SECONDS);
  }

  @Test
  void concurrentRegistrationsShareOneStreamAndEachGetsItsOwnAnswer() throws Exception {
    client(2000);
    ExecutorService callers = Executors.newFixedThreadPool(4);
    try {
      List<Future<Map<Integer, Long>>> parts = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int first = 30000 + t * 100;
        parts.add(callers.submit(() -> {
          Map<Integer, ListenableFuture<FlowRegistered>> sent = new HashMap<>();
          for (int port = first; port < first + 100; port++) {
            sent.put(port, client.registerFlow(registration("job_1_0001", port)));
          }
          Map<Integer, Long> ids = new HashMap<>();
          for (Map.Entry<Integer, ListenableFuture<FlowRegistered>> e : sent.entrySet()) {
            ids.put(e.getKey(), get(e.getValue()).getFlowId());
          }
          return ids;
        }));
      }
      Map<Integer, Long> answered = new HashMap<>();
      for (Future<Map<Integer, Long>> p : parts) {
        answered.putAll(p.get(20, TimeUnit.SECONDS));
      }
      // the agent's id for each 4-tuple is the one its caller got back
      Map<Integer, Long> recorded = new HashMap<>();
      agent.flows.forEach(f -> recorded.put(f.registration().getDestinationPort(), f.flowId()));
      assertThat(answered).hasSize(400).isEqualTo(recorded);
      assertThat(agent.streamedRegistrations.get()).isEqualTo(400);
      assertThat(agent.streamsOpened.get()).isEqualTo(1);
    } finally {
      callers.shutdownNow();
    }
  }

  @Test
  void aBurstGoesInFewerBatchesInOrderAndEachRegistrationGetsItsOwnAnswer() throws Exception {
    client(2000);
    get(client.registerFlow(registration("job_1_0001", 1))); // the stream is open
    List<ListenableFuture<FlowRegistered>> sent = new ArrayList<>();
    for (int port = 100; port < 1100; port++) {
      // every third one refused: answers are matched by sequence, not by position
      sent.add(client.registerFlow(registration(port % 3 == 0 ? "job_bad" : "job_1_0001",
          port)));
    }
    Map<Integer, Long> answered = new HashMap<>();
    for (int i = 0; i < sent.size(); i++) {
      int port = 100 + i;
      ListenableFuture<FlowRegistered> f = sent.get(i);
      if (port % 3 == 0) {
        assertThatThrownBy(() -> get(f)).isInstanceOf(ExecutionException.class)
            .satisfies(e -> assertThat(Status.fromThrowable(e.getCause()).getCode())
                .isEqualTo(Status.Code.INVALID_ARGUMENT));
      } else {
        answered.put(port, get(f).getFlowId());
      }
    }
    // the agent's id for each 4-tuple is the one its caller got back
    Map<Integer, Long> recorded = new HashMap<>();
    agent.flows.forEach(f -> recorded.put(f.registration().getDestinationPort(), f.flowId()));
    recorded.remove(1);
    assertThat(answered).hasSize(667).isEqualTo(recorded);
    assertThat(agent.streamedRegistrations.get()).isEqualTo(1001);
    // sent in the order registered, and a burst shares messages (the event loop sends what
    // queued up while it was busy)
    assertThat(agent.sequencesRead).isSorted().doesNotHaveDuplicates().hasSize(1001);
    assertThat(agent.streamedBatches.get()).isLessThan(1001);
    assertThat(agent.streamsOpened.get()).isEqualTo(1);
  }

  @Test
  void aRefusedItemFailsWithTheAgentsStatusAndTheStreamGoesOn() throws Exception {
    client(2000);
    ListenableFuture<FlowRegistered> bad = client.registerFlow(registration("job_bad", 1));
    ListenableFuture<FlowRegistered> good = client.registerFlow(registration("job_1_0001", 2));
    assertThatThrownBy(() -> get(bad)).isInstanceOf(ExecutionException.class)
        .satisfies(e -> {
          Status s = Status.fromThrowable(e.getCause());
          assertThat(s.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(s.getDescription()).contains("job_id");
        });
    assertThat(get(good).getFlowId()).isPositive();
    assertThat(get(client.registerFlow(registration("job_1_0001", 3))).getFlowId()).isPositive();
    assertThat(agent.streamsOpened.get()).isEqualTo(1);
    assertThat(client.isDown()).isFalse();
  }

  @Test
  void anAgentWithoutTheStreamGetsRegisterFlowCalls() throws Exception {
    agent.streams = false;
    client(2000);
    for (int port = 1; port <= 3; port++) {
      assertThat(get(client.registerFlow(registration("job_1_0001", port))).getFlowId())
          .isPositive();
    }
    assertThat(agent.flows).hasSize(3);
    assertThat(agent.streamedRegistrations.get()).isZero();
    await().atMost(Duration.ofSeconds(2)).until(() -> !client.isDown());
  }

  @Test
  void aBrokenStreamFailsWhatItHeldThenRegisterFlowThenANewStream() throws Exception {
    client(5000);
    get(client.registerFlow(registration("job_1_0001", 1)));
    agent.replyDelayMs = 2000;
    ListenableFuture<FlowRegistered> held = client.registerFlow(registration("job_1_0001", 2));
    await().atMost(Duration.ofSeconds(5)).until(() -> agent.flows.size() == 2);
    long broke = System.nanoTime();
    agent.breakStreams();
    assertThatThrownBy(() -> get(held)).isInstanceOf(ExecutionException.class)
        .satisfies(e -> assertThat(Status.fromThrowable(e.getCause()).getCode())
            .isEqualTo(Status.Code.UNAVAILABLE));
    assertThat(Duration.ofNanos(System.nanoTime() - broke)).isLessThan(Duration.ofSeconds(1));
    assertThat(client.isDown()).isTrue();

    agent.replyDelayMs = 0;
    int streamed = agent.streamedRegistrations.get();
    get(client.registerFlow(registration("job_1_0001", 3))); // within the retry pause: unary
    assertThat(agent.streamedRegistrations.get()).isEqualTo(streamed);
    await().atMost(Duration.ofSeconds(2)).until(() -> !client.isDown());

    Thread.sleep(AgentClient.STREAM_RETRY_MS + 100);
    get(client.registerFlow(registration("job_1_0001", 4)));
    assertThat(agent.streamedRegistrations.get()).isEqualTo(streamed + 1);
    assertThat(agent.streamsOpened.get()).isEqualTo(2);
  }

  @Test
  void anUnansweredRegistrationFailsAfterTheRpcTimeoutInsteadOfHanging() throws Exception {
    client(300);
    agent.replyDelayMs = 3000;
    long start = System.nanoTime();
    ListenableFuture<FlowRegistered> slow = client.registerFlow(registration("job_1_0001", 1));
    // DEADLINE_EXCEEDED, not the stream's cancel: the tracker counts it as "no answer"
    assertThatThrownBy(() -> get(slow)).isInstanceOf(ExecutionException.class)
        .satisfies(e -> assertThat(Status.fromThrowable(e.getCause()).getCode())
            .isEqualTo(Status.Code.DEADLINE_EXCEEDED));
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
  }

  @Test
  void withoutAnAgentRegistrationsFailFast() throws Exception {
    agent.close();
    client(2000);
    long start = System.nanoTime();
    for (int port = 1; port <= 3; port++) {
      ListenableFuture<FlowRegistered> f = client.registerFlow(registration("job_1_0001", port));
      assertThatThrownBy(() -> get(f)).isInstanceOf(ExecutionException.class);
    }
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
    await().atMost(Duration.ofSeconds(2)).until(client::isDown);
    // past the retry pause, with the channel failed: a new stream fails (often inside its own
    // start), and neither it nor the registrations after it may be left waiting for the timeout
    for (int round = 0; round < 3; round++) {
      Thread.sleep(AgentClient.STREAM_RETRY_MS + 100);
      for (int port = 1; port <= 3; port++) {
        long t0 = System.nanoTime();
        ListenableFuture<FlowRegistered> f = client.registerFlow(registration("job_1_0001", port));
        assertThatThrownBy(() -> f.get(1, TimeUnit.SECONDS))
            .isInstanceOf(ExecutionException.class);
        assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(1));
      }
    }
    agent = new FakeAgent(dir); // for stop()
  }
}
