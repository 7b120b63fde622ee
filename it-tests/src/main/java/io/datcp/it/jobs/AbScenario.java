package io.datcp.it.jobs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.TIPStatus;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.apache.hadoop.mapreduce.TaskReport;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.jobhistory.JobHistoryParser;
import org.apache.hadoop.mapreduce.jobhistory.JobHistoryParser.JobInfo;
import org.apache.hadoop.mapreduce.jobhistory.JobHistoryParser.TaskAttemptInfo;
import org.apache.hadoop.mapreduce.jobhistory.JobHistoryParser.TaskInfo;
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
 * reduce attempts' first fetch from their syslog.
 * With {@code --rounds N} it runs the pair N times, one after the other (in DIR/round-I), and adds
 * the median of every time over the rounds: one pair's times vary by up to a second with where
 * each reduce's 1 s poll for map completions falls.
 * Usage: {@code AbScenario [-D k=v]... --label L --work DIR [--bytes N] [--slow-millis MS]
 * [--rounds N] [--out FILE]}; -D settings apply to both jobs (e.g. the shuffle consumer plugin).
 */
public final class AbScenario {
  private static final String NM_LOG_ROOT = "/data/nm-logs";
  /** The container log4j layout's %d{ISO8601}. */
  private static final String LOG_TIME = "yyyy-MM-dd HH:mm:ss,SSS";
  private static final DateTimeFormatter LOG_TIME_FORMAT = DateTimeFormatter.ofPattern(LOG_TIME);

  private AbScenario() {}

