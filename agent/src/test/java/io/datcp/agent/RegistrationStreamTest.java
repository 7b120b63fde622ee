package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.kernel.FlowMeta;
import io.datcp.agent.scheduler.SchedulerClient;
import io.datcp.agent.testing.AgentClient;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.KernelLockExtension;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.FlowRegistrationAnswer;
import io.datcp.proto.v1.FlowRegistrationAnswers;
import io.datcp.proto.v1.FlowRegistrationBatch;
import io.datcp.proto.v1.FlowRegistrationItem;
import io.datcp.proto.v1.PolicyLookup;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * RegisterFlows and RegisterFlowBatches over the Unix socket with the real kernel (root; holds
 * the kernel lock): each item is handled as RegisterFlow would handle it, answered with its
 * sequence (on batches: one message per batch, answers in item order), and a refused item
 * neither changes anything nor ends the stream; a cancelled stream leaves what it registered
 * and nothing else.
 */
@ExtendWith(KernelLockExtension.class)
class RegistrationStreamTest {
  private static final String JOB = "job_1700000000000_0101";

  @TempDir
  Path dir;
  private FakeScheduler scheduler;
  private AgentServer agent;
  private AgentClient client;

  private void start(Map<String, String> extra) throws Exception {
    scheduler = new FakeScheduler().start();
    Map<String, String> s = TestAgents.settings(dir, scheduler.target(), 13562);
    s.putAll(extra);
    agent = TestAgents.start(s);
    client = new AgentClient(dir.resolve("agent.sock"));
  }

  @AfterEach
  void stop() throws Exception {
    if (client != null) {
      client.close();
    }
    if (agent != null) {
      agent.close();
    }
    if (scheduler != null) {
      scheduler.close();
    }
    TestAgents.deleteTestEntries(-1);
  }

  /** A streaming call whose answer messages land in a queue and whose end is kept. */
  private abstract static class Call<Q, A> implements ClientResponseObserver<Q, A> {
    final BlockingQueue<A> answers = new LinkedBlockingQueue<>();
    final CompletableFuture<Status> end = new CompletableFuture<>();
    ClientCallStreamObserver<Q> requests;

    @Override
    public void beforeStart(ClientCallStreamObserver<Q> r) {
      requests = r;
    }

    A next() throws InterruptedException {
      A a = answers.poll(10, TimeUnit.SECONDS);
      assertThat(a).as("an answer within 10 s").isNotNull();
      return a;
    }

    @Override
    public void onNext(A a) {
      answers.add(a);
    }

    @Override
    public void onError(Throwable t) {
      end.complete(Status.fromThrowable(t));
    }

    @Override
    public void onCompleted() {
      end.complete(Status.OK);
    }
  }

  /** A RegisterFlows call whose answers land in a queue. */
  private final class Stream extends Call<FlowRegistrationItem, FlowRegistrationAnswer> {
    private final boolean reading;

    Stream() {
      this(true);
    }

    /** reading = false: the caller never takes an answer. */
    Stream(boolean reading) {
      this.reading = reading;
      client.async().registerFlows(this);
    }

    @Override
    public void beforeStart(ClientCallStreamObserver<FlowRegistrationItem> r) {
      super.beforeStart(r);
      if (!reading) {
        r.disableAutoRequestWithInitial(0);
      }
    }

    void send(long sequence, FlowRegistration r) {
      requests.onNext(FlowRegistrationItem.newBuilder().setSequence(sequence)
          .setRegistration(r).build());
    }
  }

  /** A RegisterFlowBatches call whose answer messages land in a queue. */
  private final class Batches extends Call<FlowRegistrationBatch, FlowRegistrationAnswers> {
    Batches() {
      client.async().registerFlowBatches(this);
    }

    /** Sends one batch, item i with sequence first + i, and returns its answers. */
    List<FlowRegistrationAnswer> send(long first, List<FlowRegistration> regs)
        throws InterruptedException {
      FlowRegistrationBatch.Builder b = FlowRegistrationBatch.newBuilder();
      for (int i = 0; i < regs.size(); i++) {
        FlowRegistrationItem.Builder item = b.addItemsBuilder().setSequence(first + i);
        if (regs.get(i) != null) {
          item.setRegistration(regs.get(i));
        }
      }
      requests.onNext(b.build());
      return next().getAnswersList();
    }
  }

  private double openStreams() {
    return agent.meters().get("datcp.agent.registration.streams").gauge().value();
  }

