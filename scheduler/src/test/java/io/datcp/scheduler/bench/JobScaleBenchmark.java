package io.datcp.scheduler.bench;

import io.datcp.scheduler.SchedulerService;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/**
 * Domain benchmark (not a test): plays large jobs through the scheduler's domain service in
 * process, one thread, no RPC, and prints the CPU time per call of each kind. The load benchmark's
 * jobs of 20 maps x 4 reduces hide work that grows with a job's maps and reduces; this one shows
 * it. Each reduce runs on its own host and reports every map's completion, as the reduce-side
 * plugin does; every map x reduce flow is looked up, fetched and reported by its agent.
 *
 * <pre>
 * java -cp scheduler/target/scheduler.jar:scheduler/target/test-classes \
 *     io.datcp.scheduler.bench.JobScaleBenchmark --maps 1000 --reduces 100
 * </pre>
 *
 * An older scheduler.jar in place of the first entry measures that version with the same driver.
 */
@Command(name = "job-scale-benchmark", mixinStandardHelpOptions = true)
public final class JobScaleBenchmark implements Callable<Integer> {
  private static final long MB = 1_000_000L;
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final JobConf CONF = new JobConf("default", "bench", "bench",
      JobPriority.NORMAL);

  @Option(names = "--maps", defaultValue = "1000", description = "Maps per job.")
  int maps;

  @Option(names = "--reduces", defaultValue = "100", description = "Reduces per job.")
  int reduces;

  @Option(names = "--wave", defaultValue = "100", description = "Maps completing together.")
  int wave;

  @Option(names = "--jobs", defaultValue = "2",
      description = "Jobs played one after another; the first warms the JIT and is not counted.")
  int jobs;

  /** Time and calls per kind of call, over the counted jobs. */
  private final Map<String, long[]> spent = new LinkedHashMap<>();

  @Override
  public Integer call() throws Exception {
    SchedulerService s = TestServices.create(Files.createTempDirectory("job-scale"),
        Clock.systemUTC(), TestServices.dev(Map.of("reports.ratePerHost", "1e12",
            "reports.burstPerHost", "2000000000")));
    for (int j = 0; j < jobs; j++) {
      play(s, "job_" + j, j > 0);
    }
    System.out.printf(Locale.ROOT, "job scale benchmark: %d jobs of %d maps x %d reduces (waves"
        + " of %d maps), %d counted%n", jobs, maps, reduces, wave, jobs - 1);
    spent.forEach((kind, t) -> System.out.printf(Locale.ROOT,
        "%-18s %9d calls %10.1f us CPU per call %9.0f ms in all%n", kind, t[1], t[0] / 1e3 / t[1],
        t[0] / 1e6));
    return 0;
  }

  private void play(SchedulerService s, String job, boolean counted) {
    long now = System.currentTimeMillis() * 1_000_000L;
    time("reduce starts", counted, reduces, () -> {
      for (int r = 0; r < reduces; r++) {
        s.report(reducer(r), List.of(
            new JobEvent.ReduceStarted(now, job, r, reducer(r), maps, reduces, CONF, 0)));
      }
    });
    for (int first = 0; first < maps; first += wave) {
      int last = Math.min(maps, first + wave);
      int from = first;
      time("map completions", counted, reduces, () -> {
        for (int r = 0; r < reduces; r++) {
          List<JobEvent> done = new ArrayList<>();
          for (int m = from; m < last; m++) {
            done.add(new JobEvent.MapCompleted(now, job, r, m, mapper(m), 5_000_000_000L,
                10 * MB, maps - last));
          }
          s.report(reducer(r), done);
        }
      });
      for (int m = first; m < last; m++) {
        int map = m;
        time("lookups", counted, reduces, () -> {
          for (int r = 0; r < reduces; r++) {
            s.lookup(mapper(map), job, r, 10 * MB);
          }
        });
        time("fetch reports", counted, reduces, () -> {
          for (int r = 0; r < reduces; r++) {
            s.report(reducer(r), List.of(new JobEvent.FetchFinished(now, job, r, mapper(map),
                List.of(map), 10 * MB, 1_000_000_000L)));
          }
        });
        List<FlowOutcome> outcomes = new ArrayList<>();
        for (int r = 0; r < reduces; r++) {
          outcomes.add(new FlowOutcome(job, r, mapper(m), reducer(r), 10 * MB, now, now + 1,
              now + 1, true, QuenchOutcome.NONE, null));
        }
        time("outcome reports", counted, 1, () -> s.reportOutcomes(mapper(map), outcomes));
      }
    }
    time("shuffle ends", counted, reduces, () -> {
      for (int r = 0; r < reduces; r++) {
        s.report(reducer(r), List.of(new JobEvent.ShuffleFinished(now, job, r)));
      }
    });
    s.report(reducer(0), List.of(new JobEvent.JobFinished(now, job, true)));
  }

  /**
   * Runs {@code calls} calls of one kind and adds this thread's CPU time to the kind's: CPU
   * time, not elapsed time, so other work on a shared machine skews it less.
   */
  private void time(String kind, boolean counted, int calls, Runnable work) {
    long t = THREADS.getCurrentThreadCpuTime();
    work.run();
    if (counted) {
      long[] k = spent.computeIfAbsent(kind, x -> new long[2]);
      k[0] += THREADS.getCurrentThreadCpuTime() - t;
      k[1] += calls;
    }
  }

  private static String reducer(int r) {
    return "reducer-" + r;
  }

  private static String mapper(int m) {
    return "mapper-" + m % 1000;
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new JobScaleBenchmark()).execute(args));
  }
}
