package io.datcp.scheduler.bench;

import com.linecorp.armeria.client.ClientFactory;
import com.linecorp.armeria.client.Clients;
import com.linecorp.armeria.client.grpc.GrpcClientBuilder;
import com.linecorp.armeria.client.grpc.GrpcClients;
import com.linecorp.armeria.common.HttpHeaderNames;
import com.linecorp.armeria.common.auth.AuthToken;
import com.linecorp.armeria.common.util.SafeCloseable;
import com.linecorp.armeria.common.util.EventLoopGroups;
import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.JobFinished;
import io.datcp.proto.v1.JobPriority;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.QuenchOutcome;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.proto.v1.WatchRequest;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import java.util.stream.Stream;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Load benchmark (not a test): simulates the reduce-side plugins and agents of many hosts
 * against one running scheduler and prints shuffle reports/s, policy lookups/s and latency
 * percentiles. Every simulated host keeps a policy update stream open, as a real agent does.
 *
 * <p>Each worker plays MapReduce jobs end to end: reduces start on random hosts; maps complete
 * in waves on random hosts; for every completed map each map host's agent looks up the policy of
 * its flow to every reduce; reduces report fetches; agents report flow outcomes; shuffles and
 * the job finish. Workers run closed loops (or start jobs at a set rate), each call sent when
 * the last answered; they have no threads of their own but run on the client's event loops, so
 * the simulated hosts take as little as they can of the cores they share with the scheduler.
 */
@Command(name = "load-benchmark", mixinStandardHelpOptions = true)
public final class LoadBenchmark implements Callable<Integer> {
  private static final long MB = 1_000_000L;

  @Option(names = "--target", defaultValue = "127.0.0.1:9090",
      description = "host:port of the scheduler's gRPC server. Default: ${DEFAULT-VALUE}.")
  String target;

  @Option(names = "--hosts", defaultValue = "1000", description = "Simulated hosts.")
  int hosts;

  @Option(names = "--workers", defaultValue = "32", description = "Concurrent closed loops.")
  int workers;

  @Option(names = "--maps", defaultValue = "20", description = "Maps per job.")
  int maps;

  @Option(names = "--reduces", defaultValue = "4", description = "Reduces per job.")
  int reduces;

  @Option(names = "--warmup-seconds", defaultValue = "10")
  int warmupSeconds;

  @Option(names = "--seconds", defaultValue = "30", description = "Measured duration.")
  int seconds;

  @Option(names = "--connections", defaultValue = "16",
      description = "HTTP/2 connections the simulated hosts share (real agents have one each);"
          + " host h and worker w use connection h, w mod this. Default: ${DEFAULT-VALUE}.")
  int connections;

  @Option(names = "--event-loops", defaultValue = "0",
      description = "Event-loop threads of the simulated hosts' connections; 0: one per CPU."
          + " The client shares the cores with the scheduler: Armeria's default of two per CPU"
          + " costs it more CPU per call. Default: ${DEFAULT-VALUE}.")
  int eventLoops;

  @Option(names = "--jobs-per-second", defaultValue = "0",
      description = "0: closed loops, each worker starts its next job as soon as the last ends"
          + " (measures capacity; latency is then about workers / throughput). > 0: jobs start"
          + " at this fixed total rate whatever the answers' latency (open loop over jobs; the"
          + " calls within a job stay sequential), so latency is measured at a set load."
          + " Default: ${DEFAULT-VALUE}.")
  double jobsPerSecond;

  @Option(names = "--node-tokens", description = "Every simulated host sends its own node token"
      + " (as real plugins and agents do; the scheduler then checks each host's claims), one"
      + " derived from its name: write the scheduler's file with --write-node-tokens first.")
  boolean nodeTokens;

  @Option(names = "--write-node-tokens", paramLabel = "DATA_DIR",
      description = "Only write DATA_DIR/node-tokens for the --hosts simulated hosts and exit.")
  java.nio.file.Path writeNodeTokens;

  @Option(names = "--fake-rm-port", defaultValue = "0",
      description = "Serve a fake YARN ResourceManager on this port, in a JVM of its own, that"
          + " places each job's containers on the hosts the job's calls come from (give the"
          + " scheduler yarn.rm.webappAddress=http://127.0.0.1:PORT); 0: none.")
  int fakeRmPort;

  @Option(names = "--fake-rm-cpus", defaultValue = "",
      description = "CPUs (a taskset list) for the fake ResourceManager's JVM; empty: the"
          + " benchmark's own.")
  String fakeRmCpus;

  @Option(names = "--server-pid", defaultValue = "0",
      description = "Process id of the scheduler (same machine): prints its CPU time per request,"
          + " which depends far less on other load on the machine than latency does.")
  long serverPid;

  @Option(names = "--server-gc-log",
      description = "The scheduler's GC log, written with -Xlog:gc:file=PATH:uptime,timemillis:"
          + " each window then counts its slow calls that were in flight during a pause.")
  java.nio.file.Path serverGcLog;

