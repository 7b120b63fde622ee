package io.datcp.scheduler.bench;

import io.datcp.scheduler.FakeResourceManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The load benchmark's fake ResourceManager ({@link FakeResourceManager#main}) in a JVM of its
 * own: served inside the benchmark, its collections paused the clocks of the calls being timed
 * and nearly doubled the benchmark's own GC time. It inherits the benchmark's CPU affinity
 * unless given CPUs of its own.
 */
final class FakeResourceManagerProcess implements AutoCloseable {
  private final Process process;
  private final String base;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  /** {@code cpus}: a taskset CPU list to run it on; empty: the benchmark's. */
  FakeResourceManagerProcess(int port, String cpus) throws IOException, InterruptedException {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    List<String> command = new ArrayList<>();
    if (!cpus.isEmpty()) {
      command.addAll(List.of("taskset", "-c", cpus));
    }
    command.addAll(List.of(java.toString(), "-Xmx256m", "-cp",
        System.getProperty("java.class.path"), FakeResourceManager.class.getName(),
        Integer.toString(port)));
    process = new ProcessBuilder(command).inheritIO().start();
    base = "http://127.0.0.1:" + port;
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    while (true) {
      try {
        served();
        return;
      } catch (UncheckedIOException e) {
        if (!(e.getCause() instanceof ConnectException) || !process.isAlive()
            || System.nanoTime() > deadline) {
          process.destroy();
          throw new IOException("fake ResourceManager on port " + port + " did not start", e);
        }
        Thread.sleep(100);
      }
    }
  }

  /**
   * YARN runs {@code jobId}'s containers on {@code hosts}; completes once the RM knows it (not
   * blocking: jobs start on the clients' event loops).
   */
  CompletableFuture<?> place(String jobId, String... hosts) {
    HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/bench/place/" + jobId))
        .POST(HttpRequest.BodyPublishers.ofString(String.join("\n", hosts))).build();
    return http.sendAsync(request, HttpResponse.BodyHandlers.discarding()).thenAccept(r -> {
      if (r.statusCode() != 200) {
        throw new IllegalStateException(request.uri() + ": HTTP " + r.statusCode());
      }
    });
  }

  /** Container lists, attempt lists and applications served so far, space-separated. */
  String served() {
    return send(HttpRequest.newBuilder(URI.create(base + "/bench/served")).build());
  }

  private String send(HttpRequest request) {
    try {
      HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        throw new IllegalStateException(request.uri() + ": HTTP " + r.statusCode());
      }
      return r.body();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    process.destroy();
  }
}