  public static void main(String[] args) throws Exception {
    Configuration conf = ClientConf.create();
    String[] rest = new GenericOptionsParser(conf, args).getRemainingArgs();
    Map<String, String> opts = new LinkedHashMap<>();
    for (int i = 0; i + 1 < rest.length; i += 2) {
      opts.put(rest[i], rest[i + 1]);
    }
    int rounds = opts.containsKey("--rounds") && opts.get("--rounds").matches("[1-9][0-9]?")
        ? Integer.parseInt(opts.get("--rounds")) : opts.containsKey("--rounds") ? 0 : 1;
    if (!opts.containsKey("--label") || !opts.containsKey("--work") || rest.length % 2 != 0
        || rounds == 0) {
      System.err.println("usage: AbScenario [-D k=v]... --label L --work DIR [--bytes N]"
          + " [--slow-millis MS] [--rounds 1-99] [--out FILE]");
      System.exit(2);
    }
    String label = opts.get("--label");
    List<Map<String, Object>> results = new ArrayList<>();
    for (int i = 1; i <= rounds; i++) {
      Path work = new Path(opts.get("--work"));
      results.add(run(conf, label, rounds == 1 ? work : new Path(work, "round-" + i),
          Long.parseLong(opts.getOrDefault("--bytes", "10000000")),
          Long.parseLong(opts.getOrDefault("--slow-millis", "5000"))));
    }
    Map<String, Object> result = new LinkedHashMap<>();
    result.put("label", label);
    result.put("rounds", results);
    result.put("median", Map.of("jobA", medians(results, "jobA"), "jobB", medians(results, "jobB")));
    ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    String text = json.writeValueAsString(result);
    System.out.println(text);
    if (opts.containsKey("--out")) {
      json.writeValue(new File(opts.get("--out")), result);
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
    conf.setInt(MRJobConfig.MAP_CPU_VCORES, 5);
    conf.setInt(MRJobConfig.MAP_MEMORY_MB, 256);
    conf.setInt(MRJobConfig.REDUCE_CPU_VCORES, 1);
    conf.setInt(MRJobConfig.REDUCE_MEMORY_MB, 3072);
    conf.setFloat(MRJobConfig.COMPLETED_MAPS_FOR_REDUCE_SLOWSTART, 0f);
    conf.setBoolean(MRJobConfig.MAP_SPECULATIVE, false);
    conf.setBoolean(MRJobConfig.REDUCE_SPECULATIVE, false);

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
    while (fs.listStatus(ready).length < 6 || !reducesRunning(jobA) || !reducesRunning(jobB)) {
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
    result.put("jobA", describe(jobA, releasedAt, base));
    result.put("jobB", describe(jobB, releasedAt, base));
    return result;
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

  private static boolean reducesRunning(Job job) throws Exception {
    TaskReport[] reduces = job.getTaskReports(TaskType.REDUCE);
    return reduces.length > 0 && reduces[0].getCurrentStatus() == TIPStatus.RUNNING;
  }

  /** Times relative to the release of the maps, from the job's history file. */
  private static Map<String, Object> describe(Job job, long releasedAt, Configuration conf)
      throws Exception {
    JobInfo info = history(job.getJobID(), conf);
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("jobId", job.getJobID().toString());
    // from the history file: once its AM has exited, asking the job goes to a history server
    d.put("state", info.getJobStatus());
    long lastMap = 0;
    List<Map<String, Object>> maps = new ArrayList<>();
    List<Map<String, Object>> reduces = new ArrayList<>();
    for (TaskInfo task : info.getAllTasks().values()) {
      TaskAttemptInfo att = task.getAllTaskAttempts().get(task.getSuccessfulAttemptId());
      if (att == null) {
        continue;
      }
      Map<String, Object> t = new LinkedHashMap<>();
      t.put("attempt", att.getAttemptId().toString());
      t.put("host", att.getHostname());
      t.put("startMillis", att.getStartTime() - releasedAt);
      t.put("finishMillis", att.getFinishTime() - releasedAt);
      if (task.getTaskType() == TaskType.MAP) {
        lastMap = Math.max(lastMap, att.getFinishTime());
        maps.add(t);
      } else {
        t.put("shuffleFinishMillis", att.getShuffleFinishTime() - releasedAt);
        ReduceLog log = ReduceLog.of(info, att);
        t.put("firstFetchMillis", log.firstFetch() - releasedAt);
        t.put("lastMapsKnownMillis", log.lastMapsKnown() - releasedAt);
        reduces.add(t);
      }
    }
    long shuffleFinish = extreme(reduces, "shuffleFinishMillis", true, 0) + releasedAt;
    long firstFetch = extreme(reduces, "firstFetchMillis", false, 0) + releasedAt;
    d.put("lastMapFinishMillis", lastMap - releasedAt);
    // shuffle time: from the last map's end (no byte can move earlier) to the end of the copy
    d.put("shuffleMillis", shuffleFinish - lastMap);
    // copy time: from the job's first fetch to the end of its copy, the flows' completion time
    // of DATCP Fig. 14 (without the reduce's up-to-1 s poll for map completions)
    d.put("copyMillis", shuffleFinish - firstFetch);
    d.put("completionMillis", info.getFinishTime() - releasedAt);
    // Hadoop's reduce learns of finished maps by polling every second: the wait from the last
    // map's end to the poll that brought it is up to 1 s of chance, the same on and off
    long lastKnown = extreme(reduces, "lastMapsKnownMillis", true, lastMap - releasedAt)
        + releasedAt;
    long pollWait = Math.max(0, lastKnown - lastMap);
    d.put("pollWaitMillis", pollWait);
    d.put("completionLessPollMillis", info.getFinishTime() - releasedAt - pollWait);
    d.put("reduceShuffleBytes",
        info.getTotalCounters().findCounter(TaskCounter.REDUCE_SHUFFLE_BYTES).getValue());
    d.put("maps", maps);
    d.put("reduces", reduces);
    return d;
  }

  /** Largest (or smallest) value of a time over the reduces, or {@code none} without reduces. */
  private static long extreme(List<Map<String, Object>> reduces, String key, boolean max,
      long none) {
    return reduces.stream().mapToLong(r -> (Long) r.get(key))
        .reduce(max ? Math::max : Math::min).orElse(none);
  }

  /**
   * What a reduce attempt's logs say of its shuffle (syslog.shuffle, where Hadoop's reduce-side
   * shuffle logs by default, or syslog): when it began its first fetch ("about to shuffle output
   * of map") and when its last poll for map completions brought new maps ("Got N new
   * map-outputs"). Needs the NodeManagers' log dirs on the shared volume, one per host
   * ({@code /data/nm-logs/HOST}, docker/node/bin/node-entrypoint.sh).
   */
  private record ReduceLog(long firstFetch, long lastMapsKnown) {
    static ReduceLog of(JobInfo info, TaskAttemptInfo reduce) throws IOException {
      String app = "application_" + info.getJobId().getJtIdentifier() + "_"
          + String.format("%04d", info.getJobId().getId());
      Path glob = new Path("file:" + NM_LOG_ROOT + "/*/" + app + "/" + reduce.getContainerId()
          + "/syslog*");
      FileStatus[] logs = glob.getFileSystem(new Configuration()).globStatus(glob);
      long first = Long.MAX_VALUE;
      long known = 0;
      for (FileStatus log : logs == null ? new FileStatus[0] : logs) {
        for (String l : Files.readAllLines(java.nio.file.Path.of(log.getPath().toUri()))) {
          if (l.contains(" about to shuffle output of map ")) {
            first = Math.min(first, time(l));
          } else if (l.matches(".*: Got [0-9]+ new map-outputs$")) {
            known = Math.max(known, time(l));
          }
        }
      }
      if (first == Long.MAX_VALUE || known == 0) {
        throw new IOException("no fetch or no map completions logged by "
            + reduce.getAttemptId() + " in " + glob);
      }
      return new ReduceLog(first, known);
    }

    private static long time(String line) {
      return LocalDateTime.parse(line.substring(0, LOG_TIME.length()), LOG_TIME_FORMAT)
          .atZone(ZoneId.systemDefault()).toInstant().toEpochMilli();
    }
  }

  /** The job's .jhist in the staging area's intermediate done dir (it may lag the job). */
  private static JobInfo history(JobID id, Configuration conf) throws Exception {
    Path glob = new Path(conf.get(MRJobConfig.MR_AM_STAGING_DIR, "/tmp/hadoop-yarn/staging")
        + "/history/done_intermediate/*/" + id + "*.jhist");
    FileSystem fs = glob.getFileSystem(conf);
    for (int i = 0; i < 200; i++) {
      FileStatus[] found = fs.globStatus(glob);
      if (found != null && found.length == 1) {
        JobInfo info = new JobHistoryParser(fs, found[0].getPath()).parse();
        if (info != null) {
          return info;
        }
      }
      Thread.sleep(100);
    }
    throw new IOException("no history file " + glob);
  }

  private static void log(String message) {
    System.err.println("AbScenario: " + message);
  }
}
