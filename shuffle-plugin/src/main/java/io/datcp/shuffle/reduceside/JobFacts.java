package io.datcp.shuffle.reduceside;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.yarn.webapp.util.WebAppUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What YARN knows of a job that the reduce's map-completion events do not carry: on YARN,
 * Hadoop's TypeConverter builds the reduce's TaskCompletionEvent without the attempt's run time,
 * although the MapReduce AM has it. Asked over the REST APIs Hadoop documents: the
 * ResourceManager's {@code /ws/v1/cluster/apps/{app}} (the job's submit time) and the job's AM,
 * through the ResourceManager's web proxy, {@code /ws/v1/mapreduce/jobs/{job}/tasks?type=m} (the
 * maps running and when each started) and {@code .../tasks/{task}/attempts/{attempt}} (an
 * attempt's start and finish). Every call is
 * bounded by {@link #TIMEOUT_MS}; a failed one yields "unknown" and one log line per outage.
 */
final class JobFacts {
  private static final Logger LOG = LoggerFactory.getLogger(JobFacts.class);

  /**
   * Longest wait for one answer of the ResourceManager or the AM, milliseconds; 0 = do not ask
   * (every fact is then reported unknown, as before this key). The AM's first answer took over
   * a second on MiniMRYarnCluster on two busy cores (its web app starts on first use); only the
   * ResourceManager's answer delays the reduce (once, at its start), the AM's only the reports.
   */
  static final String TIMEOUT_MS = "datcp.shuffle.job-facts.timeout-ms";
  static final int DEFAULT_TIMEOUT_MS = 3000;

  /** An attempt's start and finish as the AM recorded them, milliseconds since the epoch. */
  record AttemptTimes(long startMillis, long finishMillis) {
    long runMillis() {
      return finishMillis - startMillis;
    }
  }

  /**
   * The job's map tasks running now ({@code count}), the earliest start among them, milliseconds
   * since the epoch (0 when none runs or the AM did not say), and each one's start, ascending:
   * empty unless the AM said it for every one of them and at most {@link #MAX_RUNNING_MAP_STARTS}
   * run (the proto's bound on {@code MapCompleted.running_map_starts_unix_nanos}).
   */
  record RunningMaps(int count, long sinceMillis, List<Long> startsMillis) {
    /** Without each one's start, as when more than the bound run. */
    RunningMaps(int count, long sinceMillis) {
      this(count, sinceMillis, List.of());
    }
  }

  /** Most running maps whose starts are reported; the scheduler refuses more. */
  static final int MAX_RUNNING_MAP_STARTS = 1_000;

  private static final ObjectMapper JSON = new ObjectMapper();
  /** How long calls fail at once after YARN did not answer two in a row. */
  static final long QUIET_NANOS = 10_000_000_000L;

  private final String rmWebApp;
  private final String amWebApp;
  private final String jobId;
  private final String appId;
  private final int timeoutMs;
  private final AtomicBoolean down = new AtomicBoolean();
  /** System.nanoTime() before which no call is made; 0: call. */
  private volatile long quietUntilNanos;
  /** Calls in a row YARN did not answer. */
  private volatile int silences;

  private JobFacts(String rmWebApp, String proxy, String jobId, int timeoutMs) {
    this.rmWebApp = rmWebApp;
    this.jobId = jobId;
    // a MapReduce job's id is its YARN application's with another prefix
    this.appId = "application_" + jobId.substring("job_".length());
    this.amWebApp = proxy + "/proxy/" + appId;
    this.timeoutMs = timeoutMs;
  }

  /** The facts of {@code jobId}, or null when {@link #TIMEOUT_MS} is 0. */
  static JobFacts from(Configuration conf, String jobId) {
    String raw = conf.getTrimmed(TIMEOUT_MS);
    int timeout = DEFAULT_TIMEOUT_MS;
    if (raw != null && !raw.isEmpty()) {
      try {
        timeout = Integer.parseInt(raw);
      } catch (NumberFormatException e) {
        timeout = -1;
      }
      if (timeout < 0) {
        throw new IllegalArgumentException(TIMEOUT_MS + " must be an integer in [0, "
            + Integer.MAX_VALUE + "] (0: do not ask YARN), got '" + raw + "'");
      }
    }
    if (timeout == 0) {
      return null;
    }
    try {
      String scheme = WebAppUtils.getHttpSchemePrefix(conf);
      return new JobFacts(WebAppUtils.getResolvedRMWebAppURLWithScheme(conf),
          scheme + WebAppUtils.getProxyHostAndPort(conf), jobId, timeout);
    } catch (RuntimeException e) {
      // YARN's own addresses are YARN's to check: the shuffle goes on, without the facts
      LOG.warn("DATCP: no ResourceManager web address in the job configuration ({}); job facts"
          + " unknown", e.toString());
      return null;
    }
  }

  int timeoutMillis() {
    return timeoutMs;
  }

  /** When the job was submitted (the application's start at the ResourceManager), or 0. */
  long submitTimeMillis() {
    JsonNode app = get(rmWebApp + "/ws/v1/cluster/apps/" + appId, "app");
    return app == null ? 0 : Math.max(0, app.path("startedTime").asLong(0));
  }

  /**
   * The job's map tasks in state RUNNING, as the AM lists them, or null when it did not answer
   * with a task list. A task's startTime is its first attempt's launch.
   */
  RunningMaps runningMaps() {
    JsonNode tasks = get(amWebApp + "/ws/v1/mapreduce/jobs/" + jobId + "/tasks?type=m", "tasks");
    if (tasks == null) {
      return null;
    }
    // no task list ({"tasks":null}) is no task; one task may come unwrapped from its array
    JsonNode list = tasks.path("task");
    if (!(tasks.isNull() || tasks.isObject())
        || !(list.isMissingNode() || list.isArray() || list.isObject())) {
      return null;
    }
    int count = 0;
    List<Long> starts = new ArrayList<>();
    for (JsonNode task : list.isObject() ? List.of(list) : list) {
      if ("RUNNING".equals(task.path("state").asText())) {
        count++;
        long start = task.path("startTime").asLong(0);
        if (start > 0) {
          starts.add(start);
        }
      }
    }
    Collections.sort(starts);
    long since = starts.isEmpty() ? 0 : starts.get(0);
    return starts.size() == count && count <= MAX_RUNNING_MAP_STARTS
        ? new RunningMaps(count, since, List.copyOf(starts)) : new RunningMaps(count, since);
  }

  /** The attempt's times, or null when the AM did not tell them (or has not finished it). */
  AttemptTimes attempt(TaskAttemptID attempt) {
    JsonNode a = get(amWebApp + "/ws/v1/mapreduce/jobs/" + jobId + "/tasks/"
        + attempt.getTaskID() + "/attempts/" + attempt, "taskAttempt");
    if (a == null) {
      return null;
    }
    long start = a.path("startTime").asLong(0);
    long finish = a.path("finishTime").asLong(0);
    return start > 0 && finish >= start ? new AttemptTimes(start, finish) : null;
  }

  /**
   * The member {@code field} of the JSON answer to GET {@code url}, or null on any failure. After
   * two calls in a row YARN did not answer, calls fail at once for {@link #QUIET_NANOS}: a hung
   * AM costs reduce 0's reports a timeout per that time, not one per map.
   */
  private JsonNode get(String url, String field) {
    long quiet = quietUntilNanos;
    if (quiet != 0 && System.nanoTime() - quiet < 0) {
      return null;
    }
    JsonNode answer;
    try {
      answer = fetch(url);
    } catch (IOException | RuntimeException e) {
      // the AM's web app starts on its first request, which may not be answered in time
      if (++silences >= 2) {
        quietUntilNanos = System.nanoTime() + QUIET_NANOS;
      }
      if (down.compareAndSet(false, true)) {
        LOG.warn("DATCP: YARN does not answer for job facts ({}); reporting them unknown",
            e.toString());
      }
      return null;
    }
    silences = 0;
    quietUntilNanos = 0;
    if (down.compareAndSet(true, false)) {
      LOG.info("DATCP: YARN answers job facts again");
    }
    return answer == null ? null : answer.get(field);
  }

  /** The JSON answer, null when YARN answered with something else; throws when it did not. */
  private JsonNode fetch(String url) throws IOException {
    HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
    c.setConnectTimeout(timeoutMs);
    c.setReadTimeout(timeoutMs);
    c.setRequestProperty("Accept", "application/json");
    try {
      if (c.getResponseCode() != HttpURLConnection.HTTP_OK) {
        return null;
      }
      try (InputStream in = c.getInputStream()) {
        return JSON.readTree(in);
      } catch (JsonProcessingException e) {
        return null;
      }
    } finally {
      c.disconnect();
    }
  }
}
