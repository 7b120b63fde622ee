package io.datcp.it.jobs;

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

/**
 * What a finished job's own records say of it, for the Docker cluster's job client ({@link
 * WorkloadScenario}): its history file (submit and finish, map and
 * reduce attempt times, counters) and its reduce attempts' shuffle logs ({@code syslog.shuffle}
 * on the shared volume, {@code /data/nm-logs/HOST}). Times are in milliseconds from an origin
 * the caller chooses (the maps' release, or the job's submission).
 */
public final class JobReport {
  private static final String NM_LOG_ROOT = "/data/nm-logs";
  /** The container log4j layout's %d{ISO8601}. */
  private static final String LOG_TIME = "yyyy-MM-dd HH:mm:ss,SSS";
  private static final DateTimeFormatter LOG_TIME_FORMAT = DateTimeFormatter.ofPattern(LOG_TIME);

  private JobReport() {}

  /** Whether every reduce of the job runs (a barrier releases the maps only then). */
  static boolean reducesRunning(Job job) throws Exception {
    TaskReport[] reduces = job.getTaskReports(TaskType.REDUCE);
    for (TaskReport r : reduces) {
      if (r.getCurrentStatus() != TIPStatus.RUNNING) {
        return false;
      }
    }
    return reduces.length > 0;
  }

  /**
   * The job's times relative to {@code origin} (epoch milliseconds), from its history file:
   * submit and finish, last map's end, shuffle time (last map's end to the end of the copy),
   * copy time (first fetch to the end of the copy), the poll wait and its attempts.
   */
  static Map<String, Object> describe(JobID id, long origin, Configuration conf)
      throws Exception {
    JobInfo info = history(id, conf);
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("jobId", id.toString());
    // from the history file: once its AM has exited, asking the job goes to a history server
    d.put("state", info.getJobStatus());
    d.put("submitMillis", info.getSubmitTime() - origin);
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
      t.put("startMillis", att.getStartTime() - origin);
      t.put("finishMillis", att.getFinishTime() - origin);
      if (task.getTaskType() == TaskType.MAP) {
        lastMap = Math.max(lastMap, att.getFinishTime());
        maps.add(t);
      } else {
        t.put("shuffleFinishMillis", att.getShuffleFinishTime() - origin);
        ReduceLog log = ReduceLog.of(info, att);
        t.put("firstFetchMillis", log.firstFetch() - origin);
        t.put("lastMapsKnownMillis", log.lastMapsKnown() - origin);
        reduces.add(t);
      }
    }
    long shuffleFinish = extreme(reduces, "shuffleFinishMillis", true, 0) + origin;
    long firstFetch = extreme(reduces, "firstFetchMillis", false, 0) + origin;
    d.put("lastMapFinishMillis", lastMap - origin);
    // shuffle time: from the last map's end (no byte can move earlier) to the end of the copy
    d.put("shuffleMillis", shuffleFinish - lastMap);
    // copy time: from the job's first fetch to the end of its copy, the flows' completion time
    // of DATCP Fig. 14 (without the reduce's up-to-1 s poll for map completions)
    d.put("copyMillis", shuffleFinish - firstFetch);
    d.put("completionMillis", info.getFinishTime() - origin);
    // Hadoop's reduce learns of finished maps by polling every second: the wait from the last
    // map's end to the poll that brought it is up to 1 s of chance, the same on and off
    long lastKnown = extreme(reduces, "lastMapsKnownMillis", true, lastMap - origin) + origin;
    long pollWait = Math.max(0, lastKnown - lastMap);
    d.put("pollWaitMillis", pollWait);
    d.put("completionLessPollMillis", info.getFinishTime() - origin - pollWait);
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
}
