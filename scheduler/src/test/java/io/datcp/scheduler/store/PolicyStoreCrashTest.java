package io.datcp.scheduler.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.SchedulerMain;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.api.rest.WriteToken;
import io.datcp.scheduler.policy.PolicyRule;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Starts the real scheduler as a child JVM, writes policy rules through REST from several
 * threads, kills the child with SIGKILL while writes are in flight, and checks that every write
 * the scheduler acknowledged is in the store afterwards.
 */
class PolicyStoreCrashTest {
  private static final int WRITERS = 3;
  private static final int ACKS_BEFORE_KILL = 60;

  @TempDir Path dir;

  @Test
  void aKillDuringWritesLosesNothingAcknowledged() throws Exception {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    Path conf = Files.writeString(dir.resolve("scheduler.properties"), "tls.plaintext=true\n");
    Process child = new ProcessBuilder(java.toString(), "-Xmx256m",
        "-cp", System.getProperty("java.class.path"), SchedulerMain.class.getName(),
        "--data-dir", dir.toString(), "--grpc-port", "0", "--http-port", "0",
        "--config", conf.toString())
        .redirectErrorStream(true).start();
    ExecutorService pool = Executors.newFixedThreadPool(WRITERS);
    try {
      int port = TestServices.awaitReady(child);
      String token = Files.readString(dir.resolve(WriteToken.FILE_NAME)).trim();
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      Set<String> acknowledged = ConcurrentHashMap.newKeySet();
      for (int w = 0; w < WRITERS; w++) {
        int writer = w;
        pool.submit(() -> {
          for (int i = 0; ; i++) {
            String name = "w" + writer + "-r" + i;
            String body = "{\"order\":" + i + ",\"queue\":\"q" + i + "\",\"importance\":1,"
                + "\"phi\":0.5,\"mode\":\"datcp\",\"quenchMode\":\"suspend\"}";
            HttpResponse<String> r;
            try {
              r = http.send(HttpRequest.newBuilder(
                      URI.create("http://127.0.0.1:" + port + "/api/v1/policies/" + name))
                  .timeout(Duration.ofSeconds(10))
                  .header("Authorization", "Bearer " + token)
                  .header("Content-Type", "application/json")
                  .PUT(HttpRequest.BodyPublishers.ofString(body)).build(),
                  HttpResponse.BodyHandlers.ofString());
            } catch (Exception connectionLost) {
              return null;
            }
            if (r.statusCode() == 200) {
              acknowledged.add(name);
            }
          }
        });
      }
      await().atMost(Duration.ofSeconds(60)).until(() -> acknowledged.size() >= ACKS_BEFORE_KILL);

      Process kill = new ProcessBuilder("kill", "-KILL", Long.toString(child.pid())).start();
      assertThat(kill.waitFor()).isZero();
      assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(child.exitValue()).isEqualTo(128 + 9);
      pool.shutdown();
      assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();

      try (PolicyStore store = PolicyStore.open(dir, new ObjectMapper())) {
        Map<String, PolicyRule> stored = store.loadAll().stream()
            .collect(Collectors.toMap(PolicyRule::name, r -> r));
        assertThat(stored.keySet()).containsAll(acknowledged);
        for (String name : acknowledged) {
          int i = Integer.parseInt(name.substring(name.indexOf("-r") + 2));
          assertThat(stored.get(name).queue()).isEqualTo("q" + i);
        }
      }
    } finally {
      pool.shutdownNow();
      child.destroyForcibly();
    }
  }
}