  @Test
  void eachItemIsWrittenIntoTheKernelAndAnsweredWithItsSequence() throws Exception {
    start(Map.of());
    Stream s = new Stream();
    List<FlowRegistration> sent = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      FlowRegistration r = TestAgents.registration(JOB, 1 + i % 5, 41000 + i)
          .setBytes(1000 + i).build();
      sent.add(r);
      s.send(7L * i + 3, r); // any numbers the caller likes
    }
    for (int i = 0; i < 50; i++) {
      FlowRegistrationAnswer a = s.next();
      int item = (int) ((a.getSequence() - 3) / 7);
      assertThat(a.getSequence()).isEqualTo(7L * item + 3);
      assertThat(a.hasRegistered()).isTrue();
      FlowRegistration r = sent.get(item);
      // the answer is about its own item: its 4-tuple, and its size in the kernel
      assertThat(a.getRegistered().getPolicy().getFlow().getDestinationPort())
          .isEqualTo(r.getDestinationPort());
      assertThat(a.getRegistered().getPolicy().getFlow().getSourceAddress())
          .isEqualTo(r.getSourceAddress());
      assertThat(a.getRegistered().getInKernel()).isTrue();
      FlowMeta m = agent.kernel().flowMeta(TestAgents.tuple(r)).orElseThrow();
      assertThat(m.sizeBytes()).isEqualTo(r.getBytes());
      assertThat(m.epoch()).isEqualTo(a.getRegistered().getEpoch());
    }
    assertThat(agent.registry().liveFlows()).isEqualTo(50);
    s.requests.onCompleted();
    assertThat(s.end.get(10, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
    await().atMost(Duration.ofSeconds(5)).until(() -> openStreams() == 0);
  }

  @Test
  void aRefusedItemGetsRegisterFlowsErrorAndTheStreamGoesOn() throws Exception {
    start(Map.of());
    FlowRegistration good = TestAgents.registration(JOB, 2, 42001).build();
    FlowRegistration other = TestAgents.registration("job_1700000000000_0102", 2, 42001)
        .build(); // same 4-tuple, another job: the live flow owns it
    FlowRegistration bad = TestAgents.registration(JOB, 2, 42002).setBytes(-5).build();
    Stream s = new Stream();
    s.send(1, good);
    s.send(2, bad);
    s.requests.onNext(FlowRegistrationItem.newBuilder().setSequence(3).build());
    s.send(4, other);
    s.send(5, TestAgents.registration(JOB, 2, 42003).build());

    assertThat(s.next().getSequence()).isEqualTo(1);
    FlowRegistrationAnswer a2 = s.next();
    assertThat(a2.getSequence()).isEqualTo(2);
    assertThat(a2.getError().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
    assertThat(a2.getError().getMessage()).startsWith("bytes: -5 is not in 1..");
    FlowRegistrationAnswer a3 = s.next();
    assertThat(a3.getError().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
    assertThat(a3.getError().getMessage()).isEqualTo("registration: missing");
    FlowRegistrationAnswer a4 = s.next();
    assertThat(a4.getError().getCode()).isEqualTo(Status.Code.ALREADY_EXISTS.value());
    assertThat(a4.getError().getMessage()).contains(JOB);
    FlowRegistrationAnswer a5 = s.next();
    assertThat(a5.getSequence()).isEqualTo(5);
    assertThat(a5.getRegistered().getInKernel()).isTrue();

    // the refused items changed nothing: the bad tuple has no entry, the owner's is intact
    assertThat(agent.kernel().flowMeta(TestAgents.tuple(bad))).isEmpty();
    assertThat(agent.kernel().flowMeta(TestAgents.tuple(good)).orElseThrow().epoch())
        .isEqualTo(1);
    assertThat(agent.registry().liveFlows()).isEqualTo(2);
    assertThat(s.end).isNotDone();
  }

  @Test
  void overTheRateLimitAnItemIsResourceExhausted() throws Exception {
    start(Map.of("local.registerRatePerSecond", "0.001", "local.registerBurst", "2"));
    Stream s = new Stream();
    for (int i = 0; i < 3; i++) {
      s.send(i, TestAgents.registration(JOB, 3, 43000 + i).build());
    }
    assertThat(s.next().hasRegistered()).isTrue();
    assertThat(s.next().hasRegistered()).isTrue();
    FlowRegistrationAnswer third = s.next();
    assertThat(third.getSequence()).isEqualTo(2);
    assertThat(third.getError().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED.value());
    assertThat(third.getError().getMessage()).contains("local.registerRatePerSecond");
    assertThat(agent.registry().liveFlows()).isEqualTo(2);
  }

  @Test
  void aCancelledStreamKeepsWhatItRegisteredAndLeavesNothingOpen() throws Exception {
    start(Map.of());
    Stream s = new Stream();
    List<FlowRegistrationAnswer> accepted = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      s.send(i, TestAgents.registration(JOB, 4, 44000 + i).build());
    }
    for (int i = 0; i < 20; i++) {
      accepted.add(s.next());
    }
    assertThat(openStreams()).isEqualTo(1);
    // more items, then the caller goes away mid-stream
    for (int i = 20; i < 40; i++) {
      s.send(i, TestAgents.registration(JOB, 4, 44000 + i).build());
    }
    s.requests.cancel("caller gone", null);
    await().atMost(Duration.ofSeconds(5)).until(() -> openStreams() == 0);

    // the 20 answered stay registered, in the kernel, and can be ended as usual
    int live = agent.registry().liveFlows();
    assertThat(live).isBetween(20, 40); // the 20 sent with the cancel may or may not have landed
    for (FlowRegistrationAnswer a : accepted) {
      assertThat(agent.kernel().flowMeta(TestAgents.tuple(
          TestAgents.registration(JOB, 4, a.getRegistered().getPolicy().getFlow()
              .getDestinationPort()).build()))).isPresent();
    }
    for (FlowRegistrationAnswer a : accepted) {
      assertThat(client.blocking().endFlow(FlowEnd.newBuilder()
          .setFlowId(a.getRegistered().getFlowId())
          .setReason(FlowEndReason.FLOW_END_REASON_ABORTED).build()).getKnown()).isTrue();
    }
    assertThat(agent.registry().liveFlows()).isEqualTo(live - 20);

    // and a new stream works as the first did
    Stream again = new Stream();
    again.send(99, TestAgents.registration(JOB, 5, 45000).build());
    assertThat(again.next().getRegistered().getInKernel()).isTrue();
    assertThat(openStreams()).isEqualTo(1);
  }

  @Test
  void aStreamWhoseCallerStopsReadingStopsBeingRead() throws Exception {
    start(Map.of());
    // a raw call with no reads requested: its answers pile up in flow control, not the agent
    Stream s = new Stream(false);
    for (int i = 0; i < 20_000; i++) {
      s.send(i, TestAgents.registration(JOB, 6, 1 + i).build());
    }
    // the agent stops taking items once its answers cannot be sent: far fewer than were sent
    int[] last = {-1};
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500)).until(() -> {
      int now = agent.registry().liveFlows();
      boolean still = now == last[0];
      last[0] = now;
      return still && now > 0;
    });
    assertThat(last[0]).isLessThan(20_000);
    assertThat(s.answers).isEmpty();
    s.requests.cancel("done", null);
    await().atMost(Duration.ofSeconds(5)).until(() -> openStreams() == 0);
  }

