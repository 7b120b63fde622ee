package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.api.rest.WriteToken;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The HTTP side over real connections: REST policy API, views, OpenAPI, metrics, health. */
class RestApiTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String GOLD = "{\"order\":1,\"queue\":\"gold\",\"importance\":3,"
      + "\"phi\":0.5,\"mode\":\"datcp\",\"quenchMode\":\"suspend\"}";

  @TempDir Path dir;
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private SchedulerServer server;
  // HTTP/1.1 as Prometheus and browsers speak to a plain port: the JDK client's default h2c
  // upgrade (deprecated by RFC 9113) once hung 18 s on /metrics and ended in EOF
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .build();

  @BeforeEach
  void start() throws Exception {
    server = servers.start(dir);
  }

  private HttpResponse<String> send(String method, String path, String body, String token)
      throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + server.httpPort() + path))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body))
        .header("Content-Type", "application/json");
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> get(String path) throws Exception {
    return send("GET", path, null, null);
  }

  private HttpResponse<String> write(String method, String path, String body) throws Exception {
    return send(method, path, body, server.token());
  }

  private static JsonNode json(HttpResponse<String> r) throws Exception {
    return JSON.readTree(r.body());
  }

  @Test
  void healthzAnswers200WhenReady() throws Exception {
    assertThat(get("/healthz").statusCode()).isEqualTo(200);
  }

  @Test
  void policiesCanBeCreatedReadReplacedAndDeletedWithTheToken() throws Exception {
    HttpResponse<String> put = write("PUT", "/api/v1/policies/gold", GOLD);
    assertThat(put.statusCode()).isEqualTo(200);
    assertThat(json(put).get("name").asText()).isEqualTo("gold");

    JsonNode one = json(get("/api/v1/policies/gold"));
    assertThat(one.get("importance").asDouble()).isEqualTo(3.0);
    assertThat(one.get("mode").asText()).isEqualTo("datcp");
    assertThat(json(get("/api/v1/policies")).get("rules")).hasSize(1);

    String replacement = "{\"rules\":[{\"name\":\"etl\",\"order\":2,\"jobNamePattern\":\"etl-.*\","
        + "\"minPriority\":\"high\",\"importance\":1,\"phi\":0.25,\"mode\":\"d2tcp\","
        + "\"quenchMode\":\"kill\"}]}";
    assertThat(write("PUT", "/api/v1/policies", replacement).statusCode()).isEqualTo(200);
    assertThat(json(get("/api/v1/policies")).get("rules").get(0).get("name").asText())
        .isEqualTo("etl");
    assertThat(get("/api/v1/policies/gold").statusCode()).isEqualTo(404);

    assertThat(write("DELETE", "/api/v1/policies/etl", null).statusCode()).isEqualTo(204);
    assertThat(write("DELETE", "/api/v1/policies/etl", null).statusCode()).isEqualTo(404);
  }

  @Test
  void writesWithoutTheRightTokenAreRefusedAndReadsAreOpen() throws Exception {
    HttpResponse<String> none = send("PUT", "/api/v1/policies/gold", GOLD, null);
    HttpResponse<String> wrong = send("PUT", "/api/v1/policies/gold", GOLD, "not-the-token");
    HttpResponse<String> delete = send("DELETE", "/api/v1/policies/gold", null, null);

    assertThat(List.of(none.statusCode(), wrong.statusCode(), delete.statusCode()))
        .containsOnly(401);
    assertThat(json(none).get("field").asText()).isEqualTo("Authorization");
    assertThat(get("/api/v1/policies").statusCode()).isEqualTo(200);
    assertThat(server.service().listPolicies()).isEmpty();
  }

  @Test
  void invalidInputGetsA400NamingTheField() throws Exception {
    Map<String, String> badBodies = Map.of(
        "phi", GOLD.replace("\"phi\":0.5", "\"phi\":1.5"),
        "mode", GOLD.replace("\"datcp\"", "\"fast\""),
        "quenchMode", GOLD.replace("\"suspend\"", "\"pause\""),
        "importnce", GOLD.replace("\"importance\"", "\"importnce\""),
        "order", GOLD.replace("\"order\":1", "\"order\":\"first\""),
        "jobNamePattern", GOLD.replace("\"queue\":\"gold\"", "\"jobNamePattern\":\"(\""),
        "name", GOLD.replace("{", "{\"name\":\"other\","));
    List<String> fields = new ArrayList<>();
    for (Map.Entry<String, String> e : badBodies.entrySet()) {
      HttpResponse<String> r = write("PUT", "/api/v1/policies/gold", e.getValue());
      assertThat(r.statusCode()).as(e.getKey()).isEqualTo(400);
      fields.add(json(r).get("field").asText());
      assertThat(json(r).get("error").asText()).as(e.getKey()).startsWith(e.getKey());
    }
    assertThat(fields).containsExactlyInAnyOrderElementsOf(badBodies.keySet());
    assertThat(server.service().listPolicies()).isEmpty();
  }

  @Test
  void aReplacementWithOneBadRuleChangesNothing() throws Exception {
    write("PUT", "/api/v1/policies/gold", GOLD);
    String body = "{\"rules\":[" + GOLD.replace("{", "{\"name\":\"a\",") + ","
        + GOLD.replace("{", "{\"name\":\"b\",").replace("\"phi\":0.5", "\"phi\":-1") + "]}";

    HttpResponse<String> r = write("PUT", "/api/v1/policies", body);

    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r).get("field").asText()).isEqualTo("rules[1].phi");
    assertThat(json(get("/api/v1/policies")).get("rules")).singleElement()
        .satisfies(n -> assertThat(n.get("name").asText()).isEqualTo("gold"));
  }

  @Test
  void jobsAndFlowsAreServedFromTheLiveModel() throws Exception {
    long t0 = server.service().nowUnixNanos();
    server.service().report("node1", List.of(
        new JobEvent.ReduceStarted(t0, "job_1", 0, "node1", 2, 1,
            new JobConf("default", "alice", "sort", JobPriority.NORMAL), 0),
        new JobEvent.MapCompleted(t0, "job_1", 0, 0, "m1", 1_000_000_000L, 10_000_000L, 1)));
    server.service().reportOutcomes("m1", List.of(new FlowOutcome("job_1", 0, "m1", "node1",
        10_000_000L, t0, t0 + 2_000_000_000L, t0 + 1_000_000_000L, true, QuenchOutcome.NONE, null)));

    JsonNode jobs = json(get("/api/v1/jobs"));
    assertThat(jobs.get("overall").get("deadlineMetRatio").asDouble()).isEqualTo(1.0);
    JsonNode job = jobs.get("jobs").get(0);
    assertThat(job.get("id").asText()).isEqualTo("job_1");
    assertThat(job.get("state").asText()).isEqualTo("running");
    assertThat(job.get("reduces").get(0).get("deadlineReason").asText())
        .contains("waiting for 1 maps");
    assertThat(json(get("/api/v1/jobs/job_1")).get("mapsDone").asInt()).isEqualTo(1);
    assertThat(get("/api/v1/jobs/job_2").statusCode()).isEqualTo(404);
    JsonNode flows = json(get("/api/v1/flows?job=job_1"));
    assertThat(flows.get("flows")).singleElement()
        .satisfies(f -> assertThat(f.get("met").asBoolean()).isTrue());
    assertThat(get("/api/v1/flows?limit=0").statusCode()).isEqualTo(400);
  }

  @Test
  void theOpenApiDocumentDescribesEveryRestRoute() throws Exception {
    HttpResponse<String> r = get("/api/v1/openapi.json");
    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode doc = json(r);
    assertThat(doc.get("openapi").asText()).startsWith("3.");
    List<String> paths = new ArrayList<>();
    doc.get("paths").fieldNames().forEachRemaining(paths::add);
    assertThat(paths).contains("/api/v1/policies", "/api/v1/policies/{name}", "/api/v1/jobs",
        "/api/v1/jobs/{id}", "/api/v1/flows", "/api/v1/nodes", "/api/v1/nodes/{host}/token",
        "/api/v1/nodes/{host}", "/api/v1/switches", "/api/v1/switches/{name}");
    assertThat(doc.get("paths").get("/api/v1/policies/{name}").get("put").get("security"))
        .isNotNull();
  }

  @Test
  void prometheusMetricsAndTheDashboardAreServedWithoutAToken() throws Exception {
    server.service().lookup("m1", "job_unknown", 0, 1000);
    assertThat(get("/api/v1/jobs").statusCode()).isEqualTo(200);
    HttpResponse<String> metrics = get("/metrics");
    assertThat(metrics.statusCode()).isEqualTo(200);
    assertThat(metrics.body()).contains("datcp_policy_lookup_seconds_count 1",
        "datcp_jobs_running");
    // per-route request metrics: count, sum and max, no per-request quantile histograms
    assertThat(metrics.body()).contains("datcp_http_request_duration_seconds_count");
    assertThat(metrics.body().lines().filter(l -> l.startsWith("datcp_http_")))
        .noneMatch(l -> l.contains("quantile="));
    HttpResponse<String> page = get("/");
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body()).contains("<table id=\"jobs\"");
    assertThat(get("/dashboard/overview.js").statusCode()).isEqualTo(200);
  }

  @Test
  void theGeneratedTokenIsPrivateToItsOwnerAndSurvivesRestarts() throws Exception {
    Path file = dir.resolve(WriteToken.FILE_NAME);
    assertThat(Files.getPosixFilePermissions(file))
        .isEqualTo(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
    String first = server.token();
    server.close();
    server = servers.start(dir);
    assertThat(server.token()).isEqualTo(first).hasSize(64);
  }

  @Test
  void aConfiguredTokenReplacesTheGeneratedOne() throws Exception {
    server.close();
    String configured = "operator-token-0123456789";
    server = servers.start(dir, Clock.systemUTC(),
        SchedulerConf.fromMap(Map.of("auth.token", configured, "tls.plaintext", "true")));
    assertThat(send("PUT", "/api/v1/policies/gold", GOLD, configured).statusCode())
        .isEqualTo(200);
  }

  @Test
  void switchSettingsAreReadOpenlyAndReplacedWithTheToken() throws Exception {
    HttpResponse<String> def = get("/api/v1/switches/tor1");
    assertThat(def.statusCode()).isEqualTo(200);
    assertThat(json(def).get("ports").get(0).get("interface").asText()).isEqualTo("*");
    assertThat(json(def).get("ports").get(0).get("redMinBytes").asLong()).isEqualTo(80_000);
    String port = "{\"ports\":[{\"interface\":\"eth1\",\"rateBitsPerSecond\":1000000000,"
        + "\"bufferBytes\":200000,\"mark\":\"red\",\"redMinBytes\":80000,"
        + "\"redMaxBytes\":120000,\"redMaxP\":1.0,\"kBytes\":30000,"
        + "\"dscpBand\":{\"34\":0,\"0\":1,\"8\":2}}]}";

    assertThat(send("PUT", "/api/v1/switches/tor1", port, null).statusCode()).isEqualTo(401);
    assertThat(write("PUT", "/api/v1/switches/tor1", port).statusCode()).isEqualTo(200);
    HttpResponse<String> bad = write("PUT", "/api/v1/switches/tor1",
        port.replace("\"redMaxP\":1.0", "\"redMaxP\":3"));
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(json(bad).get("field").asText()).isEqualTo("ports[0].redMaxP");

    assertThat(json(get("/api/v1/switches")).get("switches").get(0).asText()).isEqualTo("tor1");
    assertThat(json(get("/api/v1/switches/tor1")).get("ports").get(0).get("rateBitsPerSecond")
        .asLong()).isEqualTo(1_000_000_000L);
  }
}
