package io.datcp.scheduler.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.linecorp.armeria.client.WebClient;
import com.linecorp.armeria.common.AggregatedHttpResponse;
import com.linecorp.armeria.common.HttpStatus;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a job's queue, user, name and priority from the YARN ResourceManager's REST API
 * ({@code GET /ws/v1/cluster/apps/application_X_Y} for job_X_Y), so that policy rules match on
 * what YARN admitted, not on what a task claims. Non-blocking. An unreachable ResourceManager
 * is logged once per outage; callers then fail open to the default policy.
 */
public final class YarnApps {
  private static final Logger LOG = LoggerFactory.getLogger(YarnApps.class);
  private static final Duration TIMEOUT = Duration.ofSeconds(2);

  private final WebClient client;
  private final String address;
  private final ObjectMapper json = new ObjectMapper();
  private final AtomicBoolean down = new AtomicBoolean();

  public YarnApps(String address) {
    this.address = address;
    this.client = WebClient.builder(address).responseTimeout(TIMEOUT).build();
  }

  /**
   * The job's attributes; empty when the ResourceManager does not know the application or did
   * not answer (failures complete normally with empty, never exceptionally).
   */
  public CompletableFuture<Optional<JobConf>> attributes(String jobId) {
    if (!jobId.matches("job_[0-9]+_[0-9]+")) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    String app = "application_" + jobId.substring("job_".length());
    return client.get("/ws/v1/cluster/apps/" + app).aggregate()
        .handle((response, failure) -> {
          if (failure != null) {
            outage(failure.toString());
            return Optional.<JobConf>empty();
          }
          return parse(app, response);
        });
  }

  private Optional<JobConf> parse(String app, AggregatedHttpResponse response) {
    if (response.status().equals(HttpStatus.NOT_FOUND)) {
      recovered();
      LOG.debug("ResourceManager does not know {}: default policy", app);
      return Optional.empty();
    }
    if (!response.status().equals(HttpStatus.OK)) {
      outage("HTTP " + response.status().code());
      return Optional.empty();
    }
    try {
      JsonNode a = json.readTree(response.contentUtf8()).path("app");
      if (!a.hasNonNull("queue") || !a.hasNonNull("user")) {
        outage("answer for " + app + " has no app.queue/app.user");
        return Optional.empty();
      }
      recovered();
      return Optional.of(new JobConf(a.get("queue").asText(), a.get("user").asText(),
          a.path("name").asText(""), priority(a.path("priority").asInt(0))));
    } catch (IOException e) {
      outage("unreadable answer for " + app + ": " + e.getMessage());
      return Optional.empty();
    }
  }

  /**
   * MapReduce's mapping of job priorities onto YARN application priorities (TypeConverter):
   * VERY_LOW 1 .. VERY_HIGH 5; 0 (DEFAULT) is NORMAL; others are clamped.
   */
  static JobPriority priority(int yarn) {
    if (yarn <= 0) {
      return yarn == 0 ? JobPriority.NORMAL : JobPriority.VERY_LOW;
    }
    switch (Math.min(yarn, 5)) {
      case 1: return JobPriority.VERY_LOW;
      case 2: return JobPriority.LOW;
      case 3: return JobPriority.NORMAL;
      case 4: return JobPriority.HIGH;
      default: return JobPriority.VERY_HIGH;
    }
  }

  private void outage(String why) {
    if (down.compareAndSet(false, true)) {
      LOG.warn("ResourceManager {} unreachable ({}): jobs get the default policy until it"
          + " answers", address, why);
    }
  }

  private void recovered() {
    if (down.compareAndSet(true, false)) {
      LOG.info("ResourceManager {} answers again", address);
    }
  }
}
