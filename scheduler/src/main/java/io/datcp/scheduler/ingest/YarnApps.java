package io.datcp.scheduler.ingest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.linecorp.armeria.client.WebClient;
import com.linecorp.armeria.common.AggregatedHttpResponse;
import com.linecorp.armeria.common.HttpStatus;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a job's queue, user, name and priority, and how it ended, from the YARN
 * ResourceManager's REST API ({@code GET /ws/v1/cluster/apps/application_X_Y} for job_X_Y):
 * policy rules match on what YARN admitted, not on what a task claims, and no task reports a
 * job's end. Non-blocking. An unreachable ResourceManager is logged once per outage; callers
 * then fail open to the default policy, and jobs end only when reported or idle.
 */
public final class YarnApps {
  private static final Logger LOG = LoggerFactory.getLogger(YarnApps.class);
  private static final Duration TIMEOUT = Duration.ofSeconds(2);
  /** YARN application states after which the application runs no more. */
  private static final Set<String> ENDED = Set.of("FINISHED", "FAILED", "KILLED");

  private final WebClient client;
  private final String address;
  private final ObjectMapper json = new ObjectMapper();
  private final AtomicBoolean down = new AtomicBoolean();

  public YarnApps(String address) {
    this.address = address;
    this.client = WebClient.builder(address).responseTimeout(TIMEOUT).build();
  }

  /** How an application ended: its final status and YARN's finish time. */
  public record End(boolean succeeded, long finishUnixNanos) {}

  /** Reads what a caller needs from the answer's {@code app}; IOException when it lacks it. */
  private interface AppReader<T> {
    Optional<T> read(JsonNode app) throws IOException;
  }

  /**
   * The job's attributes; empty when the ResourceManager does not know the application or did
   * not answer (failures complete normally with empty, never exceptionally).
   */
  public CompletableFuture<Optional<JobConf>> attributes(String jobId) {
    return ask(jobId, a -> {
      if (!a.hasNonNull("queue") || !a.hasNonNull("user")) {
        throw new IOException("no app.queue/app.user");
      }
      return Optional.of(new JobConf(a.get("queue").asText(), a.get("user").asText(),
          a.path("name").asText(""), priority(a.path("priority").asInt(0))));
    });
  }

  /**
   * How the job's application ended, once YARN says it did (state FINISHED, FAILED or KILLED);
   * it succeeded only with final status SUCCEEDED. Empty while it runs, when the
   * ResourceManager does not know it or did not answer (never exceptionally).
   */
  public CompletableFuture<Optional<End>> end(String jobId) {
    return ask(jobId, a -> {
      String state = a.path("state").asText("");
      if (!ENDED.contains(state)) {
        if (state.isEmpty()) {
          throw new IOException("no app.state");
        }
        return Optional.empty();
      }
      long finishedMillis = a.path("finishedTime").asLong(0);
      if (finishedMillis <= 0) {
        throw new IOException("app.state " + state + " without app.finishedTime");
      }
      return Optional.of(new End(state.equals("FINISHED")
          && a.path("finalStatus").asText("").equals("SUCCEEDED"),
          TimeUnit.MILLISECONDS.toNanos(finishedMillis)));
    });
  }

  private <T> CompletableFuture<Optional<T>> ask(String jobId, AppReader<T> reader) {
    if (!jobId.matches("job_[0-9]+_[0-9]+")) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    String app = "application_" + jobId.substring("job_".length());
    return client.get("/ws/v1/cluster/apps/" + app).aggregate()
        .handle((response, failure) -> {
          if (failure != null) {
            outage(failure.toString());
            return Optional.<T>empty();
          }
          return parse(app, response, reader);
        });
  }

  private <T> Optional<T> parse(String app, AggregatedHttpResponse response,
      AppReader<T> reader) {
    if (response.status().equals(HttpStatus.NOT_FOUND)) {
      recovered();
      LOG.debug("ResourceManager does not know {}", app);
      return Optional.empty();
    }
    if (!response.status().equals(HttpStatus.OK)) {
      outage("HTTP " + response.status().code());
      return Optional.empty();
    }
    try {
      Optional<T> read = reader.read(json.readTree(response.contentUtf8()).path("app"));
      recovered();
      return read;
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
      LOG.warn("ResourceManager {} unreachable ({}): until it answers, new jobs get the default"
          + " policy and job ends are not learned from it", address, why);
    }
  }

  private void recovered() {
    if (down.compareAndSet(true, false)) {
      LOG.info("ResourceManager {} answers again", address);
    }
  }
}
