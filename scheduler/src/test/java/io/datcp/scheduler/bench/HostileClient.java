package io.datcp.scheduler.bench;

import com.linecorp.armeria.client.ClientFactory;
import com.linecorp.armeria.client.grpc.GrpcClients;
import com.linecorp.armeria.common.auth.AuthToken;
import io.datcp.proto.v1.FlowKey;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.QuenchOutcome;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.proto.v1.WatchRequest;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import java.util.stream.IntStream;

/**
 * Issue 18 item 5's attacker: one node with a valid token of its own (host "evil") that sends
 * the largest valid messages it can, as fast as the answers come back, on its own connection:
 * fake jobs with reduces on its own host (as many as jobs.maxReducesPerHost lets it), map-output
 * indexes of jobs.maxReduces partition sizes for them, map completions, lookups whose flow keys
 * name flows.maxMapIds maps, outcome batches of the most outcomes that fit a message, a new
 * reporter id on every batch, and watch.maxStreamsPerHost update streams it never reads. Each
 * kind runs {@code loops} closed loops; refusals are counted, not retried.
 */
public final class HostileClient {
  private static final String HOST = "evil";
  private static final int MAX_REDUCES = 10_000;
  private static final int MAX_MAP_IDS = 1_000;

  private final ShuffleReportServiceGrpc.ShuffleReportServiceStub plugin;
  private final FlowPolicyServiceGrpc.FlowPolicyServiceStub agent;
  private final FlowPolicyServiceGrpc.FlowPolicyServiceStub streams;
  private final int loops;
  private final long callsPerLoop;
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final AtomicLong sent = new AtomicLong();
  private final AtomicLong answered = new AtomicLong();
  private final AtomicLong refusedCalls = new AtomicLong();
  private final AtomicLong refusedEvents = new AtomicLong();
  private final AtomicLong bytesSent = new AtomicLong();
  private final AtomicLong reportSeq = new AtomicLong();
  private final AtomicLong lookupSeq = new AtomicLong();
  private final AtomicLong outcomeSeq = new AtomicLong();
  private final List<ClientCallStreamObserver<?>> unread = new ArrayList<>();
  // Built once and copied with a new id: the attacker shares the benchmark machine's cores,
  // and its own message building is not what is measured. Copies share the repeated fields.
  private final MapOutputIndexed mapOutput = MapOutputIndexed.newBuilder().setHost(HOST)
      .addAllPartitionBytes(Collections.nCopies(MAX_REDUCES, 1_000_000L)).build();
  private final FlowKey wideKey = key(MAX_MAP_IDS);
  private final FlowKey outcomeKey = key(250);

  /**
   * @param factory for its calls
   * @param streamFactory for its unread update streams: on the calls' connection they would
   *     fill its HTTP/2 window and stall the attacker's own calls
   */
  HostileClient(String uri, String token, ClientFactory factory, ClientFactory streamFactory,
      int loops, long callsPerLoop) {
    plugin = GrpcClients.builder(uri).factory(factory).auth(AuthToken.ofOAuth2(token))
        .responseTimeout(Duration.ofSeconds(30))
        .build(ShuffleReportServiceGrpc.ShuffleReportServiceStub.class);
    agent = GrpcClients.builder(uri).factory(factory).auth(AuthToken.ofOAuth2(token))
        .responseTimeout(Duration.ofSeconds(30))
        .build(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
    streams = GrpcClients.builder(uri).factory(streamFactory).auth(AuthToken.ofOAuth2(token))
        .responseTimeout(Duration.ZERO)
        .build(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
    this.loops = loops;
    this.callsPerLoop = callsPerLoop > 0 ? callsPerLoop : Long.MAX_VALUE;
  }

  /** @param unreadStreams update streams to open and never read (watch.maxStreamsPerHost: 8) */
  void start(int unreadStreams) {
    for (int i = 0; i < unreadStreams; i++) {
      // update streams it never reads: the scheduler queues up to watch.maxQueuedUpdates each
      streams.watchPolicies(WatchRequest.newBuilder().setResync(true).build(),
          new ClientResponseObserver<WatchRequest, PolicyUpdate>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<WatchRequest> call) {
              call.disableAutoRequestWithInitial(0);
              synchronized (unread) {
                unread.add(call);
              }
            }

            @Override
            public void onNext(PolicyUpdate u) {}

            @Override
            public void onError(Throwable t) {}

            @Override
            public void onCompleted() {}
          });
    }
    for (int i = 0; i < loops; i++) {
      loop(this::jobsAndMapOutputs, plugin::report, new AtomicLong(callsPerLoop));
      loop(this::lookup, agent::lookupPolicy, new AtomicLong(callsPerLoop));
      loop(this::outcomes, agent::reportOutcomes, new AtomicLong(callsPerLoop));
    }
  }

  /**
   * The attacker in a JVM of its own (LoadBenchmark --hostile-jvm): the honest client's
   * latencies then exclude this JVM's allocation, collections and safepoints. Attacks for
   * {@code args[3]} seconds, then prints its summary line.
   *
   * @param args target URI, node token, closed loops per kind, seconds, unread streams, calls
   *     per loop (0: no limit)
   */
  public static void main(String[] args) throws InterruptedException {
    ClientFactory own = ClientFactory.builder().build();
    ClientFactory ownStreams = ClientFactory.builder().build();
    HostileClient attacker = new HostileClient(args[0], args[1], own, ownStreams,
        Integer.parseInt(args[2]), Long.parseLong(args[5]));
    long start = System.nanoTime();
    attacker.start(Integer.parseInt(args[4]));
    java.util.concurrent.TimeUnit.SECONDS.sleep(Long.parseLong(args[3]));
    attacker.stop();
    System.out.println(attacker.summary((System.nanoTime() - start) / 1e9));
    own.close();
    ownStreams.close();
    System.exit(0);
  }

