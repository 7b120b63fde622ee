package io.datcp.scheduler.bench;

import com.linecorp.armeria.client.ClientFactory;
import com.linecorp.armeria.client.grpc.GrpcClients;
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
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
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
 * the job finish. Workers run closed loops, so latency is measured under full load.
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

  @Option(names = "--server-pid", defaultValue = "0",
      description = "Process id of the scheduler (same machine): prints its CPU time per request,"
          + " which depends far less on other load on the machine than latency does.")
  long serverPid;

  /** Latency samples of one operation kind, nanoseconds; a fixed array so recording is cheap. */
  private static final class Samples {
    private final long[] nanos = new long[4_000_000];
    private final AtomicLong count = new AtomicLong();

    void add(long n) {
      long i = count.getAndIncrement();
      if (i < nanos.length) {
        nanos[(int) i] = n;
      }
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

  private final AtomicBoolean measuring = new AtomicBoolean();
  private final AtomicBoolean running = new AtomicBoolean(true);
  private final Samples reports = new Samples();
  private final Samples outcomeReports = new Samples();
  private final Samples lookups = new Samples();
  private final AtomicLong events = new AtomicLong();
  private final AtomicLong updates = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();

  private final ThreadLocal<ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub> plugin =
      new ThreadLocal<>();
  private final ThreadLocal<FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub> agent =
      new ThreadLocal<>();

  @Override
  public Integer call() throws Exception {
    String uri = "http://" + target;
    int loopCount = eventLoops > 0 ? eventLoops : Runtime.getRuntime().availableProcessors();
    EventLoopGroup loops = EventLoopGroups.newEventLoopGroup(loopCount);
    List<ClientFactory> factories = new ArrayList<>();
    for (int c = 0; c < connections; c++) {
      factories.add(ClientFactory.builder().workerGroup(loops, false).build());
    }
    for (int h = 0; h < hosts; h++) {
      FlowPolicyServiceGrpc.FlowPolicyServiceStub watcher = GrpcClients.builder(uri)
          .factory(factories.get(h % connections)).responseTimeout(Duration.ZERO)
          .build(FlowPolicyServiceGrpc.FlowPolicyServiceStub.class);
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
    ExecutorService pool = Executors.newFixedThreadPool(workers);
    nextJobStart.set(System.nanoTime());
    for (int w = 0; w < workers; w++) {
      int worker = w;
      ClientFactory factory = factories.get(w % connections);
      pool.submit(() -> {
        plugin.set(GrpcClients.builder(uri).factory(factory)
            .responseTimeout(Duration.ofSeconds(30))
            .build(ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class));
        agent.set(GrpcClients.builder(uri).factory(factory)
            .responseTimeout(Duration.ofSeconds(30))
            .build(FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class));
        for (long job = 0; running.get(); job++) {
          try {
            awaitJobStart();
            playJob("job_" + worker + "_" + job);
          } catch (RuntimeException e) {
            errors.incrementAndGet();
          } catch (InterruptedException e) {
            return;
          }
        }
      });
    }
    System.out.printf(Locale.ROOT, "load benchmark: %d hosts (plugin + agent + update stream each),"
        + " %d workers, jobs of %d maps x %d reduces, %d connections on %d event loops, %s,"
        + " target %s%n", hosts, workers, maps, reduces, connections,
        loopCount, jobsPerSecond > 0
            ? String.format(Locale.ROOT, "%.1f jobs/s", jobsPerSecond) : "closed loops", target);
    TimeUnit.SECONDS.sleep(warmupSeconds);
    long updatesBefore = updates.get();
    long eventsBefore = events.get();
    long cpuBefore = serverCpuTicks();
    long clientCpuBefore = cpuTicks("self");
    measuring.set(true);
    long start = System.nanoTime();
    TimeUnit.SECONDS.sleep(seconds);
    measuring.set(false);
    double secs = (System.nanoTime() - start) / 1e9;
    long cpuTicks = serverCpuTicks() - cpuBefore;
    long clientCpuTicks = cpuTicks("self") - clientCpuBefore;
    running.set(false);
    pool.shutdown();
    pool.awaitTermination(60, TimeUnit.SECONDS);
    System.out.println("shuffle reports  " + reports.summary(secs));
    System.out.println("outcome reports  " + outcomeReports.summary(secs));
    System.out.println("policy lookups   " + lookups.summary(secs));
    long[] all = java.util.stream.Stream.of(reports, outcomeReports, lookups)
        .flatMapToLong(x -> Arrays.stream(x.recorded())).toArray();
    System.out.println("all requests     " + Samples.summary(secs, reports.count.get()
        + outcomeReports.count.get() + lookups.count.get(), all));
    System.out.printf(Locale.ROOT, "events applied   %10.0f /s%n",
        (events.get() - eventsBefore) / secs);
    System.out.printf(Locale.ROOT, "updates pushed   %10.0f /s%n",
        (updates.get() - updatesBefore) / secs);
    System.out.println("errors           " + errors.get());
    if (jobsPerSecond > 0) {
      // A lag beyond a job's length means the workers could not keep the set rate.
      System.out.printf(Locale.ROOT, "job start lag    %10.1f ms at most (rate %.1f jobs/s)%n",
          startLagNanos.get() / 1e6, jobsPerSecond);
    }
    long requests = reports.count.get() + outcomeReports.count.get() + lookups.count.get();
    if (serverPid > 0) {
      printCpu("server CPU", cpuTicks, requests, secs);
    }
    printCpu("benchmark CPU", clientCpuTicks, requests, secs);
    System.out.printf(Locale.ROOT, "load average     %s%n", java.nio.file.Files.readString(
        java.nio.file.Path.of("/proc/loadavg")).trim());
    factories.forEach(ClientFactory::close);
    loops.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    return 0;
  }

  private static void printCpu(String what, long ticks, long requests, double secs) {
    // /proc/PID/stat counts CPU in clock ticks of 10 ms (USER_HZ 100).
    double cpuMs = ticks * 10.0;
    System.out.printf(Locale.ROOT, "%-16s %10.1f ms per 1000 requests (%.1f%% of one core over"
        + " %.0f s)%n", what, requests == 0 ? 0 : cpuMs * 1000 / requests, cpuMs / 10 / secs,
        secs);
  }

  /** utime + stime of the server process, clock ticks; 0 without --server-pid. */
  private long serverCpuTicks() throws java.io.IOException {
    return serverPid <= 0 ? 0 : cpuTicks(Long.toString(serverPid));
  }

  /** utime + stime of process {@code pid} ("self": this one), clock ticks. */
  private static long cpuTicks(String pid) throws java.io.IOException {
    String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid
        + "/stat"));
    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  /** Next job start, System.nanoTime; only with --jobs-per-second. */
  private final AtomicLong nextJobStart = new AtomicLong(System.nanoTime());
  /** Longest a job started after its slot while measuring: all workers were busy. */
  private final AtomicLong startLagNanos = new AtomicLong();

  /** With a fixed job rate, waits for this worker's next start slot. */
  private void awaitJobStart() throws InterruptedException {
    if (jobsPerSecond <= 0) {
      return;
    }
    long slot = nextJobStart.getAndAdd((long) (1e9 / jobsPerSecond));
    long wait = slot - System.nanoTime();
    if (wait > 0) {
      TimeUnit.NANOSECONDS.sleep(wait);
    } else if (measuring.get()) {
      startLagNanos.accumulateAndGet(-wait, Math::max);
    }
  }

  private void playJob(String job) {
    ThreadLocalRandom rnd = ThreadLocalRandom.current();
    String[] reduceHosts = new String[reduces];
    for (int r = 0; r < reduces; r++) {
      reduceHosts[r] = host(rnd.nextInt(hosts));
      report(reduceHosts[r], event().setReduceStarted(ReduceStarted.newBuilder()
          .setJobId(job).setReduceId(r).setHost(reduceHosts[r]).setTotalMaps(maps)
          .setTotalReduces(reduces).setQueue("default").setUser("bench").setJobName(job)
          .setPriority(JobPriority.JOB_PRIORITY_NORMAL)).build());
    }
    int wave = Math.max(1, maps / 4);
    for (int first = 0; first < maps; first += wave) {
      int last = Math.min(maps, first + wave);
      String[] mapHosts = new String[last - first];
      for (int m = first; m < last; m++) {
        mapHosts[m - first] = host(rnd.nextInt(hosts));
      }
      for (int r = 0; r < reduces; r++) {
        List<ShuffleEvent> done = new ArrayList<>();
        for (int m = first; m < last; m++) {
          done.add(event().setMapCompleted(MapCompleted.newBuilder().setJobId(job)
              .setReduceId(r).setMapId(m).setHost(mapHosts[m - first])
              .setRunTimeNanos(5_000_000_000L).setOutputBytes(10 * MB)
              .setMapsRunning(maps - last)).build());
        }
        report(reduceHosts[r], done.toArray(ShuffleEvent[]::new));
      }
      long now = System.currentTimeMillis() * 1_000_000L;
      for (int m = first; m < last; m++) {
        FlowOutcomes.Builder outcomes = FlowOutcomes.newBuilder().setAgentHost(mapHosts[m - first]);
        for (int r = 0; r < reduces; r++) {
          long t = System.nanoTime();
          var p = agent.get().lookupPolicy(PolicyLookup.newBuilder().setAgentHost(mapHosts[m - first])
              .setJobId(job).setReduceId(r).setBytes(10 * MB).addMapIds(m).build());
          record(lookups, t);
          outcomes.addOutcomes(FlowOutcome.newBuilder().setJobId(job).setReduceId(r)
              .setSourceHost(mapHosts[m - first]).setDestinationHost(reduceHosts[r])
              .setBytes(10 * MB).setStartUnixNanos(now)
              .setDeadlineUnixNanos(p.getDeadlineUnixNanos())
              .setFinishUnixNanos(now + 1_000_000_000L).setMet(rnd.nextInt(10) > 0)
              .setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE));
        }
        for (int r = 0; r < reduces; r++) {
          report(reduceHosts[r], event().setFetchFinished(FetchFinished.newBuilder()
              .setJobId(job).setReduceId(r).setSourceHost(mapHosts[m - first]).addMapIds(m)
              .setBytes(10 * MB).setDurationNanos(1_000_000_000L)).build());
        }
        long t = System.nanoTime();
        agent.get().reportOutcomes(outcomes.build());
        record(outcomeReports, t);
      }
    }
    for (int r = 0; r < reduces; r++) {
      report(reduceHosts[r], event().setShuffleFinished(ShuffleFinished.newBuilder()
          .setJobId(job).setReduceId(r)).build());
    }
    report(reduceHosts[0], event().setJobFinished(JobFinished.newBuilder().setJobId(job)
        .setSucceeded(true)).build());
  }

  private void report(String host, ShuffleEvent... batch) {
    long t = System.nanoTime();
    plugin.get().report(ShuffleReport.newBuilder().setReporterHost(host)
        .addAllEvents(Arrays.asList(batch)).build());
    record(reports, t);
    events.addAndGet(batch.length);
  }

  private void record(Samples s, long startNanos) {
    if (measuring.get()) {
      s.add(System.nanoTime() - startNanos);
    }
  }

  private static ShuffleEvent.Builder event() {
    return ShuffleEvent.newBuilder().setTimeUnixNanos(System.currentTimeMillis() * 1_000_000L);
  }

  private static String host(int i) {
    return String.format(Locale.ROOT, "host-%04d", i);
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new LoadBenchmark()).execute(args));
  }
}