  @Option(names = "--hostile-seconds", defaultValue = "0",
      description = "After the measured window, a second one of this many seconds while a"
          + " hostile node (HostileClient, host evil, --hostile-token) sends the worst valid"
          + " messages as fast as it can; prints both windows' p99 and their ratio. 0: none.")
  int hostileSeconds;

  @Option(names = "--hostile-token", defaultValue = "",
      description = "Node token of host evil for the hostile node (--mint-node-token evil).")
  String hostileToken;

  @Option(names = "--hostile-streams", defaultValue = "8",
      description = "Update streams the hostile node opens and never reads"
          + " (watch.maxStreamsPerHost allows 8).")
  int hostileStreams;

  @Option(names = "--hostile-loops", defaultValue = "2",
      description = "Closed loops per kind of hostile call (reports, lookups, outcomes).")
  int hostileLoops;

  @Option(names = "--hostile-calls", defaultValue = "0",
      description = "Calls per hostile loop, then it stops sending but holds its connection,"
          + " streams and jobs (0: no limit). With --hostile-calls 1 the attacker starts its"
          + " 1,000 jobs and goes quiet: what its retained state alone costs honest calls.")
  long hostileCalls;

  @Option(names = "--hostile-rounds", defaultValue = "1",
      description = "Attacks one after the other, each measured against the same window alone"
          + " (a new attacker connection each; the scheduler keeps what the earlier ones left):"
          + " the first attack's cost includes compiling the code only attacks reach, later"
          + " ones show an attack against a scheduler that has seen one.")
  int hostileRounds;

  @Option(names = "--hostile-settle-seconds", defaultValue = "5",
      description = "Seconds of honest load, not measured, between printing a window and the"
          + " attack after it: this JVM's JIT compiles its reporting code (sorting, formatting)"
          + " then, not in the attack's first seconds on the core that times the calls (the"
          + " window alone follows the warm-up, where nothing is printed). Default:"
          + " ${DEFAULT-VALUE}.")
  int hostileSettleSeconds;

  @Option(names = "--hostile-signal-dir",
      description = "The attacker runs in a JVM of its own (run-hostile.sh ATTACKER_JVM), not in"
          + " this one: the two agree through files in this directory when each attack starts"
          + " (this JVM writes attack-N as its N-th attacked window starts) and its summary"
          + " (the attacker writes summary-N).")
  java.nio.file.Path hostileSignalDir;

  @Option(names = "--hostile-attacker",
      description = "Be only the attacker of a run with --hostile-signal-dir: warm up against"
          + " --hostile-warmup-target, write ready, then attack --target for --hostile-seconds"
          + " each time the benchmark starts an attacked window (--hostile-rounds times).")
  boolean hostileAttacker;

  @Option(names = "--hostile-warmup-seconds", defaultValue = "0",
      description = "With --hostile-attacker: seconds to attack the throwaway scheduler at"
          + " --hostile-warmup-target first, so that this JVM has compiled its sending path;"
          + " 0: none. Default: ${DEFAULT-VALUE}.")
  int hostileWarmupSeconds;

  @Option(names = "--hostile-warmup-target", defaultValue = "",
      description = "host:port of the throwaway scheduler the attacker warms up on.")
  String hostileWarmupTarget;

  @Option(names = "--hostile-warmup-token", defaultValue = "",
      description = "Node token of host evil on the throwaway scheduler.")
  String hostileWarmupToken;

  /** For errors that name the option at fault. */
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  /** Latency samples of one operation kind, nanoseconds; a fixed array so recording is cheap. */
  /** A call slower than this is counted as slow (the honest p99 alone is 0.2-1 ms). */
  private static final long SLOW_NANOS = 2_000_000L;

  private static final class Samples {
    private final long[] nanos;
    /** When each call was answered (System.nanoTime), to see whether slow calls come together. */
    private final long[] answeredAt;
    private final AtomicLong count = new AtomicLong();

    /** @param capacity calls kept; later ones are counted only */
    Samples(int capacity) {
      nanos = new long[capacity];
      answeredAt = new long[capacity];
    }

    void add(long n, long at) {
      long i = count.getAndIncrement();
      if (i < nanos.length) {
        nanos[(int) i] = n;
        answeredAt[(int) i] = at;
      }
    }

    /** {latency, answeredAt} of the calls slower than {@code slowNanos}. */
    List<long[]> slow(long slowNanos) {
      List<long[]> out = new ArrayList<>();
      int n = (int) Math.min(count.get(), nanos.length);
      for (int i = 0; i < n; i++) {
        if (nanos[i] > slowNanos) {
          out.add(new long[] {nanos[i], answeredAt[i]});
        }
      }
      return out;
    }

    long[] recorded() {
      return Arrays.copyOf(nanos, (int) Math.min(count.get(), nanos.length));
    }

    String summary(double secs) {
      return summary(secs, count.get(), recorded());
    }

    static String summary(double secs, long count, long[] recorded) {
      long[] sorted = recorded.clone();
      Arrays.sort(sorted);
      return String.format(Locale.ROOT, "%10.0f /s   p50 %7.2f ms   p99 %7.2f ms   (n=%d)",
          count / secs, pct(sorted, 0.50), pct(sorted, 0.99), count);
    }

