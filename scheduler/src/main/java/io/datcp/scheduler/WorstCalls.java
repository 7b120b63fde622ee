package io.datcp.scheduler;

import com.google.protobuf.MessageLite;
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
import io.datcp.proto.v1.ReportAck;
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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.LongFunction;
import java.util.stream.IntStream;

/**
 * One node sending the largest valid messages it can (issue 18 item 5's attacker), as fast as
 * the answers come back: fake jobs with reduces on its own host, map-output indexes of
 * jobs.maxReduces partition sizes, map completions, lookups whose flow keys name
 * flows.maxMapIds maps, outcome batches of the most outcomes that fit a message (each batch
 * under a reporter id of its own), and update streams it never reads. Each kind of call runs
 * closed loops; refusals are counted, not retried. The hostile-load benchmark's attacker sends
 * them; the start-up drill ({@link StartupDrill}) sends them to a throwaway instance so that the
 * JIT has compiled their paths before an attacker arrives.
 */
public final class WorstCalls {
  private static final int MAX_REDUCES = 10_000;
  private static final int MAX_MAP_IDS = 1_000;
  private static final int JOBS = 1_000;

  private final String host;
  private final String jobPrefix;
  private final ShuffleReportServiceGrpc.ShuffleReportServiceStub plugin;
  private final FlowPolicyServiceGrpc.FlowPolicyServiceStub agent;
  private final FlowPolicyServiceGrpc.FlowPolicyServiceStub streams;
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final AtomicLong answered = new AtomicLong();
  private final AtomicLong refusedCalls = new AtomicLong();
  private final AtomicLong refusedEvents = new AtomicLong();
  private final AtomicLong bytesSent = new AtomicLong();
  private final AtomicLong inFlight = new AtomicLong();
  private final List<ClientCallStreamObserver<?>> unread = new ArrayList<>();
  // Built once and copied with a new id: copies share the repeated fields, so building the
  // messages costs the sender little next to what the receiver does with them (the attacker
  // shares the benchmark machine's cores, and its own message building is not measured).
  private final MapOutputIndexed mapOutput;
  private final FlowKey wideKey;
  private final FlowKey outcomeKey;

