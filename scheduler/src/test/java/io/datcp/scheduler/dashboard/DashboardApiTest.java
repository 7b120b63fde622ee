package io.datcp.scheduler.dashboard;

import static io.datcp.scheduler.dashboard.GrpcJobs.S;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.proto.v1.QuenchOutcome;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dashboard's JSON views and the job histograms in /metrics, over HTTP, after jobs were
 * reported through gRPC.
 */
class DashboardApiTest {
  @TempDir Path dir;
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  // HTTP/1.1 as Prometheus and browsers speak to a plain port: the JDK client's default h2c
  // upgrade (deprecated by RFC 9113) once hung 18 s on /metrics and ended in EOF
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .build();
  private final ObjectMapper json = new ObjectMapper();
  private SchedulerServer server;
  private GrpcJobs grpc;
  private long now;

  @BeforeEach
  void start() throws Exception {
    server = servers.start(dir, Clock.systemUTC(), TestServices.dev());
    grpc = new GrpcJobs(server);
    now = server.service().nowUnixNanos();
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + server.httpPort() + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** A job in {@code queue} that took {@code seconds} and ended {@code ago} seconds ago. */
  private void job(String id, String queue, long seconds, long ago, boolean succeeded) {
    long finish = now - ago * S;
    grpc.start(id, queue, "alice", "node1", finish - seconds * S, 1, 1);
    grpc.ended(id, 0, "m0", "node1", finish - 3 * S, finish - 2 * S,
        succeeded ? finish - 5 * S / 2 : finish - S / 2, QuenchOutcome.QUENCH_OUTCOME_NONE);
    grpc.finish(id, "node1", finish, succeeded);
  }

  /** The value of the one /metrics sample named {@code name} with exactly {@code labels}. */
  private static double sample(String metrics, String name, String labels) {
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name + "{" + labels + "}") + " (\\S+)$")
        .matcher(metrics);
    assertThat(m.find()).as("%s{%s} in /metrics", name, labels).isTrue();
    return Double.parseDouble(m.group(1));
  }

  @Test
  void jobCompletionAndShuffleHistogramsByQueueAndOutcomeAppearAfterJobsEnd() throws Exception {
    job("job_1", "prod", 20, 100, true);
    job("job_2", "prod", 40, 50, true);
    job("job_3", "prod", 8, 10, false);
    String metrics = get("/metrics").body();

    String ok = "outcome=\"succeeded\",queue=\"prod\"";
    assertThat(sample(metrics, "datcp_job_completion_seconds_count", ok)).isEqualTo(2);
    assertThat(sample(metrics, "datcp_job_completion_seconds_sum", ok)).isEqualTo(60);
    assertThat(sample(metrics, "datcp_job_completion_seconds_bucket", ok + ",le=\"20.0\""))
        .isEqualTo(1);
    assertThat(sample(metrics, "datcp_job_completion_seconds_bucket", ok + ",le=\"30.0\""))
        .isEqualTo(1);
    assertThat(sample(metrics, "datcp_job_completion_seconds_bucket", ok + ",le=\"60.0\""))
        .isEqualTo(2);
    assertThat(sample(metrics, "datcp_job_completion_seconds_bucket", ok + ",le=\"+Inf\""))
        .isEqualTo(2);
    String failed = "outcome=\"failed\",queue=\"prod\"";
    assertThat(sample(metrics, "datcp_job_completion_seconds_count", failed)).isEqualTo(1);
    // each reduce's shuffle ran from its start to 1 s before the job ended
    assertThat(sample(metrics, "datcp_job_shuffle_seconds_sum", ok)).isEqualTo(58);
    assertThat(sample(metrics, "datcp_job_shuffle_seconds_bucket", failed + ",le=\"10.0\""))
        .isEqualTo(1);
    assertThat(sample(metrics, "datcp_flows_ended_total", "deadline=\"met\"")).isEqualTo(2);
    assertThat(sample(metrics, "datcp_flows_ended_total", "deadline=\"missed\"")).isEqualTo(1);
    // each job's first plan on its reducer's host; every kind is exported from the start
    assertThat(sample(metrics, "datcp_planner_decisions_total", "decision=\"new\"")).isEqualTo(3);
    assertThat(sample(metrics, "datcp_planner_decisions_total", "decision=\"not_first\""))
        .isEqualTo(0);
  }

  @Test
  void queueLabelsAreBoundedTheRestCountAsOther() throws Exception {
    int queues = JobMetrics.MAX_QUEUE_LABELS + 2;
    for (int q = 0; q < queues; q++) {
      job("job_q" + q, "q" + q, 10, queues - q, true);
    }
    String metrics = get("/metrics").body();
    assertThat(sample(metrics, "datcp_job_completion_seconds_count",
        "outcome=\"succeeded\",queue=\"q0\"")).isEqualTo(1);
    assertThat(sample(metrics, "datcp_job_completion_seconds_count",
        "outcome=\"succeeded\",queue=\"other\"")).isEqualTo(2);
    assertThat(metrics).doesNotContain("queue=\"q" + (queues - 1) + "\"");
  }

  @Test
  void overviewFiltersByQueueAndFinishTime() throws Exception {
    job("job_1", "prod", 20, 300, true);
    job("job_2", "adhoc", 40, 200, true);
    job("job_3", "prod", 30, 100, false);
    JsonNode all = json.readTree(get("/api/v1/dashboard/overview").body());
    assertThat(all.get("jobs")).extracting(j -> j.get("id").asText())
        .containsExactly("job_1", "job_2", "job_3");
    assertThat(all.get("queues")).extracting(JsonNode::asText).containsExactly("adhoc", "prod");
    assertThat(all.get("cdf")).extracting(p -> p.get("completionSeconds").asDouble())
        .containsExactly(20.0, 30.0, 40.0);

    long since = now - 250 * S;
    JsonNode prodLately = json.readTree(
        get("/api/v1/dashboard/overview?queue=prod&since=" + since).body());
    assertThat(prodLately.get("jobs")).extracting(j -> j.get("id").asText())
        .containsExactly("job_3");
    assertThat(prodLately.get("metRatio")).extracting(p -> p.get("ratio").asDouble())
        .containsExactly(0.0);
    // the filter's choices stay unfiltered
    assertThat(prodLately.get("queues")).hasSize(2);

    HttpResponse<String> bad = get("/api/v1/dashboard/overview?since=" + now + "&until=1");
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(json.readTree(bad.body()).get("field").asText()).isEqualTo("until");
  }

  @Test
  void aHostPageKeepsTheFlowsOfJobsThatEndedInTheLastMinute() throws Exception {
    job("job_old", "prod", 20, 120, true);
    job("job_new", "prod", 20, 10, false);
    JsonNode page = json.readTree(get("/api/v1/dashboard/hosts/node1").body());
    assertThat(page.get("jobs")).isEmpty();
    assertThat(page.get("ended")).extracting(e -> e.get("outcome").get("jobId").asText())
        .containsExactly("job_new");
    assertThat(page.get("ended").get(0).get("words").asText())
        .isEqualTo("missed its deadline by 1.50 s: took 2.50 s of 1.00 s allowed");
  }

  @Test
  void theHostListHoldsTheHostsWhereAReduceShufflesSortedUntilItsShuffleEnds() throws Exception {
    grpc.start("job_a", "prod", "alice", "node3", now, 2, 1);
    grpc.start("job_b", "prod", "alice", "node1", now, 2, 1);
    grpc.start("job_c", "prod", "alice", "node3", now, 2, 1);
    assertThat(hosts()).containsExactly("node1", "node3");
    grpc.finish("job_b", "node1", now + 2 * S, true);
    grpc.finish("job_a", "node3", now + 2 * S, true);
    assertThat(hosts()).containsExactly("node3");
  }

  private List<String> hosts() throws Exception {
    List<String> hosts = new ArrayList<>();
    json.readTree(get("/api/v1/dashboard/hosts").body()).get("hosts")
        .forEach(h -> hosts.add(h.asText()));
    return hosts;
  }

  @Test
  void unknownJobIsNotFoundAndAHostWithoutShufflesHasAnEmptyPlan() throws Exception {
    assertThat(get("/api/v1/dashboard/jobs/job_none").statusCode()).isEqualTo(404);
    JsonNode plan = json.readTree(get("/api/v1/dashboard/hosts/node9").body());
    assertThat(plan.get("jobs")).isEmpty();
    assertThat(plan.get("ended")).isEmpty();
    assertThat(hosts()).isEmpty();
  }
}