  @Test
  void aBatchIsAnsweredByOneMessageInItemOrderEachAnswerAboutItsOwnItem() throws Exception {
    start(Map.of());
    Batches b = new Batches();
    for (int round = 0; round < 3; round++) {
      List<FlowRegistration> sent = new ArrayList<>();
      for (int i = 0; i < 40; i++) {
        sent.add(TestAgents.registration(JOB, 1 + i % 5, 46000 + i).setBytes(1000 + i).build());
      }
      List<FlowRegistrationAnswer> answers = b.send(1000L * round, sent);
      assertThat(answers).hasSize(40);
      for (int i = 0; i < 40; i++) {
        FlowRegistrationAnswer a = answers.get(i);
        FlowRegistration r = sent.get(i);
        assertThat(a.getSequence()).isEqualTo(1000L * round + i);
        assertThat(a.getRegistered().getPolicy().getFlow().getDestinationPort())
            .isEqualTo(r.getDestinationPort());
        assertThat(a.getRegistered().getInKernel()).isTrue();
        // each round is the connections' next response: a new epoch, the item's own size
        assertThat(a.getRegistered().getEpoch()).isEqualTo(round + 1);
        FlowMeta m = agent.kernel().flowMeta(TestAgents.tuple(r)).orElseThrow();
        assertThat(m.sizeBytes()).isEqualTo(r.getBytes());
        assertThat(m.epoch()).isEqualTo(round + 1);
      }
    }
    assertThat(openStreams()).isEqualTo(1);
    b.requests.onCompleted();
    assertThat(b.end.get(10, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.OK);
    await().atMost(Duration.ofSeconds(5)).until(() -> openStreams() == 0);
  }

  @Test
  void refusedItemsOfABatchGetRegisterFlowsErrorsAndChangeNothing() throws Exception {
    start(Map.of());
    FlowRegistration good = TestAgents.registration(JOB, 2, 47001).build();
    FlowRegistration other = TestAgents.registration("job_1700000000000_0102", 2, 47001)
        .build(); // same 4-tuple, another job: the live flow owns it
    FlowRegistration bad = TestAgents.registration(JOB, 2, 47002).setBytes(-5).build();
    FlowRegistration badAddress = TestAgents.registration(JOB, 2, 47003)
        .setSourceAddress("evil.example").build();
    Batches b = new Batches();
    List<FlowRegistrationAnswer> a = b.send(1, Arrays.asList(good, bad, null, other,
        badAddress, TestAgents.registration(JOB, 2, 47004).build()));
    assertThat(a).extracting(FlowRegistrationAnswer::getSequence).containsExactly(1L, 2L, 3L,
        4L, 5L, 6L);
    assertThat(a.get(0).getRegistered().getInKernel()).isTrue();
    assertThat(a.get(1).getError().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
    assertThat(a.get(1).getError().getMessage()).startsWith("bytes: -5 is not in 1..");
    assertThat(a.get(2).getError().getMessage()).isEqualTo("registration: missing");
    assertThat(a.get(3).getError().getCode()).isEqualTo(Status.Code.ALREADY_EXISTS.value());
    assertThat(a.get(3).getError().getMessage()).contains(JOB);
    assertThat(a.get(4).getError().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
    assertThat(a.get(4).getError().getMessage()).startsWith("source_address: 'evil.example'");
    assertThat(a.get(5).getRegistered().getInKernel()).isTrue();
    assertThat(agent.kernel().flowMeta(TestAgents.tuple(bad))).isEmpty();
    assertThat(agent.kernel().flowMeta(TestAgents.tuple(good)).orElseThrow().epoch())
        .isEqualTo(1);
    assertThat(agent.registry().liveFlows()).isEqualTo(2);

    // a batch over the bound is refused whole, item by item, and the stream goes on
    List<FlowRegistration> tooMany = new ArrayList<>();
    for (int i = 0; i <= 256; i++) {
      tooMany.add(TestAgents.registration(JOB, 3, 48000 + i).build());
    }
    List<FlowRegistrationAnswer> refused = b.send(100, tooMany);
    assertThat(refused).hasSize(257).allSatisfy(r -> {
      assertThat(r.getError().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
      assertThat(r.getError().getMessage()).isEqualTo("items: 257 items in one batch, allowed "
          + "1..256");
    });
    assertThat(refused.get(256).getSequence()).isEqualTo(356);
    assertThat(agent.registry().liveFlows()).isEqualTo(2);
    assertThat(b.send(500, List.of(TestAgents.registration(JOB, 3, 48000).build())).get(0)
        .getRegistered().getInKernel()).isTrue();
    assertThat(b.end).isNotDone();
  }

  @Test
  void overTheRateLimitABatchItemIsResourceExhausted() throws Exception {
    start(Map.of("local.registerRatePerSecond", "0.001", "local.registerBurst", "2"));
    Batches b = new Batches();
    List<FlowRegistrationAnswer> a = b.send(0, List.of(
        TestAgents.registration(JOB, 3, 49000).build(),
        TestAgents.registration(JOB, 3, 49001).build(),
        TestAgents.registration(JOB, 3, 49002).build()));
    assertThat(a.get(0).hasRegistered()).isTrue();
    assertThat(a.get(1).hasRegistered()).isTrue();
    assertThat(a.get(2).getError().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED.value());
    assertThat(a.get(2).getError().getMessage()).contains("local.registerRatePerSecond");
    assertThat(agent.registry().liveFlows()).isEqualTo(2);
  }

  @Test
  void policyLookupsAreBuiltAndSentOffTheCallersThread() throws Exception {
    try (FakeScheduler fake = new FakeScheduler().start()) {
      Map<String, String> s = TestAgents.settings(dir, fake.target(), 13562);
      try (SchedulerClient c = new SchedulerClient(AgentConf.fromMap(s), "test-host",
          new SimpleMeterRegistry())) {
        CompletableFuture<Thread> builtOn = new CompletableFuture<>();
        c.lookup(() -> {
          builtOn.complete(Thread.currentThread());
          return PolicyLookup.newBuilder().setJobId(JOB).build();
        }, p -> { });
        assertThat(builtOn.get(5, TimeUnit.SECONDS)).isNotSameAs(Thread.currentThread());
        assertThat(builtOn.get().getName()).isEqualTo("datcp-policy-lookup");
        await().atMost(Duration.ofSeconds(5)).until(() -> fake.lookups.size() == 1);
      }
    }
  }
}
