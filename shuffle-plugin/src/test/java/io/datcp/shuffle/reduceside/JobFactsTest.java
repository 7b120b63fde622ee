package io.datcp.shuffle.reduceside;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * JobFacts against a stand-in for the ResourceManager's web app and proxy (the JDK's HTTP server
 * on loopback, answering the REST paths Hadoop documents): the facts it reads, and "unknown"
 * without delaying past its timeout when YARN is silent, refuses or answers something else.
 */
class JobFactsTest {
  private static final String JOB = "job_1700000000000_0007";
  private static final String AM = "/proxy/application_1700000000000_0007/ws/v1/mapreduce/jobs/"
      + JOB;
  private static final String MAPS = AM + "/tasks";
  private static final TaskAttemptID ATTEMPT =
      TaskAttemptID.forName("attempt_1700000000000_0007_m_000003_1");

  private HttpServer yarn;
  private final ExecutorService pool = Executors.newCachedThreadPool();
  private final AtomicInteger yarnCalls = new AtomicInteger();
  private final AtomicReference<String> lastQuery = new AtomicReference<>();
  /** Path -> JSON answer; a path not here gets 404; "slow" answers after 3 s. */
  private final Map<String, String> answers = new ConcurrentHashMap<>();

  @BeforeEach
  void start() throws IOException {
    yarn = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    yarn.createContext("/", exchange -> {
      yarnCalls.incrementAndGet();
      lastQuery.set(exchange.getRequestURI().getQuery());
      String answer = answers.get(exchange.getRequestURI().getPath());
      if ("slow".equals(answer)) {
        try {
          Thread.sleep(3000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      byte[] body = answer == null ? new byte[0] : answer.getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(answer == null ? 404 : 200, body.length == 0 ? -1 : body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    yarn.setExecutor(pool);
    yarn.start();
  }

  @AfterEach
  void stop() {
    yarn.stop(0);
    pool.shutdownNow();
  }

  private JobFacts facts(int timeoutMs) {
    Configuration conf = new Configuration(false);
    String address = "127.0.0.1:" + yarn.getAddress().getPort();
    conf.set(YarnConfiguration.RM_WEBAPP_ADDRESS, address);
    conf.set(YarnConfiguration.PROXY_ADDRESS, address);
    conf.setInt(JobFacts.TIMEOUT_MS, timeoutMs);
    return JobFacts.from(conf, JOB);
  }

  @Test
  void readsTheSubmitTimeTheRunningMapsAndAnAttemptsTimes() {
    answers.put("/ws/v1/cluster/apps/application_1700000000000_0007",
        "{\"app\":{\"id\":\"application_1700000000000_0007\",\"startedTime\":1700000000123}}");
    // as the AM lists a job's maps: done, running (two), not yet launched
    answers.put(MAPS, "{\"tasks\":{\"task\":["
        + "{\"id\":\"task_1700000000000_0007_m_000000\",\"type\":\"MAP\",\"state\":\"SUCCEEDED\","
        + "\"startTime\":1700000000500,\"finishTime\":1700000004000,\"elapsedTime\":3500},"
        + "{\"id\":\"task_1700000000000_0007_m_000001\",\"type\":\"MAP\",\"state\":\"RUNNING\","
        + "\"startTime\":1700000002000,\"finishTime\":0,\"elapsedTime\":2100},"
        + "{\"id\":\"task_1700000000000_0007_m_000002\",\"type\":\"MAP\",\"state\":\"RUNNING\","
        + "\"startTime\":1700000001500,\"finishTime\":0,\"elapsedTime\":2600},"
        + "{\"id\":\"task_1700000000000_0007_m_000003\",\"type\":\"MAP\",\"state\":\"SCHEDULED\","
        + "\"startTime\":0,\"finishTime\":0,\"elapsedTime\":0}]}}");
    answers.put(AM + "/tasks/task_1700000000000_0007_m_000003/attempts/" + ATTEMPT,
        "{\"taskAttempt\":{\"startTime\":1700000001000,\"finishTime\":1700000005250,"
            + "\"elapsedTime\":4250,\"state\":\"SUCCEEDED\"}}");
    JobFacts f = facts(1000);

    assertThat(f.submitTimeMillis()).isEqualTo(1700000000123L);
    assertThat(f.runningMaps()).isEqualTo(new JobFacts.RunningMaps(2, 1700000001500L,
        List.of(1700000001500L, 1700000002000L)));
    assertThat(lastQuery).as("only the maps asked for").hasValue("type=m");
    JobFacts.AttemptTimes t = f.attempt(ATTEMPT);
    assertThat(t.finishMillis()).isEqualTo(1700000005250L);
    assertThat(t.runMillis()).isEqualTo(4250);
  }

  @Test
  void noTaskListIsNoRunningMapAndOneTaskMayComeUnwrapped() {
    answers.put(MAPS, "{\"tasks\":null}");
    assertThat(facts(1000).runningMaps()).isEqualTo(new JobFacts.RunningMaps(0, 0));
    answers.put(MAPS, "{\"tasks\":{\"task\":{\"state\":\"RUNNING\",\"startTime\":1700000001000}}}");
    assertThat(facts(1000).runningMaps()).isEqualTo(new JobFacts.RunningMaps(1, 1700000001000L,
        List.of(1700000001000L)));
  }

  /**
   * Each running map's start is told only when the AM gave one for every running map and no
   * more run than the proto's bound; the count and the earliest start are told anyway.
   */
  @Test
  void eachRunningMapsStartOnlyWhenAllAreKnownAndWithinTheBound() {
    answers.put(MAPS, "{\"tasks\":{\"task\":[{\"state\":\"RUNNING\",\"startTime\":1700000002000},"
        + "{\"state\":\"RUNNING\",\"startTime\":0},"
        + "{\"state\":\"RUNNING\",\"startTime\":1700000001000}]}}");
    assertThat(facts(1000).runningMaps()).isEqualTo(new JobFacts.RunningMaps(3, 1700000001000L));

    StringBuilder many = new StringBuilder("{\"tasks\":{\"task\":[");
    for (int i = 0; i <= JobFacts.MAX_RUNNING_MAP_STARTS; i++) {
      many.append(i == 0 ? "" : ",").append("{\"state\":\"RUNNING\",\"startTime\":")
          .append(1700000001000L + i).append('}');
    }
    answers.put(MAPS, many.append("]}}").toString());
    assertThat(facts(1000).runningMaps()).isEqualTo(
        new JobFacts.RunningMaps(JobFacts.MAX_RUNNING_MAP_STARTS + 1, 1700000001000L));
  }

  @Test
  void anUnfinishedAttemptHasNoRunTime() {
    answers.put(AM + "/tasks/task_1700000000000_0007_m_000003/attempts/" + ATTEMPT,
        "{\"taskAttempt\":{\"startTime\":1700000001000,\"finishTime\":0}}");

    assertThat(facts(1000).attempt(ATTEMPT)).isNull();
  }

  @Test
  void whatYarnDoesNotTellIsUnknown() {
    // 404 everywhere, then answers without the fields
    JobFacts f = facts(1000);
    assertThat(f.submitTimeMillis()).isZero();
    assertThat(f.runningMaps()).isNull();
    assertThat(f.attempt(ATTEMPT)).isNull();

    answers.put("/ws/v1/cluster/apps/application_1700000000000_0007", "{\"apps\":null}");
    answers.put(MAPS, "{\"job\":{\"id\":\"" + JOB + "\"}}");
    assertThat(f.submitTimeMillis()).isZero();
    assertThat(f.runningMaps()).isNull();
    answers.put(MAPS, "{\"tasks\":{\"task\":7}}");
    assertThat(f.runningMaps()).isNull();
  }

  @Test
  void aSilentYarnCostsATimeoutAndAfterTwoTheNextCallsNone() {
    answers.put(MAPS, "slow");
    answers.put(AM + "/tasks/task_1700000000000_0007_m_000003/attempts/" + ATTEMPT,
        "{\"taskAttempt\":{\"startTime\":1700000001000,\"finishTime\":1700000005250}}");
    JobFacts f = facts(200);
    long start = System.nanoTime();
    assertThat(f.runningMaps()).isNull();
    assertThat((System.nanoTime() - start) / 1_000_000).as("ms waited").isLessThan(2500);
    // one silence may be the AM's web app starting: the next call is made
    assertThat(f.attempt(ATTEMPT)).isNotNull();
    assertThat(f.runningMaps()).isNull();
    assertThat(f.runningMaps()).isNull();
    // two in a row: it answers this one, but nothing is asked for a while
    assertThat(f.attempt(ATTEMPT)).isNull();
    assertThat(yarnCalls).hasValue(4);
  }

  @Test
  void aRefusalIsNoSilence() {
    // a 404 is an answer: the next call is made
    JobFacts f = facts(1000);
    assertThat(f.runningMaps()).isNull();
    answers.put(MAPS,
        "{\"tasks\":{\"task\":[{\"state\":\"RUNNING\",\"startTime\":1700000001000}]}}");
    assertThat(f.runningMaps()).isEqualTo(new JobFacts.RunningMaps(1, 1700000001000L,
        List.of(1700000001000L)));
  }

  @Test
  void zeroTurnsItOffAndABadValueNamesTheKey() {
    assertThat(facts(0)).isNull();
    Configuration conf = new Configuration(false);
    conf.set(JobFacts.TIMEOUT_MS, "-5");
    assertThatThrownBy(() -> JobFacts.from(conf, JOB))
        .hasMessageContaining(JobFacts.TIMEOUT_MS).hasMessageContaining("-5");
    conf.set(JobFacts.TIMEOUT_MS, "soon");
    assertThatThrownBy(() -> JobFacts.from(conf, JOB))
        .hasMessageContaining(JobFacts.TIMEOUT_MS).hasMessageContaining("soon");
  }
}
