package io.datcp.scheduler.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.MutableClock;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job view (GET /api/v1/jobs/{id}) shows when the planner expected the job's last map to
 * end, by the map-wave rule and by the last-completion rule, first, latest and all, so that the
 * Docker runners can hold both against the real end. The job is the Docker A/B's job A: 4 maps
 * started together at T0 on 4 slots, two end after 10 s, the two slow ones at 15 s and 20 s.
 */
class MapEndEstimateViewTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long S = 1_000_000_000L;
  private static final String NODE = "node1";
  private static final JobConf CONF = new JobConf("default", "alice", "a", JobPriority.NORMAL);

  @TempDir Path dir;
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private final long t0 = clock.nanos();
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .build();

  /** Reduce 0's report at T0 + {@code seconds}: map {@code mapId} done after running since T0. */
  private static JobEvent.MapCompleted mapDone(long t0, int mapId, long seconds, int running) {
    return new JobEvent.MapCompleted(t0 + seconds * S, "a", 0, mapId, "m" + mapId, seconds * S,
        1_000_000L, running, 0, running > 0 ? t0 : 0);
  }

  private JsonNode job(SchedulerServer server) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + server.httpPort() + "/api/v1/jobs/a")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    return JSON.readTree(r.body());
  }

  private void at(SchedulerServer server, long seconds, JobEvent... events) {
    clock.advance(Duration.ofNanos(t0 + seconds * S - clock.nanos()));
    server.service().report(NODE, List.of(events));
  }

  @Test
  void theJobViewShowsTheFirstAndLatestEstimateOfTheLastMapsEndByBothRules() throws Exception {
    SchedulerServer server = servers.start(dir, clock,
        SchedulerConf.fromMap(Map.of("tls.plaintext", "true")));
    at(server, 10, new JobEvent.ReduceStarted(t0, "a", 0, NODE, 4, 1, CONF, 0),
        mapDone(t0, 0, 10, 2), mapDone(t0, 1, 10, 2));
    JsonNode first = job(server).get("firstMapEndEstimate");
    // the running maps (since T0) end a median (10 s) after their start; the old rule puts a
    // wave of the median after the last completion
    assertThat(first.get("madeUnixNanos").asLong()).isEqualTo(t0 + 10 * S);
    assertThat(first.get("mapsDone").asInt()).isEqualTo(2);
    assertThat(first.get("mapsRunning").asInt()).isEqualTo(2);
    assertThat(first.get("runningMapsSinceUnixNanos").asLong()).isEqualTo(t0);
    assertThat(first.get("medianMapNanos").asLong()).isEqualTo(10 * S);
    assertThat(first.get("mapWaveUnixNanos").asLong()).isEqualTo(t0 + 10 * S);
    assertThat(first.get("lastCompletionUnixNanos").asLong()).isEqualTo(t0 + 20 * S);
    assertThat(first.get("earliestStartUnixNanos").asLong()).isEqualTo(t0 + 10 * S);
    assertThat(first.get("rule").asText()).isEqualTo("EARLIEST_START");

    at(server, 15, mapDone(t0, 2, 15, 1));
    // a report that changes nothing about the maps re-makes the same estimate: not news
    at(server, 16, mapDone(t0, 2, 15, 1));
    JsonNode latest = job(server).get("latestMapEndEstimate");
    // median of 10, 10, 15 s: the one still running ends at max(T0 + 15, T0 + 10); the old
    // rule a median after the last completion
    assertThat(latest.get("madeUnixNanos").asLong()).isEqualTo(t0 + 15 * S);
    assertThat(latest.get("mapsDone").asInt()).isEqualTo(3);
    assertThat(latest.get("mapWaveUnixNanos").asLong()).isEqualTo(t0 + 15 * S);
    assertThat(latest.get("lastCompletionUnixNanos").asLong()).isEqualTo(t0 + 25 * S);

    // every estimate that moved an end, oldest first
    assertThat(job(server).get("mapEndEstimates")).containsExactly(first, latest);

    at(server, 20, mapDone(t0, 3, 20, 0));
    JsonNode done = job(server);
    assertThat(done.get("mapsDone").asInt()).isEqualTo(4);
    // no map left, no estimate: the first and latest stay for the runners to compare
    assertThat(done.get("firstMapEndEstimate")).isEqualTo(first);
    assertThat(done.get("latestMapEndEstimate")).isEqualTo(latest);
    assertThat(done.get("mapEndEstimates")).containsExactly(first, latest);
  }

  /**
   * With each running map's start the view shows the list-scheduling estimate beside the rules
   * before it: 6 maps of 10 s, 2 done at T0 + 10 s, 2 running (started at T0 + 2 s and
   * T0 + 6 s: free at 12 and 16 s), 2 not started, which take those slots: the last ends at
   * T0 + 26 s; the earliest start's rule says 12 + 10 = 22 s, the last completion's 10 + 2 x 10.
   */
  @Test
  void theJobViewShowsTheEstimateByEachRunningMapsStart() throws Exception {
    SchedulerServer server = servers.start(dir, clock,
        SchedulerConf.fromMap(Map.of("tls.plaintext", "true")));
    List<Long> starts = List.of(t0 + 6 * S, t0 + 2 * S);
    at(server, 10, new JobEvent.ReduceStarted(t0, "a", 0, NODE, 6, 1, CONF, 0),
        mapDone(t0, 0, 10, -1), new JobEvent.MapCompleted(t0 + 10 * S, "a", 0, 1, "m1", 10 * S,
            1_000_000L, 2, 0, t0 + 2 * S, starts));
    JsonNode e = job(server).get("latestMapEndEstimate");
    assertThat(e.get("rule").asText()).isEqualTo("EACH_START");
    assertThat(e.get("mapWaveUnixNanos").asLong()).isEqualTo(t0 + 26 * S);
    assertThat(e.get("earliestStartUnixNanos").asLong()).isEqualTo(t0 + 22 * S);
    assertThat(e.get("lastCompletionUnixNanos").asLong()).isEqualTo(t0 + 30 * S);
  }
}
