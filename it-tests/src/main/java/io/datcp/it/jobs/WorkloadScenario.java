package io.datcp.it.jobs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.datcp.it.jobs.WorkloadSpec.JobSpec;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Options;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.GenericOptionsParser;

/**
 * One round of a workload spec ({@link WorkloadSpec}) on the Docker cluster, the job client of
 * docker/run-workload.sh: every job is a {@link GeneratorJob} submitted at its {@code submit_s}
 * offset, all running concurrently; the round ends when all have finished.
 *
 * <ul>
 *   <li>{@code cluster "shared"}: the cluster's default resource asks, YARN places every task;
 *       {@code "ab"}: the A/B layout's asks (reduces on the reducer node, maps elsewhere: {@link
 *       #askForAbPlacement}).
 *   <li>{@code barrier}: every map waits until all jobs' maps and reduces run, then all are
 *       released at one instant ({@link GeneratorJob}'s start barrier), as in the A/B scenario.
 *   <li>Speculation is off: every job moves exactly its spec's bytes.
 * </ul>
 *
 * <p>Writes to {@code --out} one JSON document: per job {@code jct_s} (from the job's submission
 * to its end as its history file records them; with a barrier, from the release of the maps,
 * since the wait at the barrier is the scenario's set-up), {@code copy_s} (the reduces' first
 * fetch to the end of their copy), {@code state}, {@code bytes} (what the reduces counted in
 * their output) and {@code expected_bytes}, {@code deadline_met} (null without
 * {@code deadline_s}) and the history's details. Exits 1 when a job did not succeed or its
 * output does not count exactly its bytes.
 * Usage: {@code WorkloadScenario [-D k=v]... --spec FILE --work DIR --out FILE [--label L]};
 * -D settings apply to every job (e.g. the shuffle consumer plugin).
 */
public final class WorkloadScenario {
  /** How long the maps and reduces of a barrier spec may take to all start. */
  private static final long BARRIER_TIMEOUT_MILLIS = 300_000;
  private static final long ROUND_TIMEOUT_MILLIS = 3_600_000;

  private WorkloadScenario() {}

  private static final Options OPTIONS = new Options()
      .addOption(JobClientOptions.required("spec", "FILE", "the workload spec (JSON)"))
      .addOption(JobClientOptions.required("work", "DIR", "the jobs' HDFS working directory"))
      .addOption(JobClientOptions.required("out", "FILE", "where the results JSON goes"))
      .addOption(JobClientOptions.optional("label", "L", "names the run's jobs (default run)"));

  public static void main(String[] args) throws Exception {
    Configuration conf = ClientConf.create();
    CommandLine opts;
    try {
      opts = JobClientOptions.parse(OPTIONS, new GenericOptionsParser(conf, args)
          .getRemainingArgs());
    } catch (JobClientOptions.UsageException e) {
      JobClientOptions.exit("WorkloadScenario", OPTIONS, e);
      return;
    }
    WorkloadSpec spec;
    try {
      spec = WorkloadSpec.read(new File(opts.getOptionValue("spec")));
    } catch (WorkloadSpec.SpecException e) {
      System.err.println("WorkloadScenario: " + opts.getOptionValue("spec") + ": "
          + e.getMessage());
      System.exit(2);
      return;
    }
    Map<String, Object> result = run(conf, spec, opts.getOptionValue("label", "run"),
        new Path(opts.getOptionValue("work")));
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
        .writeValue(new File(opts.getOptionValue("out")), result);
    @SuppressWarnings("unchecked")
    List<String> problems = (List<String>) result.get("problems");
    problems.forEach(p -> log("FAILED: " + p));
    System.exit(problems.isEmpty() ? 0 : 1);
  }