    private static double pct(long[] sorted, double p) {
      return sorted.length == 0 ? 0 : sorted[(int) Math.min(sorted.length - 1,
          Math.ceil(p * sorted.length) - 1)] / 1e6;
    }
  }

  /** The latencies of one window's calls, by kind. */
  private static final class Window {
    final Samples reports;
    /** A job's first report, also in reports: with a ResourceManager it waits for YARN. */
    final Samples firstReports;
    /** The other reports, also in reports: none of them waits for YARN here. */
    final Samples laterReports;
    final Samples outcomeReports;
    final Samples lookups;

    Window(int capacity) {
      reports = new Samples(capacity);
      firstReports = new Samples(capacity);
      laterReports = new Samples(capacity);
      outcomeReports = new Samples(capacity);
      lookups = new Samples(capacity);
    }
  }

  private static final int WINDOW_CAPACITY = 4_000_000;
  private final AtomicBoolean running = new AtomicBoolean(true);
  /**
   * Every answer is recorded, outside the measured windows into this throwaway: a recording that
   * began only with a window would change the client's hot path there (its JIT deoptimised the
   * answer path and the event loop inlined in it at the window's start, and every call in flight
   * in that second was timed slow).
   */
  private final Window unmeasured = new Window(1 << 16);
  /** Where a call records its answer, taken when it is sent. */
  private volatile Window recording = unmeasured;
  private final AtomicLong events = new AtomicLong();
  private final AtomicLong updates = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();

  /** Open-loop job starts wait on it; workers run on the client's event loops otherwise. */
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  private FakeResourceManagerProcess rm;

