package io.datcp.scheduler.bench;

import com.linecorp.armeria.client.ClientFactory;
import com.linecorp.armeria.client.grpc.GrpcClients;
import com.linecorp.armeria.common.auth.AuthToken;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.proto.v1.WatchRequest;
import io.datcp.scheduler.WorstCalls;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

/**
 * Issue 18 item 5's attacker: one node with a valid token of its own (host "evil") that sends
 * the largest valid messages it can ({@link WorstCalls}), as fast as the answers come back, on
 * its own connection, and watch.maxStreamsPerHost update streams it never reads. Each kind runs
 * {@code loops} closed loops; refusals are counted, not retried.
 */
public final class HostileClient {
  private static final String HOST = "evil";

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
  private final WorstCalls worst = new WorstCalls(HOST, "job_666_");

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
      loop(() -> worst.report(reportSeq.getAndIncrement()), plugin::report,
          new AtomicLong(callsPerLoop));
      loop(() -> worst.lookup(lookupSeq.getAndIncrement()), agent::lookupPolicy,
          new AtomicLong(callsPerLoop));
      loop(() -> worst.outcomes(outcomeSeq.getAndIncrement()), agent::reportOutcomes,
          new AtomicLong(callsPerLoop));
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
}