  void stop() {
    running.set(false);
    synchronized (unread) {
      unread.forEach(s -> s.cancel("benchmark over", null));
    }
  }

  String summary(double secs) {
    return String.format(Locale.ROOT, "attacker         %10.0f calls/s answered (%.0f MB/s sent),"
        + " %d calls refused whole, %d events/outcomes refused one by one", answered.get() / secs,
        bytesSent.get() / 1e6 / secs, refusedCalls.get(), refusedEvents.get());
  }

  private <Q, A> void loop(Supplier<Q> next, BiConsumer<Q, StreamObserver<A>> method,
      AtomicLong callsLeft) {
    if (!running.get() || callsLeft.getAndDecrement() <= 0) {
      return;
    }
    Q request = next.get();
    bytesSent.addAndGet(((com.google.protobuf.MessageLite) request).getSerializedSize());
    sent.incrementAndGet();
    method.accept(request, new StreamObserver<A>() {
      @Override
      public void onNext(A a) {
        answered.incrementAndGet();
        if (a instanceof io.datcp.proto.v1.ReportAck ack) {
          refusedEvents.addAndGet(ack.getRefusedCount());
        }
      }

      @Override
      public void onError(Throwable t) {
        answered.incrementAndGet();
        refusedCalls.incrementAndGet();
        loop(next, method, callsLeft);
      }

      @Override
      public void onCompleted() {
        loop(next, method, callsLeft);
      }
    });
  }

  /**
   * In turn: a batch that starts 1,000 new jobs with a reduce on the attacker's host (beyond
   * jobs.maxReducesPerHost they are refused, so its jobs are those of the first batch),
   * map outputs of its jobs, and map completions of its jobs; each batch under a new reporter
   * id.
   */
  private ShuffleReport jobsAndMapOutputs() {
    long n = reportSeq.getAndIncrement();
    long t = System.currentTimeMillis() * 1_000_000L;
    List<ShuffleEvent> events = new ArrayList<>();
    switch ((int) (n % 3)) {
      case 0 -> {
        for (int j = 0; j < 1000; j++) {
          events.add(ShuffleEvent.newBuilder().setTimeUnixNanos(t).setReduceStarted(
              ReduceStarted.newBuilder().setJobId("job_666_" + n + "_" + j).setReduceId(0)
                  .setHost(HOST).setTotalMaps(100_000).setTotalReduces(MAX_REDUCES)).build());
        }
      }
      case 1 -> {
        // as many 10,000-size map outputs as fit a 1 MB message, for a job started earlier
        String job = "job_666_0_" + (n % 1000);
        for (int m = 0; m < 30; m++) {
          events.add(ShuffleEvent.newBuilder().setTimeUnixNanos(t).setMapOutputIndexed(
              mapOutput.toBuilder().setJobId(job).setMapId((int) (n * 30 + m) % 100_000))
              .build());
        }
      }
      default -> {
        String job = "job_666_0_" + (n % 1000);
        for (int m = 0; m < 1000; m++) {
          events.add(ShuffleEvent.newBuilder().setTimeUnixNanos(t).setMapCompleted(
              MapCompleted.newBuilder().setJobId(job).setReduceId(0).setMapId(m).setHost(HOST)
                  .setRunTimeNanos(1_000_000_000L).setOutputBytes(1_000_000L)
                  .setMapsRunning(-1)).build());
        }
      }
    }
    return ShuffleReport.newBuilder().setReporterId("r" + n).setBatchId(1).addAllEvents(events)
        .build();
  }

  private static FlowKey key(int maps) {
    return FlowKey.newBuilder().setReduceId(0).setSourceHost(HOST)
        .addAllMapIds(IntStream.range(0, maps).boxed().toList()).setSourceAddress("10.66.0.1")
        .setDestinationAddress("10.66.0.2").setDestinationPort(13562).build();
  }

  private static FlowKey key(FlowKey template, String job, long epoch) {
    return template.toBuilder().setJobId(job).setSourcePort((int) (epoch % 60_000))
        .setEpoch((int) epoch).build();
  }

  /** A lookup of a new flow of one of its jobs whose key names flows.maxMapIds maps. */
  private PolicyLookup lookup() {
    long n = lookupSeq.getAndIncrement();
    String job = "job_666_0_" + (n % 1000);
    return PolicyLookup.newBuilder().setJobId(job).setReduceId(0).setBytes(1_000_000L)
        .setFlow(key(wideKey, job, n)).build();
  }

  /** Outcomes of new flows of its jobs: as many with 250 map ids each as fit 1 MB. */
  private FlowOutcomes outcomes() {
    long n = outcomeSeq.getAndIncrement();
    long t = System.currentTimeMillis() * 1_000_000L;
    FlowOutcomes.Builder b = FlowOutcomes.newBuilder().setReporterId("o" + n).setBatchId(1);
    for (int i = 0; i < 1000; i++) {
      String job = "job_666_0_" + i;
      b.addOutcomes(FlowOutcome.newBuilder().setJobId(job).setReduceId(0).setSourceHost(HOST)
          .setDestinationHost(HOST).setBytes(1_000_000L).setStartUnixNanos(t)
          .setFinishUnixNanos(t + 1_000).setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE)
          .setFlow(key(outcomeKey, job, n * 1000 + i)));
    }
    return b.build();
  }
}
