package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.scheduler.flows.FlowKey;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobView;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.serve.FlowPolicy;
import io.datcp.scheduler.serve.PolicyUpdate;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The scheduler locks per job and per reducer host instead of globally: reports, lookups and
 * outcomes for many jobs that share reducer hosts, sent from many threads at once, must leave
 * the same plans, job views, flow tallies and end-of-job updates as the same calls made one
 * after another.
 */
class ConcurrentReportsTest {
  private static final long MB = 1_000_000L;
  private static final long S = 1_000_000_000L;
  private static final int JOBS = 160;
  private static final int HOSTS = 5;
  private static final int MAPS = 8;
  private static final int THREADS = 8;
  private static final String[] AGENTS = {"m0", "m1", "m2", "m3"};

  @TempDir Path dir;

  /** One scheduler and what its watchers received. */
  private final class Run {
    final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
    final SchedulerService s;
    final Queue updates = new Queue();

    Run(String name) {
      s = TestServices.create(dir.resolve(name), clock, TestServices.dev());
      for (String a : AGENTS) {
        s.watch(a, false, u -> updates.add(a, u));
      }
    }
  }

  /** Updates per agent, as delivered. */
  private static final class Queue {
    final ConcurrentLinkedQueue<String> endOfJob = new ConcurrentLinkedQueue<>();

    void add(String agent, PolicyUpdate u) {
      if (u.jobFinished()) {
        endOfJob.add(agent + " " + u.policy().jobId() + " " + u.policy().reduceId() + " "
            + u.policy().flow());
      }
    }

    List<String> sortedEndOfJob() {
      return endOfJob.stream().sorted().toList();
    }
  }

  private static String job(int j) {
    return "job_" + j;
  }

  private static String host(int h) {
    return "node" + h;
  }

  /** Reduce r of job j runs here; jobs overlap on the few hosts, so plans mix jobs. */
  private static String reduceHost(int j, int r) {
    return host((j + 2 * r) % HOSTS);
  }

  private static FlowKey flow(int j, int r, int m) {
    return new FlowKey(job(j), r, AGENTS[m % AGENTS.length], List.of(m), "10.0.0." + (m + 1),
        13562, "10.0.1." + r, 40000 + m, 0);
  }

  /** Starts job j's two reduces and completes its first maps (map m's output: (m+1) MB). */
  private static void start(SchedulerService s, long t, int j) {
    for (int r = 0; r < 2; r++) {
      List<JobEvent> batch = new ArrayList<>();
      batch.add(new JobEvent.ReduceStarted(t, job(j), r, reduceHost(j, r), MAPS, 2,
          new JobConf("default", "u", "n" + j, JobPriority.NORMAL), 0));
      // Job j has j % MAPS maps done: some jobs wait for maps, some are shuffle-bound.
      for (int m = 0; m < j % (MAPS + 1); m++) {
        batch.add(new JobEvent.MapCompleted(t, job(j), r, m, AGENTS[m % AGENTS.length],
            (5 + m % 3) * S, (m + 1) * MB * (r + 1), MAPS - (j % (MAPS + 1))));
      }
      s.report(reduceHost(j, r), batch);
    }
  }

  /** Agents look up job j's flows; some fetches finish and their agents report outcomes. */
  private static void shuffle(SchedulerService s, long t, int j) {
    int done = j % (MAPS + 1);
    for (int m = 0; m < done; m++) {
      for (int r = 0; r < 2; r++) {
        s.lookup(AGENTS[m % AGENTS.length], job(j), r, (m + 1) * MB * (r + 1), flow(j, r, m));
      }
    }
    for (int m = 0; m < done / 2; m++) {
      int r = m % 2;
      s.report(reduceHost(j, r), List.of(new JobEvent.FetchFinished(t, job(j), r,
          AGENTS[m % AGENTS.length], List.of(m), (m + 1) * MB * (r + 1), S)));
      // Each flow lasts 0.25 s, under AchievedShare's 0.5 s episode floor: which job's
      // episode becomes a rate sample depends on the order its host's plans ran in (it counts
      // only if the job was first at every one), so measured rates would differ between any two
      // orders, serial or not; this test is about lost updates, AchievedShareTest about samples.
      s.reportOutcomes(AGENTS[m % AGENTS.length], List.of(new FlowOutcome(job(j), r,
          AGENTS[m % AGENTS.length], reduceHost(j, r), (m + 1) * MB * (r + 1), t, t + 2 * S,
          t + S / 4, m % 3 != 0, QuenchOutcome.NONE, flow(j, r, m))));
    }
  }

  /** Ends every other job. */
  private static void finish(SchedulerService s, long t, int j) {
    if (j % 2 == 0) {
      s.report(reduceHost(j, 0), List.of(new JobEvent.ShuffleFinished(t, job(j), 0),
          new JobEvent.JobFinished(t, job(j), true)));
    }
  }

  /** Runs {@code step} for every job, jobs spread over threads that start together. */
  private static void concurrently(IntConsumer step) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      CyclicBarrier go = new CyclicBarrier(THREADS);
      List<Future<?>> done = new ArrayList<>();
      for (int w = 0; w < THREADS; w++) {
        int worker = w;
        done.add(pool.submit(() -> {
          go.await();
          for (int j = worker; j < JOBS; j += THREADS) {
            step.accept(j);
          }
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  private static void serially(IntConsumer step) {
    for (int j = 0; j < JOBS; j++) {
      step.accept(j);
    }
  }

  /** What an agent would be told about every flow of every running job, by job and reduce. */
  private static Map<String, FlowPolicy> answers(SchedulerService s) {
    Map<String, FlowPolicy> out = new TreeMap<>();
    for (int j = 0; j < JOBS; j++) {
      for (int r = 0; r < 2; r++) {
        out.put(job(j) + "/" + r, s.lookup("probe", job(j), r, 4 * MB));
      }
    }
    return out;
  }

  private static List<JobView> views(SchedulerService s) {
    return s.jobs().stream().sorted(Comparator.comparing(JobView::id)).toList();
  }

  @Test
  void concurrentCallsForJobsSharingHostsEndAsSerialOnesDo() throws Exception {
    Run serial = new Run("serial");
    Run parallel = new Run("parallel");
    long t = serial.clock.nanos();

    serially(j -> start(serial.s, t, j));
    concurrently(j -> start(parallel.s, t, j));
    serially(j -> shuffle(serial.s, t, j));
    concurrently(j -> shuffle(parallel.s, t, j));

    Map<String, FlowPolicy> expected = answers(serial.s);
    assertThat(expected.values()).filteredOn(p -> p.deadlineUnixNanos() > 0)
        .hasSizeGreaterThan(JOBS);
    assertThat(answers(parallel.s)).isEqualTo(expected);
    assertThat(views(parallel.s)).isEqualTo(views(serial.s));

    serially(j -> finish(serial.s, t, j));
    concurrently(j -> finish(parallel.s, t, j));

    assertThat(views(parallel.s)).isEqualTo(views(serial.s));
    assertThat(answers(parallel.s)).isEqualTo(answers(serial.s));
    assertThat(parallel.s.overallTally()).isEqualTo(serial.s.overallTally());
    assertThat(serial.updates.sortedEndOfJob()).isNotEmpty();
    assertThat(parallel.updates.sortedEndOfJob()).isEqualTo(serial.updates.sortedEndOfJob());
    assertThat(parallel.s.runningJobCount()).isEqualTo(serial.s.runningJobCount())
        .isEqualTo(JOBS / 2);
  }
}
