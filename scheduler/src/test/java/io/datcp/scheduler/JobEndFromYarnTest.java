package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.ingest.YarnApps;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobView;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.serve.PolicyUpdate;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * No task reports a job's end: the scheduler learns it from the ResourceManager, asking about
 * jobs whose reduces all finished their shuffle, and ends them as a reported JobFinished would.
 */
class JobEndFromYarnTest {
  private static final String JOB = "job_1700000000000_0001";
  private static final long MB = 1_000_000L;
  private static final long S = 1_000_000_000L;
  /** YARN's finish time of the application: 10 s after the clock's start, milliseconds. */
  private static final long FINISHED_MILLIS =
      Instant.parse("2026-01-01T00:00:10Z").toEpochMilli();

  /** What the job's tasks claim (trusted in these development-mode services). */
  private static final JobConf CLAIM =
      new JobConf("default", "alice", "etl", JobPriority.NORMAL);

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private final FakeResourceManager rm = new FakeResourceManager();

  @AfterEach
  void stopRm() {
    rm.close();
  }

  /** The fake ResourceManager, running the job; its address. */
  private String startRm() {
    rm.queue(JOB, "default");
    return rm.address();
  }

  private void yarnSays(String state, String finalStatus, long finishedMillis) {
    rm.ended(JOB, state, finalStatus, finishedMillis);
  }

  private SchedulerService service(String rmAddress) {
    return TestServices.create(dir, clock, TestServices.dev(), new YarnApps(rmAddress));
  }

  /** Submitted 2 s before the clock's start; reduce 0 of {@code reduces} starts on node1. */
  private void started(SchedulerService s, int reduces) {
    long t = clock.nanos();
    s.report("node1", List.of(
        new JobEvent.ReduceStarted(t, JOB, 0, "node1", 1, reduces, CLAIM, t - 2 * S),
        new JobEvent.MapCompleted(t, JOB, 0, 0, "m1", S, 10 * MB, 0)));
  }

  private void shuffleFinished(SchedulerService s, int reduce) {
    s.report("node1", List.of(new JobEvent.ShuffleFinished(clock.nanos(), JOB, reduce)));
  }

  /**
   * A one-reduce job whose flow from map host m1 (watching its policies into {@code updates})
   * was looked up and whose shuffle finished; YARN already says it succeeded.
   */
  private SchedulerService shuffledAndSucceeded(List<PolicyUpdate> updates) {
    SchedulerService s = service(startRm());
    s.watch("m1", false, updates::add);
    started(s, 1);
    s.lookup("m1", JOB, 0, 10 * MB);
    shuffleFinished(s, 0);
    yarnSays("FINISHED", "SUCCEEDED", FINISHED_MILLIS);
    return s;
  }

  private static JobView view(SchedulerService s) {
    return s.job(JOB).orElseThrow();
  }

  @Test
  void aSucceededApplicationEndsTheJobAtYarnsFinishTime() {
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    SchedulerService s = shuffledAndSucceeded(updates);

    assertThat(s.pollJobEnds().join()).isEqualTo(1);

    JobView v = view(s);
    assertThat(v.state()).isEqualTo("succeeded");
    assertThat(v.finishUnixNanos()).isEqualTo(FINISHED_MILLIS * 1_000_000L);
    assertThat(v.completionTimeNanos()).isEqualTo(12 * S);
    assertThat(s.runningJobCount()).isZero();
    assertThat(updates).filteredOn(PolicyUpdate::jobFinished).singleElement()
        .satisfies(u -> assertThat(u.policy().jobId()).isEqualTo(JOB));
    // an ended job is not asked about again
    clock.advance(Duration.ofSeconds(5));
    assertThat(s.pollJobEnds().join()).isZero();
    assertThat(rm.appRequests()).isEqualTo(1);
  }

  @Test
  void aJobEndedFromYarnMeasuresTheRateItsFlowsAchieved() {
    SchedulerService s = shuffledAndSucceeded(new CopyOnWriteArrayList<>());
    long t = clock.nanos();
    // the flow of the first (and only) job on node1: 10 MB in 2 s
    s.reportOutcomes("m1", List.of(TestServices.outcome(JOB, "m1", "node1", 10 * MB, t,
        t + 2 * S)));

    assertThat(s.pollJobEnds().join()).isEqualTo(1);
    assertThat(TestServices.newJobsPlan(s, "node1", clock.nanos()))
        .contains("40.0 Mbit/s (lowest of the 1 first-job shuffles measured");
  }

  @ParameterizedTest
  @CsvSource({"FAILED, FAILED", "KILLED, KILLED", "FINISHED, FAILED"})
  void anApplicationThatDidNotSucceedEndsTheJobAsFailed(String yarnState, String yarnFinal) {
    SchedulerService s = service(startRm());
    started(s, 1);
    shuffleFinished(s, 0);
    yarnSays(yarnState, yarnFinal, FINISHED_MILLIS);

    assertThat(s.pollJobEnds().join()).isEqualTo(1);

    assertThat(view(s).state()).isEqualTo("failed");
    assertThat(view(s).finishUnixNanos()).isEqualTo(FINISHED_MILLIS * 1_000_000L);
  }