  static Map<String, Object> run(Configuration base, WorkloadSpec spec, String label, Path work)
      throws Exception {
    FileSystem fs = work.getFileSystem(base);
    fs.delete(work, true);
    fs.mkdirs(work);
    Configuration conf = new Configuration(base);
    Path ready = new Path(work, "ready");
    Path release = new Path(work, "release");
    if (spec.barrier()) {
      fs.mkdirs(ready);
      conf.set(GeneratorJob.READY_DIR, ready.toString());
      conf.set(GeneratorJob.RELEASE_FILE, release.toString());
    }
    if (WorkloadSpec.AB.equals(spec.cluster())) {
      askForAbPlacement(conf);
    }
    conf.setBoolean(MRJobConfig.MAP_SPECULATIVE, false);
    conf.setBoolean(MRJobConfig.REDUCE_SPECULATIVE, false);

    long start = System.currentTimeMillis();
    ExecutorService submitter = Executors.newFixedThreadPool(Math.min(spec.jobs().size(), 8));
    List<Future<Job>> submitted = new ArrayList<>();
    for (JobSpec j : spec.jobs()) {
      submitted.add(submitter.submit(() -> {
        long wait = start + Math.round(j.submitS() * 1000) - System.currentTimeMillis();
        if (wait > 0) {
          Thread.sleep(wait);
        }
        return submit(conf, j, label, new Path(work, "out-" + j.name()));
      }));
    }
    List<Job> jobs = new ArrayList<>();
    try {
      for (Future<Job> f : submitted) {
        jobs.add(f.get());
      }
    } finally {
      submitter.shutdownNow();
    }
    Long releasedAt = null;
    if (spec.barrier()) {
      releasedAt = releaseTogether(fs, spec, jobs, ready, release);
    }
    long deadline = System.currentTimeMillis() + ROUND_TIMEOUT_MILLIS;
    for (Job job : jobs) {
      while (!job.isComplete()) {
        if (System.currentTimeMillis() > deadline) {
          throw new IllegalStateException(job.getJobID() + " did not finish within "
              + ROUND_TIMEOUT_MILLIS / 1000 + " s");
        }
        Thread.sleep(200);
      }
    }
    log("all " + jobs.size() + " jobs finished");

    List<String> problems = new ArrayList<>();
    Map<String, Object> described = new LinkedHashMap<>();
    for (int i = 0; i < jobs.size(); i++) {
      JobSpec j = spec.jobs().get(i);
      described.put(j.name(), describe(fs, j, jobs.get(i), start, releasedAt,
          new Path(work, "out-" + j.name()), base, problems));
    }
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("spec", spec.name());
    result.put("label", label);
    result.put("cluster", spec.cluster());
    result.put("barrier", spec.barrier());
    result.put("startMillis", start);
    result.put("releaseMillis", releasedAt == null ? null : releasedAt - start);
    result.put("jobs", described);
    result.put("problems", problems);
    return result;
  }

  /**
   * The resource asks that place an {@code "ab"} spec's reduces on the reducer node and its maps
   * on the map nodes (docker/README.md, "Placing the A/B tasks"): maps ask for 5 vcores, reduces
   * for 3072 MB; the map nodes have 12 vcores and 3000 MB, the reduce node 4 vcores and 8192 MB.
   * Reduces start at once (no slow start).
   */
  static void askForAbPlacement(Configuration conf) {
    conf.setInt(MRJobConfig.MAP_CPU_VCORES, 5);
    conf.setInt(MRJobConfig.MAP_MEMORY_MB, 256);
    conf.setInt(MRJobConfig.REDUCE_CPU_VCORES, 1);
    conf.setInt(MRJobConfig.REDUCE_MEMORY_MB, 3072);
    conf.setFloat(MRJobConfig.COMPLETED_MAPS_FOR_REDUCE_SLOWSTART, 0f);
  }

  private static Job submit(Configuration conf, JobSpec j, String label, Path out)
      throws Exception {
    Configuration c = new Configuration(conf);
    c.setInt(GeneratorJob.SLOW_MAPS, j.slowMaps());
    c.setLong(GeneratorJob.SLOW_MILLIS, Math.round(j.mapSeconds() * 1000));
    c.set(MRJobConfig.QUEUE_NAME, j.queue());
    PrivilegedExceptionAction<Job> submit = () -> {
      Job job = GeneratorJob.create(c, "datcp-wl-" + label + "-" + j.name(), j.maps(),
          j.bytesPerReduce(), out);
      job.submit();
      return job;
    };
    Job job = j.user() == null ? submit.run()
        : UserGroupInformation.createRemoteUser(j.user()).doAs(submit);
    log("submitted " + j.name() + " as " + job.getJobID());
    return job;
  }