  @Override
  public Integer call() throws Exception {
    if (hostileAttacker) {
      requireOption(hostileSignalDir != null, "--hostile-attacker needs --hostile-signal-dir");
      requireOption(!hostileToken.isEmpty(), "--hostile-attacker needs --hostile-token");
      requireOption(hostileWarmupSeconds == 0
          || !hostileWarmupTarget.isEmpty() && !hostileWarmupToken.isEmpty(),
          "--hostile-warmup-seconds > 0 needs --hostile-warmup-target and --hostile-warmup-token");
      HostileClient.attackFromOwnJvm("http://" + hostileWarmupTarget, hostileWarmupToken,
          hostileWarmupSeconds, "http://" + target, hostileToken, hostileSeconds, hostileRounds,
          hostileLoops, hostileStreams, hostileCalls, new AttackSignals(hostileSignalDir),
          System.out);
      return 0;
    }
    requireOption(hostileSettleSeconds >= 0, "--hostile-settle-seconds must be 0 or more");
    if (writeNodeTokens != null) {
      StringBuilder file = new StringBuilder();
      for (int h = 0; h < hosts; h++) {
        file.append(host(h)).append(' ').append(sha256(token(host(h)))).append('\n');
      }
      java.nio.file.Files.writeString(writeNodeTokens.resolve("node-tokens"), file);
      return 0;
    }
    if (fakeRmPort > 0) {
      rm = new FakeResourceManagerProcess(fakeRmPort, fakeRmCpus);
    }
    String uri = "http://" + target;
    int loopCount = eventLoops > 0 ? eventLoops : Runtime.getRuntime().availableProcessors();
    EventLoopGroup loops = EventLoopGroups.newEventLoopGroup(loopCount);
    List<ClientFactory> factories = new ArrayList<>();
    for (int c = 0; c < connections; c++) {
      factories.add(ClientFactory.builder().workerGroup(loops, false).build());
    }
    for (int h = 0; h < hosts; h++) {
      GrpcClientBuilder watcherBuilder = GrpcClients.builder(uri)
          .factory(factories.get(h % connections)).responseTimeout(Duration.ZERO);
      if (nodeTokens) {
        watcherBuilder.auth(AuthToken.ofOAuth2(token(host(h))));
      }
      FlowPolicyServiceGrpc.FlowPolicyServiceStub watcher =
          watcherBuilder.build(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
      watcher.watchPolicies(WatchRequest.newBuilder().setAgentHost(host(h)).build(),
          new StreamObserver<PolicyUpdate>() {
            @Override
            public void onNext(PolicyUpdate u) {
              updates.incrementAndGet();
            }

            @Override
            public void onError(Throwable t) {}

            @Override
            public void onCompleted() {}
          });
    }
    CountDownLatch stopped = new CountDownLatch(workers);
    slots = jobsPerSecond > 0 ? new JobSlots(jobsPerSecond, System.nanoTime()) : null;
    for (int w = 0; w < workers; w++) {
      ClientFactory factory = factories.get(w % connections);
      new Worker("job_" + w + "_", GrpcClients.builder(uri).factory(factory)
          .responseTimeout(Duration.ofSeconds(30))
          .build(ShuffleReportServiceGrpc.ShuffleReportServiceStub.class),
          GrpcClients.builder(uri).factory(factory).responseTimeout(Duration.ofSeconds(30))
              .build(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class), stopped).nextJob();
    }
    System.out.printf(Locale.ROOT, "load benchmark: %d hosts (plugin + agent + update stream each),"
        + " %d workers, jobs of %d maps x %d reduces, %d connections on %d event loops, %s,"
        + " target %s%n", hosts, workers, maps, reduces, connections,
        loopCount, jobsPerSecond > 0
            ? String.format(Locale.ROOT, "%.1f jobs/s", jobsPerSecond) : "closed loops", target);
    Window measured = new Window(WINDOW_CAPACITY);
    TimeUnit.SECONDS.sleep(warmupSeconds);
    long updatesBefore = updates.get();
    long eventsBefore = events.get();
    long cpuBefore = serverCpuTicks();
    long clientCpuBefore = cpuTicks("self");
    clientGcBefore = clientGc();
    clientJitBefore = clientJitMillis();
    if (slots != null) {
      slots.measureFrom(System.nanoTime());
    }
    recording = measured;
    long start = System.nanoTime();
    windowStart = start;
    TimeUnit.SECONDS.sleep(seconds);
    recording = unmeasured;
    double secs = (System.nanoTime() - start) / 1e9;
    long cpuTicks = serverCpuTicks() - cpuBefore;
    long clientCpuTicks = cpuTicks("self") - clientCpuBefore;
    if (hostileSeconds > 0) {
      hostileWindow(uri, measured, secs, eventsBefore, updatesBefore, cpuTicks, clientCpuTicks);
    }
    running.set(false);
    stopped.await(60, TimeUnit.SECONDS);
    timer.shutdownNow();
    if (hostileSeconds == 0) {
      printWindow(measured, secs, eventsBefore, updatesBefore, cpuTicks, clientCpuTicks);
    }
    factories.forEach(ClientFactory::close);
    loops.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    if (rm != null) {
      String[] served = rm.served().split(" ");
      System.out.printf(Locale.ROOT, "fake RM          %s container lists, %s attempt lists,"
          + " %s applications served%n", served[0], served[1], served[2]);
      rm.close();
    }
    return 0;
  }

  /**
   * The honest window just measured, then one as long while a hostile node attacks on a
   * connection of its own; prints each window and the p99 ratio of the two.
   */
  private void hostileWindow(String uri, Window honest, double honestSecs, long honestEvents,
      long honestUpdates, long honestCpu, long honestClientCpu) throws Exception {
    System.out.println("-- honest load alone (scheduler uptime " + serverUptime(-honestSecs)
        + " to " + serverUptime(0) + " s)");
    printWindow(honest, honestSecs, honestEvents, honestUpdates, honestCpu, honestClientCpu);
    long[][] alone = {honest.reports.recorded(), honest.outcomeReports.recorded(),
        honest.lookups.recorded()};
    AttackSignals signals = hostileSignalDir == null ? null : new AttackSignals(hostileSignalDir);
    for (int round = 1; round <= hostileRounds; round++) {
      attackedWindow(uri, alone, round, signals);
    }
  }

  private void requireOption(boolean ok, String message) {
    if (!ok) {
      throw new CommandLine.ParameterException(spec.commandLine(), message);
    }
  }

  /**
   * One attack of --hostile-seconds, measured, and its honest p99 against {@code alone}'s; the
   * attacker runs in this JVM, or in its own when {@code signals} is not null.
   */
  private void attackedWindow(String uri, long[][] alone, int round, AttackSignals signals)
      throws Exception {
    TimeUnit.SECONDS.sleep(hostileSettleSeconds);
    String label = round == 1 ? "" : ", round " + round;
    Window attacked = new Window(WINDOW_CAPACITY);
    ClientFactory own = signals != null ? null : ClientFactory.builder().build();
    ClientFactory ownStreams = signals != null ? null : ClientFactory.builder().build();
    HostileClient attacker = signals != null ? null
        : new HostileClient(uri, hostileToken, own, ownStreams, hostileLoops, hostileCalls);
    long eventsBefore = events.get();
    long updatesBefore = updates.get();
    long cpuBefore = serverCpuTicks();
    long clientCpuBefore = cpuTicks("self");
    clientGcBefore = clientGc();
    clientJitBefore = clientJitMillis();
    String from = serverUptime(0);
    if (signals != null) {
      signals.startAttack(round);
    } else {
      attacker.start(hostileStreams);
    }
    recording = attacked;
    long start = System.nanoTime();
    windowStart = start;
    TimeUnit.SECONDS.sleep(hostileSeconds);
    recording = unmeasured;
    double secs = (System.nanoTime() - start) / 1e9;
    long serverCpu = serverCpuTicks() - cpuBefore;
    long clientCpu = cpuTicks("self") - clientCpuBefore;
    String summary;
    if (signals != null) {
      // the attacker's own clock ends its attack; it closes its connections, then answers
      summary = signals.awaitSummary(round, java.time.Duration.ofSeconds(hostileSeconds + 60L));
    } else {
      attacker.stop();
      summary = attacker.summary(secs);
      own.close();
      ownStreams.close();
    }
    System.out.println("-- honest load with the attacker" + label + " (scheduler uptime " + from
        + " to "
        + serverUptime(0) + " s)");
    System.out.println(summary);
    printWindow(attacked, secs, eventsBefore, updatesBefore, serverCpu, clientCpu);
    long[][] attackedCalls = {attacked.reports.recorded(), attacked.outcomeReports.recorded(),
        attacked.lookups.recorded()};
    System.out.printf(Locale.ROOT, "%n%-18s %14s %14s %8s%n", "honest p99", "alone ms",
        "attacked ms", "ratio");
    String[] kinds = {"shuffle reports", "outcome reports", "policy lookups"};
    for (int k = 0; k < 3; k++) {
      ratioRow(kinds[k], alone[k], attackedCalls[k]);
    }
    ratioRow("all requests", concat(alone), concat(attackedCalls));
  }

  private static long[] concat(long[][] parts) {
    return java.util.stream.Stream.of(parts).flatMapToLong(Arrays::stream).toArray();
  }

  private static void ratioRow(String kind, long[] alone, long[] attacked) {
    double a = p99(alone);
    double b = p99(attacked);
    System.out.printf(Locale.ROOT, "%-18s %14.2f %14.2f %7.2fx%n", kind, a, b,
        a > 0 ? b / a : 0);
  }

  private static double p99(long[] samples) {
    long[] sorted = samples.clone();
    Arrays.sort(sorted);
    return Samples.pct(sorted, 0.99);
  }

  /**
   * The calls slower than {@link #SLOW_NANOS} and whether they came together: answers less than
   * a millisecond apart form one stall (something held every call up, such as a collection;
   * they are answered together when it ends), with when it ended on the scheduler's clock (to
   * set beside its GC log) and the longest wait in it.
   */
  private void printStalls(Window w, int calls) throws java.io.IOException {
    List<long[]> slow = new ArrayList<>();
    for (Samples x : List.of(w.reports, w.outcomeReports, w.lookups)) {
      slow.addAll(x.slow(SLOW_NANOS));
    }
    slow.sort(java.util.Comparator.comparingLong(c -> c[1]));
    List<long[]> stalls = new ArrayList<>(); // {calls, longest, ended}
    for (long[] c : slow) {
      long[] last = stalls.isEmpty() ? null : stalls.get(stalls.size() - 1);
      if (last != null && c[1] - last[2] < 1_000_000L) {
        last[0]++;
        last[1] = Math.max(last[1], c[0]);
        last[2] = c[1];
      } else {
        stalls.add(new long[] {1, c[0], c[1]});
      }
    }
    if (serverGcLog != null) {
      long inPause = inGcPause(slow);
      System.out.printf(Locale.ROOT, "slow calls       %10d of them in flight during a scheduler"
          + " GC pause, %d not%n", inPause, slow.size() - inPause);
    }
    if (!slow.isEmpty()) {
      // per second of the window: a burst at the attack's start and a steady rate read apart
      int[] perSecond = new int[(int) ((slow.get(slow.size() - 1)[1] - windowStart) / 1_000_000_000L)
          + 1];
      for (long[] c : slow) {
        int sec = (int) ((c[1] - windowStart) / 1_000_000_000L);
        if (sec >= 0) {
          perSecond[sec]++;
        }
      }
      System.out.println("slow calls       by second of the window: " + Arrays.toString(perSecond));
    }
    long together = stalls.stream().filter(x -> x[0] >= 10).mapToLong(x -> x[0]).sum();
    System.out.printf(Locale.ROOT, "slow calls       %10d over %.0f ms (%.2f%% of calls), %d of"
        + " them in %d stalls of 10 calls or more, %d alone or in small groups%n", slow.size(),
        SLOW_NANOS / 1e6, 100.0 * slow.size() / Math.max(1, calls), together,
        stalls.stream().filter(x -> x[0] >= 10).count(), slow.size() - together);
    if (serverPid <= 0) {
      return;
    }
    double uptimeNow = serverUptimeSeconds();
    long nanosNow = System.nanoTime();
    stalls.stream().sorted(java.util.Comparator.comparingLong((long[] x) -> -x[0])).limit(8)
        .sorted(java.util.Comparator.comparingLong(x -> x[2]))
        .forEach(x -> System.out.printf(Locale.ROOT, "  stall ended at scheduler uptime %.3f s:"
            + " %d calls, longest %.1f ms%n", uptimeNow - (nanosNow - x[2]) / 1e9, x[0],
            x[1] / 1e6));
  }

  /**
   * How many of the {latency, answeredAt} calls overlap a pause in the scheduler's GC log: a
   * line "[...][&lt;utc&gt;ms] GC(n) Pause ... &lt;d&gt;ms" is written as a pause of d ms ends.
   */
  private long inGcPause(List<long[]> calls) throws java.io.IOException {
    java.util.regex.Pattern line = java.util.regex.Pattern.compile(
        "\\[(\\d+)ms\\].* Pause .* ([0-9.]+)ms$");
    List<double[]> pauses = new ArrayList<>(); // {start, end} epoch ms
    for (String l : java.nio.file.Files.readAllLines(serverGcLog)) {
      java.util.regex.Matcher m = line.matcher(l);
      if (m.find()) {
        double end = Double.parseDouble(m.group(1));
        pauses.add(new double[] {end - Double.parseDouble(m.group(2)), end});
      }
    }
    // this JVM's nanoTime on the wall clock the GC log's timemillis uses
    double epochMsAtNanoZero = System.currentTimeMillis() - System.nanoTime() / 1e6;
    long n = 0;
    for (long[] c : calls) {
      double answered = epochMsAtNanoZero + c[1] / 1e6;
      double sent = answered - c[0] / 1e6;
      // timemillis is whole milliseconds: a millisecond of slack either side
      if (pauses.stream().anyMatch(p -> p[0] - 1 < answered && p[1] + 1 > sent)) {
        n++;
      }
    }
    return n;
  }

  /** The scheduler JVM's uptime {@code offsetSecs} from now, seconds (its GC log's clock). */
  private String serverUptime(double offsetSecs) throws java.io.IOException {
    return serverPid <= 0 ? "?"
        : String.format(Locale.ROOT, "%.1f", serverUptimeSeconds() + offsetSecs);
  }

  /** The scheduler JVM's uptime now, seconds, to the clock tick. */
  private double serverUptimeSeconds() throws java.io.IOException {
    String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + serverPid
        + "/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    // field 22 (starttime, clock ticks after boot) is f[19] after the command name
    double started = Long.parseLong(f[19]) / 100.0;
    double boot = Double.parseDouble(java.nio.file.Files.readString(
        java.nio.file.Path.of("/proc/uptime")).split(" ")[0]);
    return boot - started;
  }

  private void printWindow(Window w, double secs, long eventsBefore, long updatesBefore,
      long cpuTicks, long clientCpuTicks) throws java.io.IOException {
    System.out.println("shuffle reports  " + w.reports.summary(secs));
    System.out.println(" job's first     " + w.firstReports.summary(secs));
    System.out.println("outcome reports  " + w.outcomeReports.summary(secs));
    System.out.println("policy lookups   " + w.lookups.summary(secs));
    long[] all = java.util.stream.Stream.of(w.reports, w.outcomeReports, w.lookups)
        .flatMapToLong(x -> Arrays.stream(x.recorded())).toArray();
    long requests = w.reports.count.get() + w.outcomeReports.count.get()
        + w.lookups.count.get();
    System.out.println("all requests     " + Samples.summary(secs, requests, all));
    // without the jobs' first reports, the only calls that wait for YARN in this benchmark
    // (every job's hosts are in the first container list): what verifying costs the others
    long[] later = java.util.stream.Stream.of(w.laterReports, w.outcomeReports, w.lookups)
        .flatMapToLong(x -> Arrays.stream(x.recorded())).toArray();
    System.out.println("all but firsts   " + Samples.summary(secs, later.length, later));
    printStalls(w, all.length);
    System.out.printf(Locale.ROOT, "events applied   %10.0f /s%n",
        (events.get() - eventsBefore) / secs);
    System.out.printf(Locale.ROOT, "updates pushed   %10.0f /s%n",
        (updates.get() - updatesBefore) / secs);
    System.out.println("errors           " + errors.get());
    if (jobsPerSecond > 0) {
      // A lag beyond a job's length means the workers could not keep the set rate.
      System.out.printf(Locale.ROOT, "job start lag    %10.1f ms at most (rate %.1f jobs/s)%n",
          slots.lagNanos() / 1e6, jobsPerSecond);
    }
    if (serverPid > 0) {
      printCpu("server CPU", cpuTicks, requests, secs);
    }
    printCpu("benchmark CPU", clientCpuTicks, requests, secs);
    long[] gc = clientGc();
    // the client's own collections stop its clock too: they add to every latency above
    System.out.printf(Locale.ROOT, "benchmark GC     %10d collections, %.0f ms (%.1f%% of the"
        + " window)%n", gc[0] - clientGcBefore[0], (double) (gc[1] - clientGcBefore[1]),
        (gc[1] - clientGcBefore[1]) / 10.0 / secs);
    // its compiler threads share the core with the event loops that time the calls
    long jit = clientJitMillis() - clientJitBefore;
    System.out.printf(Locale.ROOT, "benchmark JIT    %10d ms compiling (its compiler threads,"
        + " elapsed: %.1f%% of the window)%n", jit, jit / 10.0 / secs);
    System.out.printf(Locale.ROOT, "load average     %s%n", java.nio.file.Files.readString(
        java.nio.file.Path.of("/proc/loadavg")).trim());
  }

  private static void printCpu(String what, long ticks, long requests, double secs) {
    // /proc/PID/stat counts CPU in clock ticks of 10 ms (USER_HZ 100).
    double cpuMs = ticks * 10.0;
    System.out.printf(Locale.ROOT, "%-16s %10.1f ms per 1000 requests (%.1f%% of one core over"
        + " %.0f s)%n", what, requests == 0 ? 0 : cpuMs * 1000 / requests, cpuMs / 10 / secs,
        secs);
  }

  private volatile long[] clientGcBefore = {0, 0};
  private volatile long clientJitBefore;

  /** This JVM's JIT compile time so far, milliseconds (all compiler threads). */
  private static long clientJitMillis() {
    return java.lang.management.ManagementFactory.getCompilationMXBean()
        .getTotalCompilationTime();
  }

  /** This JVM's collections so far and their time, milliseconds. */
  private static long[] clientGc() {
    long count = 0;
    long millis = 0;
    for (var gc : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
      count += Math.max(0, gc.getCollectionCount());
      millis += Math.max(0, gc.getCollectionTime());
    }
    return new long[] {count, millis};
  }

  /** utime + stime of the server process, clock ticks; 0 without --server-pid. */
  private long serverCpuTicks() throws java.io.IOException {
    return serverPid <= 0 ? 0 : cpuTicks(Long.toString(serverPid));
  }

  /** utime + stime of process {@code pid} ("self": this one), clock ticks. */
  static long cpuTicks(String pid) throws java.io.IOException {
    String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid
        + "/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  /** Job start slots; null without --jobs-per-second (closed loops). */
  private volatile JobSlots slots;
  /** When the window being measured began (System.nanoTime). */
  private volatile long windowStart;

  /** With a fixed job rate, nanoseconds until the next start slot (0: closed loop or late). */
  private long jobStartDelay() {
    JobSlots s = slots;
    return s == null ? 0 : s.delay(System.nanoTime());
  }

  /** One call of a job, sent when the previous one has answered. */
  private interface Step {
    CompletableFuture<?> send();
  }

  /**
   * A closed loop of jobs without a thread of its own: each call is sent from the callback of the
   * previous answer, on the client's event loops (a blocking caller per worker costs the shared
   * cores two thread hand-offs per call).
   */
  private final class Worker {
    private final String jobPrefix;
    private final ShuffleReportServiceGrpc.ShuffleReportServiceStub plugin;
    private final FlowPolicyServiceGrpc.FlowPolicyServiceStub agent;
    private final CountDownLatch stopped;
    private long job;

    Worker(String jobPrefix, ShuffleReportServiceGrpc.ShuffleReportServiceStub plugin,
        FlowPolicyServiceGrpc.FlowPolicyServiceStub agent, CountDownLatch stopped) {
      this.jobPrefix = jobPrefix;
      this.plugin = plugin;
      this.agent = agent;
      this.stopped = stopped;
    }

    void nextJob() {
      if (!running.get()) {
        stopped.countDown();
        return;
      }
      long delay = jobStartDelay();
      if (delay > 0) {
        timer.schedule(this::startJob, delay, TimeUnit.NANOSECONDS);
      } else {
        startJob();
      }
    }

    private void startJob() {
      run(playJob(jobPrefix + job++, this).iterator());
    }

    private void run(Iterator<Step> steps) {
      if (!steps.hasNext()) {
        nextJob();
        return;
      }
      steps.next().send().whenComplete((answer, failure) -> {
        if (failure != null) {
          errors.incrementAndGet();
          // off this stack: a call that fails at once must not recurse into the next job
          timer.execute(this::nextJob);
        } else {
          run(steps);
        }
      });
    }

    Step report(String host, Supplier<List<ShuffleEvent>> batch) {
      return report(host, batch, false);
    }

    Step report(String host, Supplier<List<ShuffleEvent>> batch, boolean first) {
      return () -> {
        List<ShuffleEvent> b = batch.get();
        events.addAndGet(b.size());
        Window w = recording;
        return call(host, plugin::report, ShuffleReport.newBuilder().setReporterHost(host)
            .addAllEvents(b).build(), w.reports, first ? w.firstReports : w.laterReports);
      };
    }
  }

  /** Sends one unary call; the answer completes the future, its latency goes to {@code s}. */
  private <Q, A> CompletableFuture<A> call(String host, BiConsumer<Q, StreamObserver<A>> method,
      Q request, Samples s) {
    return call(host, method, request, s, null);
  }

  /** Also records the latency in {@code also} when not null. */
  private <Q, A> CompletableFuture<A> call(String host, BiConsumer<Q, StreamObserver<A>> method,
      Q request, Samples s, Samples also) {
    CompletableFuture<A> answer = new CompletableFuture<>();
    long t = System.nanoTime();
    try (SafeCloseable asHost = nodeTokens
        ? Clients.withHeader(HttpHeaderNames.AUTHORIZATION, "Bearer " + token(host)) : null) {
      send(method, request, s, also, answer, t);
    }
    return answer;
  }

  private <Q, A> void send(BiConsumer<Q, StreamObserver<A>> method, Q request, Samples s,
      Samples also, CompletableFuture<A> answer, long t) {
    method.accept(request, new StreamObserver<>() {
      @Override
      public void onNext(A a) {
        record(s, t);
        if (also != null) {
          record(also, t);
        }
        answer.complete(a);
      }

      @Override
      public void onError(Throwable e) {
        answer.completeExceptionally(e);
      }

      @Override
      public void onCompleted() {}
    });
  }

  /** The calls of one job, in order; each request is built when it is sent. */
  private List<Step> playJob(String job, Worker w) {
    List<Step> steps = new ArrayList<>();
    ThreadLocalRandom rnd = ThreadLocalRandom.current();
    String[] reduceHosts = new String[reduces];
    for (int r = 0; r < reduces; r++) {
      int reduce = r;
      reduceHosts[r] = host(rnd.nextInt(hosts));
      steps.add(w.report(reduceHosts[r], () -> List.of(event().setReduceStarted(
          ReduceStarted.newBuilder().setJobId(job).setReduceId(reduce)
              .setHost(reduceHosts[reduce]).setTotalMaps(maps).setTotalReduces(reduces)
              .setQueue("default").setUser("bench").setJobName(job)
              .setPriority(JobPriority.JOB_PRIORITY_NORMAL)).build()), r == 0));
    }
    int wave = Math.max(1, maps / 4);
    List<String> allMapHosts = new ArrayList<>();
    for (int first = 0; first < maps; first += wave) {
      int from = first;
      int last = Math.min(maps, first + wave);
      String[] mapHosts = new String[last - first];
      for (int m = first; m < last; m++) {
        mapHosts[m - first] = host(rnd.nextInt(hosts));
        allMapHosts.add(mapHosts[m - first]);
      }
      for (int r = 0; r < reduces; r++) {
        int reduce = r;
        steps.add(w.report(reduceHosts[r], () -> {
          List<ShuffleEvent> done = new ArrayList<>();
          for (int m = from; m < last; m++) {
            done.add(event().setMapCompleted(MapCompleted.newBuilder().setJobId(job)
                .setReduceId(reduce).setMapId(m).setHost(mapHosts[m - from])
                .setRunTimeNanos(5_000_000_000L).setOutputBytes(10 * MB)
                .setMapsRunning(maps - last)).build());
          }
          return done;
        }));
      }
      for (int m = first; m < last; m++) {
        int map = m;
        String mapHost = mapHosts[m - first];
        FlowOutcomes.Builder outcomes = FlowOutcomes.newBuilder().setAgentHost(mapHost);
        for (int r = 0; r < reduces; r++) {
          int reduce = r;
          steps.add(() -> {
            long now = System.currentTimeMillis() * 1_000_000L;
            return call(mapHost, w.agent::lookupPolicy, PolicyLookup.newBuilder().setAgentHost(mapHost)
                .setJobId(job).setReduceId(reduce).setBytes(10 * MB).addMapIds(map).build(),
                recording.lookups).thenAccept(p -> outcomes.addOutcomes(FlowOutcome.newBuilder()
                    .setJobId(job).setReduceId(reduce).setSourceHost(mapHost)
                    .setDestinationHost(reduceHosts[reduce]).setBytes(10 * MB)
                    .setStartUnixNanos(now).setDeadlineUnixNanos(p.getDeadlineUnixNanos())
                    .setFinishUnixNanos(now + 1_000_000_000L)
                    .setMet(ThreadLocalRandom.current().nextInt(10) > 0)
                    .setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE)));
          });
        }
        for (int r = 0; r < reduces; r++) {
          int reduce = r;
          steps.add(w.report(reduceHosts[r], () -> List.of(event().setFetchFinished(
              FetchFinished.newBuilder().setJobId(job).setReduceId(reduce)
                  .setSourceHost(mapHost).addMapIds(map).setBytes(10 * MB)
                  .setDurationNanos(1_000_000_000L)).build())));
        }
        steps.add(() -> call(mapHost, w.agent::reportOutcomes, outcomes.build(),
            recording.outcomeReports));
      }
    }
    if (rm != null) {
      // YARN placed the job's containers on the hosts its calls come from before they call
      String[] placed = Stream.concat(Arrays.stream(reduceHosts),
          allMapHosts.stream()).toArray(String[]::new);
      steps.add(0, () -> rm.place(job, placed));
    }
    for (int r = 0; r < reduces; r++) {
      int reduce = r;
      steps.add(w.report(reduceHosts[r], () -> List.of(event().setShuffleFinished(
          ShuffleFinished.newBuilder().setJobId(job).setReduceId(reduce)).build())));
    }
    steps.add(w.report(reduceHosts[0], () -> List.of(event().setJobFinished(
        JobFinished.newBuilder().setJobId(job).setSucceeded(true)).build())));
    return steps;
  }

  private static void record(Samples s, long startNanos) {
    long now = System.nanoTime();
    s.add(now - startNanos, now);
  }

  private static ShuffleEvent.Builder event() {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(System.currentTimeMillis() * 1_000_000L);
  }

  /** The node token of a simulated host: derived from its name, so both sides agree. */
  private static String token(String host) {
    return sha256("datcp-load-benchmark/" + host);
  }

  private static String sha256(String s) {
    try {
      return java.util.HexFormat.of().formatHex(java.security.MessageDigest
          .getInstance("SHA-256").digest(s.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }

  private static String host(int i) {
    return String.format(Locale.ROOT, "host-%04d", i);
  }

  public static void main(String[] args) {
    // later options win, so run-hostile.sh's defaults can be overridden on its command line
    System.exit(new CommandLine(new LoadBenchmark()).setOverwrittenOptionsAllowed(true)
        .execute(args));
  }
}
