package io.datcp.it.jobs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Options;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.util.GenericOptionsParser;

/**
 * The job A/B scenario of DATCP §4.4 (Fig. 14), scaled to 100 Mbit/s: two jobs whose reduces
 * run on one NodeManager. Job A has 4 maps of which 2 are still running when the shuffle
 * starts; job B has 2 maps, both done. Every map writes {@code --bytes} (10 MB) for its reduce.
 * All six maps are released at one instant once every container runs (see {@link
 * GeneratorJob}); A's last two maps then run {@code --slow-millis} (5 s) longer.
 *
 * <p>Placement without node labels: maps ask for 5 vcores and reduces for 3072 MB; the
 * map nodes have 12 vcores and 3000 MB, the reduce node 4 vcores and 8192 MB (docker/README.md).
 *
 * <p>Prints (and writes to {@code --out}) one JSON document with, per job, the times from the
 * job's own history file (map finish, reduce shuffle finish, job finish), counters, and the
 * reduce attempts' first fetch from their syslog ({@link JobReport}).
 * With {@code --rounds N} it runs the pair N times, one after the other (in DIR/round-I), and adds
 * the median of every time over the rounds: one pair's times vary by up to a second with where
 * each reduce's 1 s poll for map completions falls.
 * Usage: {@code AbScenario [-D k=v]... --label L --work DIR [--bytes N] [--slow-millis MS]
 * [--rounds N] [--out FILE]}; -D settings apply to both jobs (e.g. the shuffle consumer plugin).
 */
public final class AbScenario {
  private AbScenario() {}

  private static final Options OPTIONS = new Options()
      .addOption(JobClientOptions.required("label", "L", "names the jobs and the results"))
      .addOption(JobClientOptions.required("work", "DIR", "the jobs' HDFS working directory"))
      .addOption(JobClientOptions.optional("bytes", "N", "bytes per map output (10000000)"))
      .addOption(JobClientOptions.optional("slow-millis", "MS",
          "extra run time of job A's last two maps (5000)"))
      .addOption(JobClientOptions.optional("rounds", "N", "pairs of jobs, 1-99 (1)"))
      .addOption(JobClientOptions.optional("out", "FILE", "also write the results JSON here"));

  public static void main(String[] args) throws Exception {
    Configuration conf = ClientConf.create();
    CommandLine opts;
    long rounds;
    long bytes;
    long slowMillis;
    try {
      opts = JobClientOptions.parse(OPTIONS, new GenericOptionsParser(conf, args)
          .getRemainingArgs());
      rounds = JobClientOptions.integer(opts, "rounds", 1, 1, 99);
      bytes = JobClientOptions.integer(opts, "bytes", 10_000_000L, 1, Long.MAX_VALUE);
      slowMillis = JobClientOptions.integer(opts, "slow-millis", 5000, 0, Long.MAX_VALUE);
    } catch (JobClientOptions.UsageException e) {
      JobClientOptions.exit("AbScenario", OPTIONS, e);
      return;
    }
    String label = opts.getOptionValue("label");
    List<Map<String, Object>> results = new ArrayList<>();
    for (int i = 1; i <= rounds; i++) {
      Path work = new Path(opts.getOptionValue("work"));
      results.add(run(conf, label, rounds == 1 ? work : new Path(work, "round-" + i), bytes,
          slowMillis));
    }
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("label", label);
    result.put("rounds", results);
    result.put("median", Map.of("jobA", medians(results, "jobA"), "jobB", medians(results, "jobB")));
    ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    String text = json.writeValueAsString(result);
    System.out.println(text);
    if (opts.hasOption("out")) {
      json.writeValue(new File(opts.getOptionValue("out")), result);
    }
    boolean ok = results.stream().allMatch(r ->
        "SUCCEEDED".equals(((Map<?, ?>) r.get("jobA")).get("state"))
        && "SUCCEEDED".equals(((Map<?, ?>) r.get("jobB")).get("state")));
    System.exit(ok ? 0 : 1);
  }

