package io.datcp.scheduler;

import com.google.protobuf.MessageLite;
import com.linecorp.armeria.client.ClientFactory;
import com.linecorp.armeria.client.grpc.GrpcClients;
import com.linecorp.armeria.common.auth.AuthToken;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.proto.v1.WatchRequest;
import io.datcp.scheduler.config.SchedulerConf;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.LongFunction;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * startup.drillSeconds: before the scheduler listens, a throwaway instance of it (same limits,
 * no outside world: {@link SchedulerConf#forDrill}, a temporary data directory, loopback ports)
 * takes the largest valid messages one node can send ({@link WorstCalls}) through the whole gRPC
 * stack for the set time. The hostile-load benchmark found that an attacker's first seconds
 * cost honest calls most because the JIT then compiles the attack's code paths (two thirds of
 * them Armeria's, Netty's and protobuf's) on the cores that serve them; a second attack on the
 * same JVM met the target. Compiled code is per JVM, not per instance, so the real instance
 * starts with those paths compiled. What the drill cannot warm: the TLS handshake and the
 * ResourceManager's answers (its instance has neither), and messages of a shape it does not send.
 */
public final class StartupDrill {
  /** The drill's node; its token is minted in the throwaway instance only. */
  static final String HOST = "drill";
  /** Closed loops per kind of call. */
  private static final int LOOPS = 2;
  /** Update streams opened and never read (watch.maxStreamsPerHost's default). */
  private static final int UNREAD_STREAMS = 8;
  private static final Duration IN_FLIGHT_GRACE = Duration.ofSeconds(10);
  private static final Logger LOG = LoggerFactory.getLogger(StartupDrill.class);

  /** What one drill sent. */
  public record Result(long calls, long refusedCalls, double seconds) {}

  private final AtomicBoolean running = new AtomicBoolean(true);
  private final AtomicLong calls = new AtomicLong();
  private final AtomicLong refused = new AtomicLong();
  private final AtomicLong inFlight = new AtomicLong();
  private final WorstCalls worst = new WorstCalls(HOST, "job_drill_");

  private StartupDrill() {}

  /** Runs a drill of {@code length} against a throwaway instance configured from {@code conf}. */
  public static Result run(SchedulerConf conf, Duration length)
      throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("datcp-drill");
    long start = System.nanoTime();
    try (SchedulerServer server = SchedulerServer.builder().dataDir(dir).grpcPort(0)
        .httpPort(0).conf(conf.forDrill()).build().start();
        ClientFactory factory = ClientFactory.builder().build();
        ClientFactory streamFactory = ClientFactory.builder().build()) {
      String token = server.nodes().mint(HOST);
      String uri = "http://127.0.0.1:" + server.grpcPort();
      StartupDrill drill = new StartupDrill();
      drill.drill(uri, token, factory, streamFactory, length);
      Result r = new Result(drill.calls.get(), drill.refused.get(),
          (System.nanoTime() - start) / 1e9);
      LOG.info("start-up drill: {} calls of the largest valid kinds in {} s ({} refused whole)",
          r.calls(), String.format(java.util.Locale.ROOT, "%.1f", r.seconds()), r.refusedCalls());
      return r;
    } finally {
      deleteTree(dir);
    }
  }

  private void drill(String uri, String token, ClientFactory factory,
      ClientFactory streamFactory, Duration length) throws InterruptedException {
    var plugin = GrpcClients.builder(uri).factory(factory).auth(AuthToken.ofOAuth2(token))
        .responseTimeout(Duration.ofSeconds(30))
        .build(ShuffleReportServiceGrpc.ShuffleReportServiceStub.class);
    var agent = GrpcClients.builder(uri).factory(factory).auth(AuthToken.ofOAuth2(token))
        .responseTimeout(Duration.ofSeconds(30))
        .build(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
    // unread streams on a connection of their own: on the calls' one they would fill its
    // HTTP/2 window and stall the calls
    var streams = GrpcClients.builder(uri).factory(streamFactory)
        .auth(AuthToken.ofOAuth2(token)).responseTimeout(Duration.ZERO)
        .build(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
    List<ClientCallStreamObserver<?>> unread = new ArrayList<>();
    for (int i = 0; i < UNREAD_STREAMS; i++) {
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
    for (int i = 0; i < LOOPS; i++) {
      loop(n -> worst.report(n), reports, plugin::report);
      loop(n -> worst.lookup(n), lookups, agent::lookupPolicy);
      loop(n -> worst.outcomes(n), outcomes, agent::reportOutcomes);
    }
    TimeUnit.NANOSECONDS.sleep(length.toNanos());
    running.set(false);
    long graceEnd = System.nanoTime() + IN_FLIGHT_GRACE.toNanos();
    while (inFlight.get() > 0 && System.nanoTime() < graceEnd) {
      TimeUnit.MILLISECONDS.sleep(10);
    }
    synchronized (unread) {
      unread.forEach(s -> s.cancel("start-up drill over", null));
    }
  }

  /** One closed loop: the next call of a kind once the last one's answer came. */
  private <Q extends MessageLite, A> void loop(LongFunction<Q> next, AtomicLong seq,
      BiConsumer<Q, StreamObserver<A>> method) {
    if (!running.get()) {
      return;
    }
    Q request = next.apply(seq.getAndIncrement());
    calls.incrementAndGet();
    inFlight.incrementAndGet();
    method.accept(request, new StreamObserver<A>() {
      @Override
      public void onNext(A a) {}

      @Override
      public void onError(Throwable t) {
        refused.incrementAndGet();
        inFlight.decrementAndGet();
        loop(next, seq, method);
      }

      @Override
      public void onCompleted() {
        inFlight.decrementAndGet();
        loop(next, seq, method);
      }
    });
  }

  private static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }
}
