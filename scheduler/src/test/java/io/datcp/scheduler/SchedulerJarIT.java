package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The contract other components rely on: {@code java -jar scheduler.jar --data-dir DIR
 * --grpc-port P --http-port Q} starts the scheduler, /healthz answers 200, and policies, jobs
 * and flows are served under /api/v1/. Runs the shaded jar built by {@code mvn package}.
 */
class SchedulerJarIT {
  @TempDir Path dir;

  @Test
  void theExecutableJarServesTheContract() throws Exception {
    Path jar = Paths.get(System.getProperty("scheduler.jar", "target/scheduler.jar"));
    assertThat(jar).exists();
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    Path conf = Files.writeString(dir.resolve("scheduler.properties"), "tls.plaintext=true\n");
    Process p = new ProcessBuilder(java.toString(), "-jar", jar.toString(),
        "--data-dir", dir.resolve("data").toString(), "--grpc-port", "0", "--http-port", "0",
        "--config", conf.toString())
        .redirectErrorStream(true).start();
    try {
      int port = TestServices.awaitReady(p);
      HttpClient http = HttpClient.newHttpClient();
      for (String path : List.of("/healthz", "/api/v1/policies", "/api/v1/jobs",
          "/api/v1/flows", "/api/v1/openapi.json", "/metrics", "/",
          "/api/v1/dashboard/overview", "/api/v1/dashboard/hosts", "/dashboard/host.html",
          // the charting library is shaded into the jar: dashboards work offline
          "/dashboard/lib/uplot/uPlot.iife.min.js")) {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + port + path)).build(),
            HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(path).isEqualTo(200);
      }
      assertThat(Files.exists(dir.resolve("data").resolve("token"))).isTrue();
    } finally {
      p.destroy();
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
    assertThat(p.exitValue()).as("clean exit on SIGTERM").isIn(0, 143);
  }
}
