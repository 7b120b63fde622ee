package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.scheduler.config.SchedulerConf;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * server.eventLoops: both servers and the ResourceManager client share one group of that many
 * threads and serve on it.
 */
class ServerEventLoopsTest {
  @TempDir Path dir;
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();

  @Test
  void bothServersAndTheResourceManagerClientRunOnTheConfiguredNumberOfEventLoops()
      throws Exception {
    SchedulerConf conf = SchedulerConf.fromMap(Map.of("server.eventLoops", "3", "tls.plaintext",
        "true", "auth.nodes.required", "false", "yarn.rm.webappAddress", "http://127.0.0.1:9"));
    SchedulerServer server = servers.start(dir, Clock.systemUTC(), conf);
    assertThat(server.eventLoopThreads()).isEqualTo(3);
    HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + server.httpPort() + "/healthz")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);
    var policy = TestServices.stub(server, null,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class)
        .lookupPolicy(PolicyLookup.newBuilder().setAgentHost("h1").setJobId("job_1_1")
            .setReduceId(0).setBytes(1_000_000).build());
    assertThat(policy.getJobId()).isEqualTo("job_1_1");
  }

  @Test
  void zeroMeansOneEventLoopPerCpu() throws Exception {
    assertThat(servers.start(dir).eventLoopThreads())
        .isEqualTo(Runtime.getRuntime().availableProcessors());
  }
}