  @Test
  void whileYarnSaysRunningTheJobRunsAndIsAskedAtMostOncePerPeriod() {
    SchedulerService s = service(startRm());
    started(s, 1);
    shuffleFinished(s, 0);

    assertThat(s.pollJobEnds().join()).isZero();
    assertThat(s.pollJobEnds().join()).isZero();
    assertThat(rm.appRequests()).isEqualTo(1);
    assertThat(view(s).state()).isEqualTo("running");
    assertThat(view(s).completionTimeNanos()).isZero();

    clock.advance(Duration.ofMillis(1000));
    assertThat(s.pollJobEnds().join()).isZero();
    assertThat(rm.appRequests()).isEqualTo(2);
    assertThat(view(s).state()).isEqualTo("running");
  }

  @Test
  void aJobWithAReduceStillShufflingIsNotAskedAbout() {
    SchedulerService s = service(startRm());
    yarnSays("FINISHED", "SUCCEEDED", FINISHED_MILLIS);
    started(s, 2);
    s.report("node2", List.of(
        new JobEvent.ReduceStarted(clock.nanos(), JOB, 1, "node2", 1, 2, CLAIM, 0)));
    shuffleFinished(s, 0);

    assertThat(s.pollJobEnds().join()).isZero();
    assertThat(rm.appRequests()).isEqualTo(0);
    assertThat(view(s).state()).isEqualTo("running");

    s.report("node2", List.of(new JobEvent.ShuffleFinished(clock.nanos(), JOB, 1)));
    assertThat(s.pollJobEnds().join()).isEqualTo(1);
    assertThat(rm.appRequests()).isEqualTo(1);
    assertThat(view(s).state()).isEqualTo("succeeded");
  }

  @Test
  void anUnreachableResourceManagerLeavesTheJobRunning() throws Exception {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    SchedulerService s = service("http://127.0.0.1:" + closedPort);
    started(s, 1);
    shuffleFinished(s, 0);

    assertThat(s.pollJobEnds().join()).isZero();
    assertThat(view(s).state()).isEqualTo("running");
  }

  @Test
  void anApplicationTheResourceManagerDoesNotKnowLeavesTheJobRunning() {
    SchedulerService s = service(startRm());
    long t = clock.nanos();
    String other = "job_1700000000000_0002";
    s.report("node1", List.of(
        new JobEvent.ReduceStarted(t, other, 0, "node1", 1, 1, CLAIM, 0),
        new JobEvent.ShuffleFinished(t, other, 0)));

    assertThat(s.pollJobEnds().join()).isZero();
    assertThat(s.job(other).orElseThrow().state()).isEqualTo("running");
  }

  @Test
  void aJobFinishedReportedWhileTheResourceManagerAnswersIsNotAppliedTwice() {
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    SchedulerService s = shuffledAndSucceeded(updates);
    CompletableFuture<Void> release = new CompletableFuture<>();
    rm.answerWhen(release);

    CompletableFuture<Integer> poll = s.pollJobEnds();
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(rm.appRequests()).isEqualTo(1));
    long reported = clock.nanos() + S;
    s.report("node1", List.of(new JobEvent.JobFinished(reported, JOB, false)));
    release.complete(null);

    assertThat(poll.join()).isZero();
    assertThat(view(s).state()).isEqualTo("failed");
    assertThat(view(s).finishUnixNanos()).isEqualTo(reported);
    assertThat(updates).filteredOn(PolicyUpdate::jobFinished).hasSize(1);
  }

  @Test
  void theServerPollsOnItsScheduleAndRestShowsYarnsCompletionTime() throws Exception {
    long finishedMillis = System.currentTimeMillis() + 5_000;
    yarnSays("FINISHED", "SUCCEEDED", finishedMillis);
    SchedulerServer server = servers.start(dir, Clock.systemUTC(), SchedulerConf.fromMap(
        Map.of("yarn.rm.webappAddress", startRm(), "jobs.endPollMillis", "100",
            "tls.plaintext", "true")));
    long t = System.currentTimeMillis() * 1_000_000L;
    long submitted = t - 2 * S;
    server.service().report("node1", List.of(
        new JobEvent.ReduceStarted(t, JOB, 0, "node1", 1, 1, CLAIM, submitted),
        new JobEvent.ShuffleFinished(t, JOB, 0)));

    HttpClient http = HttpClient.newHttpClient();
    HttpRequest get = HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + server.httpPort() + "/api/v1/jobs/" + JOB)).build();
    ObjectMapper json = new ObjectMapper();
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      JsonNode job = json.readTree(
          http.send(get, java.net.http.HttpResponse.BodyHandlers.ofString()).body());
      assertThat(job.get("state").asText()).isEqualTo("succeeded");
      assertThat(job.get("finishUnixNanos").asLong()).isEqualTo(finishedMillis * 1_000_000L);
      assertThat(job.get("completionTimeNanos").asLong())
          .isEqualTo(finishedMillis * 1_000_000L - submitted);
    });
  }
}