  /** Releases every map at one instant once all maps wait and all reduces run. */
  private static long releaseTogether(FileSystem fs, WorkloadSpec spec, List<Job> jobs,
      Path ready, Path release) throws Exception {
    int maps = spec.jobs().stream().mapToInt(JobSpec::maps).sum();
    long deadline = System.currentTimeMillis() + BARRIER_TIMEOUT_MILLIS;
    while (fs.listStatus(ready).length < maps || !allReducesRunning(jobs)) {
      if (System.currentTimeMillis() > deadline || jobs.stream().anyMatch(WorkloadScenario::done)) {
        throw new IllegalStateException("barrier: the " + maps + " maps and every reduce did"
            + " not all start (" + fs.listStatus(ready).length + " maps waiting): does the"
            + " cluster hold all of the spec's tasks at once?");
      }
      Thread.sleep(100);
    }
    Thread.sleep(3000); // the reduce JVMs start and begin polling for map completions
    long releasedAt = System.currentTimeMillis();
    fs.create(release, true).close();
    log("released the maps");
    return releasedAt;
  }

  private static boolean allReducesRunning(List<Job> jobs) throws Exception {
    for (Job job : jobs) {
      if (!JobReport.reducesRunning(job)) {
        return false;
      }
    }
    return true;
  }

  private static boolean done(Job job) {
    try {
      return job.isComplete();
    } catch (IOException e) {
      return true;
    }
  }

  private static Map<String, Object> describe(FileSystem fs, JobSpec j, Job job, long start,
      Long releasedAt, Path out, Configuration conf, List<String> problems) throws Exception {
    Map<String, Object> history = JobReport.describe(job.getJobID(), start, conf);
    long from = releasedAt != null ? releasedAt - start : (Long) history.get("submitMillis");
    double jct = ((Long) history.get("completionMillis") - from) / 1000.0;
    String state = String.valueOf(history.get("state"));
    Map<Integer, Long> counted = outputBytes(fs, out);
    long bytes = counted.values().stream().mapToLong(Long::longValue).sum();
    long[] perReduce = j.bytesPerReduce();
    Map<Integer, Long> expected = new TreeMap<>();
    for (int r = 0; r < perReduce.length; r++) {
      if (perReduce[r] > 0) {
        expected.put(r, perReduce[r] * j.maps());
      }
    }
    if (!"SUCCEEDED".equals(state)) {
      problems.add(j.name() + " (" + job.getJobID() + ") ended " + state);
    } else if (!expected.equals(counted)) {
      problems.add(j.name() + " (" + job.getJobID() + "): its reduces counted " + counted
          + " bytes per reduce, the spec makes " + expected);
    }
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("jct_s", jct);
    d.put("copy_s", (Long) history.get("copyMillis") / 1000.0);
    d.put("state", state);
    d.put("bytes", bytes);
    d.put("expected_bytes", j.shuffleBytes());
    d.put("deadline_s", j.deadlineS());
    d.put("deadline_met", j.deadlineS() == null ? null
        : "SUCCEEDED".equals(state) && jct <= j.deadlineS());
    d.put("history", history);
    return d;
  }

  /** Partition -> bytes, from the reduces' output lines "partition TAB bytes". */
  private static Map<Integer, Long> outputBytes(FileSystem fs, Path out) throws IOException {
    Map<Integer, Long> bytes = new TreeMap<>();
    FileStatus[] parts = fs.globStatus(new Path(out, "part-r-*"));
    for (FileStatus part : parts == null ? new FileStatus[0] : parts) {
      try (var in = fs.open(part.getPath())) {
        for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
          if (!line.isEmpty()) {
            String[] kv = line.split("\t");
            bytes.merge(Integer.parseInt(kv[0]), Long.parseLong(kv[1]), Long::sum);
          }
        }
      }
    }
    return bytes;
  }

  private static void log(String message) {
    System.err.println("WorkloadScenario: " + message);
  }
}