  /**
   * @param uri the scheduler's gRPC address, http://HOST:PORT
   * @param host the sending node's host name (its token's)
   * @param jobPrefix job ids are {@code jobPrefix + n + "_" + j}, e.g. "job_666_"
   * @param factory for its calls
   * @param streamFactory for its unread update streams: on the calls' connection they would
   *     fill its HTTP/2 window and stall its own calls
   */
  public WorstCalls(String uri, String token, String host, String jobPrefix,
      ClientFactory factory, ClientFactory streamFactory) {
    this.host = host;
    this.jobPrefix = jobPrefix;
    plugin = GrpcClients.builder(uri).factory(factory).auth(AuthToken.ofOAuth2(token))
        .responseTimeout(Duration.ofSeconds(30))
        .build(ShuffleReportServiceGrpc.ShuffleReportServiceStub.class);
    agent = GrpcClients.builder(uri).factory(factory).auth(AuthToken.ofOAuth2(token))
        .responseTimeout(Duration.ofSeconds(30))
        .build(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
    streams = GrpcClients.builder(uri).factory(streamFactory).auth(AuthToken.ofOAuth2(token))
        .responseTimeout(Duration.ZERO)
        .build(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
    mapOutput = MapOutputIndexed.newBuilder().setHost(host)
        .addAllPartitionBytes(Collections.nCopies(MAX_REDUCES, 1_000_000L)).build();
    wideKey = key(MAX_MAP_IDS);
    outcomeKey = key(250);
  }

  /**
   * Opens {@code unreadStreams} update streams it never reads (the scheduler queues up to
   * watch.maxQueuedUpdates each) and starts {@code loops} closed loops of each kind of call,
   * each ending after {@code callsPerLoop} calls or at {@link #stop}.
   */
  public void start(int unreadStreams, int loops, long callsPerLoop) {
    for (int i = 0; i < unreadStreams; i++) {
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
    AtomicLong reports = new AtomicLong();
    AtomicLong lookups = new AtomicLong();
    AtomicLong outcomes = new AtomicLong();
    for (int i = 0; i < loops; i++) {
      loop(this::report, reports, plugin::report, new AtomicLong(callsPerLoop));
      loop(this::lookup, lookups, agent::lookupPolicy, new AtomicLong(callsPerLoop));
      loop(this::outcomes, outcomes, agent::reportOutcomes, new AtomicLong(callsPerLoop));
    }
  }

  /** No new calls from now on; the unread streams are cancelled. */
  public void stop() {
    running.set(false);
    synchronized (unread) {
      unread.forEach(s -> s.cancel("over", null));
    }
  }

  /** Calls answered, refused whole or not. */
  public long answered() {
    return answered.get();
  }

  /** Calls refused whole (an error status). */
  public long refusedCalls() {
    return refusedCalls.get();
  }

  /** Events and outcomes of accepted calls refused one by one. */
  public long refusedEvents() {
    return refusedEvents.get();
  }

  /** Bytes of the messages sent. */
  public long bytesSent() {
    return bytesSent.get();
  }

  /** Calls sent and not answered yet. */
  public long inFlight() {
    return inFlight.get();
  }

  private <Q extends MessageLite, A> void loop(LongFunction<Q> next, AtomicLong seq,
      BiConsumer<Q, StreamObserver<A>> method, AtomicLong callsLeft) {
    if (!running.get() || callsLeft.getAndDecrement() <= 0) {
      return;
    }
    Q request = next.apply(seq.getAndIncrement());
    bytesSent.addAndGet(request.getSerializedSize());
    inFlight.incrementAndGet();
    method.accept(request, new StreamObserver<A>() {
      @Override
      public void onNext(A a) {
        if (a instanceof ReportAck ack) {
          refusedEvents.addAndGet(ack.getRefusedCount());
        }
      }

      @Override
      public void onError(Throwable t) {
        answered.incrementAndGet();
        refusedCalls.incrementAndGet();
        inFlight.decrementAndGet();
        loop(next, seq, method, callsLeft);
      }

      @Override
      public void onCompleted() {
        answered.incrementAndGet();
        inFlight.decrementAndGet();
        loop(next, seq, method, callsLeft);
      }
    });
  }

  /**
   * In turn: a batch that starts 1,000 new jobs with a reduce on the sender's host (beyond
   * jobs.maxReducesPerHost they are refused, so its jobs are those of the first batch), as many
   * 10,000-partition map outputs of one of them as fit a 1 MB message, and 1,000 map
   * completions of one of them.
   */
  private ShuffleReport report(long n) {
    long t = System.currentTimeMillis() * 1_000_000L;
    List<ShuffleEvent> events = new ArrayList<>();
    switch ((int) (n % 3)) {
      case 0 -> {
        for (int j = 0; j < JOBS; j++) {
          events.add(ShuffleEvent.newBuilder().setTimeUnixNanos(t).setReduceStarted(
              ReduceStarted.newBuilder().setJobId(jobPrefix + n + "_" + j).setReduceId(0)
                  .setHost(host).setTotalMaps(100_000).setTotalReduces(MAX_REDUCES)).build());
        }
      }
      case 1 -> {
        String job = job(n);
        for (int m = 0; m < 30; m++) {
          events.add(ShuffleEvent.newBuilder().setTimeUnixNanos(t).setMapOutputIndexed(
              mapOutput.toBuilder().setJobId(job).setMapId((int) (n * 30 + m) % 100_000))
              .build());
        }
      }
      default -> {
        String job = job(n);
        for (int m = 0; m < 1000; m++) {
          events.add(ShuffleEvent.newBuilder().setTimeUnixNanos(t).setMapCompleted(
              MapCompleted.newBuilder().setJobId(job).setReduceId(0).setMapId(m).setHost(host)
                  .setRunTimeNanos(1_000_000_000L).setOutputBytes(1_000_000L)
                  .setMapsRunning(-1)).build());
        }
      }
    }
    return ShuffleReport.newBuilder().setReporterId("r" + n).setBatchId(1).addAllEvents(events)
        .build();
  }

  /** A lookup of a new flow of one of its jobs whose key names flows.maxMapIds maps. */
  private PolicyLookup lookup(long n) {
    String job = job(n);
    return PolicyLookup.newBuilder().setJobId(job).setReduceId(0).setBytes(1_000_000L)
        .setFlow(key(wideKey, job, n)).build();
  }

  /** Outcomes of new flows of its jobs: as many with 250 map ids each as fit 1 MB. */
  private FlowOutcomes outcomes(long n) {
    long t = System.currentTimeMillis() * 1_000_000L;
    FlowOutcomes.Builder b = FlowOutcomes.newBuilder().setReporterId("o" + n).setBatchId(1);
    for (int i = 0; i < JOBS; i++) {
      String job = jobPrefix + "0_" + i;
      b.addOutcomes(FlowOutcome.newBuilder().setJobId(job).setReduceId(0).setSourceHost(host)
          .setDestinationHost(host).setBytes(1_000_000L).setStartUnixNanos(t)
          .setFinishUnixNanos(t + 1_000).setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE)
          .setFlow(key(outcomeKey, job, n * JOBS + i)));
    }
    return b.build();
  }

  /** One of the jobs the first report batch started. */
  private String job(long n) {
    return jobPrefix + "0_" + (n % JOBS);
  }

  private FlowKey key(int maps) {
    return FlowKey.newBuilder().setReduceId(0).setSourceHost(host)
        .addAllMapIds(IntStream.range(0, maps).boxed().toList()).setSourceAddress("10.66.0.1")
        .setDestinationAddress("10.66.0.2").setDestinationPort(13562).build();
  }

  private static FlowKey key(FlowKey template, String job, long epoch) {
    return template.toBuilder().setJobId(job).setSourcePort((int) (epoch % 60_000))
        .setEpoch((int) epoch).build();
  }
}