  static Map<String, Object> run(Configuration base, String label, Path work, long bytes,
      long slowMillis) throws Exception {
    FileSystem fs = work.getFileSystem(base);
    fs.delete(work, true);
    Path ready = new Path(work, "ready");
    Path release = new Path(work, "release");
    fs.mkdirs(ready);

    Configuration conf = new Configuration(base);
    conf.set(GeneratorJob.READY_DIR, ready.toString());
    conf.set(GeneratorJob.RELEASE_FILE, release.toString());
    askForAbPlacement(conf);

    Configuration confA = new Configuration(conf);
    confA.setInt(GeneratorJob.SLOW_MAPS, 2);
    confA.setLong(GeneratorJob.SLOW_MILLIS, slowMillis);
    Job jobA = GeneratorJob.create(confA, "datcp-ab-A-" + label, 4, 1, bytes, new Path(work, "outA"));
    Job jobB = GeneratorJob.create(conf, "datcp-ab-B-" + label, 2, 1, bytes, new Path(work, "outB"));
    jobA.submit();
    jobB.submit();
    log("submitted " + jobA.getJobID() + " (A) and " + jobB.getJobID() + " (B)");

    // every map waits at the barrier, both reduces run: release the maps together
    long deadline = System.currentTimeMillis() + 180_000;
    while (fs.listStatus(ready).length < 6 || !JobReport.reducesRunning(jobA)
        || !JobReport.reducesRunning(jobB)) {
      if (System.currentTimeMillis() > deadline || jobA.isComplete() || jobB.isComplete()) {
        throw new IllegalStateException("the six maps and two reduces did not all start: "
            + fs.listStatus(ready).length + " maps at the barrier");
      }
      Thread.sleep(100);
    }
    Thread.sleep(3000); // the reduce JVMs start and begin polling for map completions
    long releasedAt = System.currentTimeMillis();
    fs.create(release, true).close();
    log("released the maps");
    boolean a = jobA.waitForCompletion(false);
    boolean b = jobB.waitForCompletion(false);
    log("job A " + (a ? "succeeded" : "failed") + ", job B " + (b ? "succeeded" : "failed"));

    Map<String, Object> result = new LinkedHashMap<>();
    result.put("label", label);
    result.put("releasedAtMillis", releasedAt);
    result.put("bytesPerMapPerReduce", bytes);
    result.put("slowMillis", slowMillis);
    result.put("jobA", JobReport.describe(jobA.getJobID(), releasedAt, base));
    result.put("jobB", JobReport.describe(jobB.getJobID(), releasedAt, base));
    return result;
  }

  /**
   * The resource asks that place the scenario's reduces on the reducer node and its maps on the
   * map nodes (docker/README.md, "Placing the A/B tasks"); reduces start at once and nothing
   * runs twice (no speculation), so every job moves exactly its map outputs.
   */
  static void askForAbPlacement(Configuration conf) {
    conf.setInt(MRJobConfig.MAP_CPU_VCORES, 5);
    conf.setInt(MRJobConfig.MAP_MEMORY_MB, 256);
    conf.setInt(MRJobConfig.REDUCE_CPU_VCORES, 1);
    conf.setInt(MRJobConfig.REDUCE_MEMORY_MB, 3072);
    conf.setFloat(MRJobConfig.COMPLETED_MAPS_FOR_REDUCE_SLOWSTART, 0f);
    conf.setBoolean(MRJobConfig.MAP_SPECULATIVE, false);
    conf.setBoolean(MRJobConfig.REDUCE_SPECULATIVE, false);
  }

  /** Per time of a job, the median over the rounds (the lower middle one for even counts). */
  private static Map<String, Long> medians(List<Map<String, Object>> rounds, String job) {
    Map<String, Long> m = new LinkedHashMap<>();
    for (String key : List.of("lastMapFinishMillis", "shuffleMillis", "copyMillis",
        "completionMillis", "pollWaitMillis", "completionLessPollMillis")) {
      long[] v = rounds.stream().mapToLong(r -> (Long) ((Map<?, ?>) r.get(job)).get(key))
          .sorted().toArray();
      m.put(key, v[(v.length - 1) / 2]);
    }
    return m;
  }

  private static void log(String message) {
    System.err.println("AbScenario: " + message);
  }
}
