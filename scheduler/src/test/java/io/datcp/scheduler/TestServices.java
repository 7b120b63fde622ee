package io.datcp.scheduler;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.linecorp.armeria.client.grpc.GrpcClientBuilder;
import com.linecorp.armeria.client.grpc.GrpcClients;
import com.linecorp.armeria.common.auth.AuthToken;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.ingest.HostRateLimiter;
import io.datcp.scheduler.ingest.YarnApps;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.store.PolicyStore;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What the scheduler's tests set up: a domain service on a temporary store, for tests below the
 * network adapters; in-process servers on free ports ({@link Servers}) and stubs to them, for
 * tests over real connections.
 */
public final class TestServices {
  private TestServices() {}

  /**
   * Development configuration (plaintext on loopback, no node credentials, job attributes from
   * reports) plus {@code
   * extra}: for tests of other behaviour than authentication and the ResourceManager. The
   * planner's prior is 0.8 of the 100 Mbit/s downlink, so that the tests' deadlines are round
   * (10 MB in 1 s, job B's 20 MB in 2 s).
   */
  public static SchedulerConf dev(Map<String, String> extra) {
    Map<String, String> all = new HashMap<>(Map.of("auth.nodes.required", "false",
        "jobs.attributesFrom", "reports", "planner.targetUtilisation", "0.8",
        "tls.plaintext", "true"));
    all.putAll(extra);
    return SchedulerConf.fromMap(all);
  }

  public static SchedulerConf dev() {
    return dev(Map.of());
  }

  public static SchedulerService create(Path dir, Clock clock, SchedulerConf conf) {
    return create(dir, clock, conf, null);
  }

  /**
   * With {@code yarn} as the ResourceManager (null: none). {@code dir} is created if missing, so
   * that a test can run several services in folders of its temporary directory.
   */
  public static SchedulerService create(Path dir, Clock clock, SchedulerConf conf,
      YarnApps yarn) {
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    PolicyStore store = PolicyStore.open(dir, new ObjectMapper());
    PolicyBook book = new PolicyBook(store, conf.get(SchedulerConf.DEFAULT_MODE),
        conf.get(SchedulerConf.DEFAULT_QUENCH_MODE));
    return new SchedulerService(conf, book, clock,
        new HostRateLimiter(conf.get(SchedulerConf.REPORT_RATE_PER_HOST),
            conf.get(SchedulerConf.REPORT_BURST_PER_HOST), System::nanoTime),
        new SimpleMeterRegistry(), yarn);
  }

  /**
   * A flow of {@code bytes} from {@code mapHost} to reduce 0 of {@code jobId} on {@code
   * reduceHost} that ran from {@code start} to {@code finish} and met its deadline there.
   */
  public static FlowOutcome outcome(String jobId, String mapHost, String reduceHost, long bytes,
      long start, long finish) {
    return new FlowOutcome(jobId, 0, mapHost, reduceHost, bytes, start, finish, finish, true,
        QuenchOutcome.NONE, null);
  }

  /**
   * Starts a new shuffle-bound job on {@code host} and returns the reason its first flow's
   * deadline gives, which names the rate the host's downlink is planned at.
   */
  public static String newJobsPlan(SchedulerService s, String host, long now) {
    String job = "probe_" + now;
    s.report(host, List.of(
        new JobEvent.ReduceStarted(now, job, 0, host, 1, 1,
            new JobConf("default", "probe", job, JobPriority.NORMAL), 0),
        new JobEvent.MapCompleted(now, job, 0, 0, "probe-map", 1_000_000_000L, 10_000_000L, 0)));
    return s.lookup("probe-map", job, 0, 10_000_000L).reason();
  }

  /**
   * Scheduler servers a test starts in-process on free ports, each closed after the test (after
   * the test's own {@code @AfterEach} methods). Register as a {@link RegisterExtension} field.
   */
  public static final class Servers implements AfterEachCallback {
    private final List<SchedulerServer> started = new ArrayList<>();
    /** Node tokens minted per server and host: minting again would revoke the first token. */
    private final Map<SchedulerServer, Map<String, String>> tokens = new HashMap<>();

    /** A started server with its store in {@code dir}. */
    public SchedulerServer start(Path dir, Clock clock, SchedulerConf conf) throws IOException {
      return start(dir, clock, conf, System::nanoTime);
    }

    /** The same with {@code nanoTime} as the per-host budgets' monotonic clock. */
    public SchedulerServer start(Path dir, Clock clock, SchedulerConf conf,
        LongSupplier nanoTime) throws IOException {
      SchedulerServer server = SchedulerServer.builder().dataDir(dir).grpcPort(0).httpPort(0)
          .conf(conf).clock(clock).nanoTime(nanoTime).build().start();
      started.add(server);
      return server;
    }

    /** With the default configuration but plaintext (loopback), on the system clock. */
    public SchedulerServer start(Path dir) throws IOException {
      return start(dir, Clock.systemUTC(),
          SchedulerConf.fromMap(Map.of("tls.plaintext", "true")));
    }

    /** A stub to {@code server} holding {@code host}'s node token. */
    public <T> T asNode(SchedulerServer server, String host, Class<T> type) {
      String token = tokens.computeIfAbsent(server, s -> new HashMap<>())
          .computeIfAbsent(host, h -> server.nodes().mint(h));
      return stub(server, token, type);
    }

    @Override
    public void afterEach(ExtensionContext context) {
      for (int i = started.size() - 1; i >= 0; i--) {
        started.get(i).close();
      }
      started.clear();
      tokens.clear();
    }
  }

  /** A stub to {@code server}'s gRPC port with {@code token} as bearer token (null: none). */
  public static <T> T stub(SchedulerServer server, String token, Class<T> type) {
    GrpcClientBuilder b = GrpcClients.builder("http://127.0.0.1:" + server.grpcPort())
        .responseTimeout(Duration.ofSeconds(10));
    if (token != null) {
      b.auth(AuthToken.ofOAuth2(token));
    }
    return b.build(type);
  }

  /** A response observer that adds every message to {@code sink}. */
  public static <T> StreamObserver<T> collect(List<T> sink) {
    return new StreamObserver<>() {
      @Override
      public void onNext(T value) {
        sink.add(value);
      }

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onCompleted() {}
    };
  }

  /**
   * Waits for a child scheduler JVM's ready line and returns its HTTP port; the child's output
   * is drained from then on so it never blocks on a full pipe.
   */
  public static int awaitReady(Process child) throws IOException {
    BufferedReader out = new BufferedReader(
        new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
    Pattern ready = Pattern.compile(Pattern.quote(SchedulerMain.READY) + ".*http port (\\d+)");
    List<String> seen = new ArrayList<>();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < until) {
      String line = out.readLine();
      if (line == null) {
        break;
      }
      seen.add(line);
      Matcher m = ready.matcher(line);
      if (m.find()) {
        Thread drain = new Thread(() -> out.lines().forEach(l -> { }), "child-output");
        drain.setDaemon(true);
        drain.start();
        return Integer.parseInt(m.group(1));
      }
    }
    throw new AssertionError("scheduler did not become ready; output: " + seen);
  }
}
