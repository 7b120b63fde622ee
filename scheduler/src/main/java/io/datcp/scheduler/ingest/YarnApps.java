package io.datcp.scheduler.ingest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.linecorp.armeria.client.ClientFactory;
import com.linecorp.armeria.client.WebClient;
import com.linecorp.armeria.common.AggregatedHttpResponse;
import com.linecorp.armeria.common.HttpHeaderNames;
import com.linecorp.armeria.common.HttpStatus;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.io.IOException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a job's queue, user, name and priority, and how it ended, from the YARN
 * ResourceManager's REST API ({@code GET /ws/v1/cluster/apps/application_X_Y} for job_X_Y):
 * policy rules match on what YARN admitted, not on what a task claims, and no task reports a
 * job's end. Also where YARN placed the job's containers ({@link #placement}), against which
 * reports are verified. Non-blocking. An unreachable
 * ResourceManager is logged once per outage and counted ({@link #outages}); callers then fail
 * open: the default policy, jobs end only when reported or idle, reports get host checks only.
 */
public final class YarnApps {
  private static final Logger LOG = LoggerFactory.getLogger(YarnApps.class);
  private static final Duration TIMEOUT = Duration.ofSeconds(2);
  /** YARN application states after which the application runs no more. */
  private static final Set<String> ENDED = Set.of("FINISHED", "FAILED", "KILLED");
  /** A MapReduce job id, whose application is application_ and the same numbers. */
  private static final Pattern JOB_ID = Pattern.compile("job_[0-9]+_[0-9]+");

  private final WebClient client;
  private final String address;
  private final ObjectMapper json = new ObjectMapper();
  private final AtomicBoolean down = new AtomicBoolean();
  private final AtomicLong outages = new AtomicLong();

  /** With Armeria's shared client threads. */
  public YarnApps(String address) {
    this(address, ClientFactory.ofDefault());
  }

  /**
   * @param factory whose threads the requests and their answers run on: the scheduler passes
   *     its own event loops, so that a waiting report resumes where calls are served instead of
   *     on more threads competing with them for the CPUs
   */
  public YarnApps(String address, ClientFactory factory) {
    this.address = address;
    this.client = WebClient.builder(address).factory(factory).responseTimeout(TIMEOUT).build();
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

  /**
   * Where YARN placed the job's application: the hosts of an attempt's live containers.
   *
   * @param hosts host names (a container's nodeId without its port)
   * @param attempt the attempt they belong to, to ask first next time
   */
  public record Placement(Set<String> hosts, String attempt) {
    /** What a job YARN does not know (or an id that is not a YARN job's) has: nothing. */
    static final Placement NONE = new Placement(Set.of(), "");
  }

  /**
   * Asks {@code GET /ws/v1/cluster/apps/{app}/appattempts/{attempt}/containers} (YARN lists the
   * attempt's live containers, each with its {@code nodeId} host:port) for {@code attempt}, or
   * the application's first attempt when null. Only when that attempt is unknown or lists
   * not all of {@code lookingFor} does it ask {@code GET .../appattempts} for the last attempt
   * and, when that is a later one (the AM restarted), its containers too: an honest refresh is
   * one request. {@link Placement#NONE} when YARN does not know the application; empty when the
   * ResourceManager did not answer (never exceptionally).
   */
  public CompletableFuture<Optional<Placement>> placement(String jobId, String attempt,
      Set<String> lookingFor) {
    if (!JOB_ID.matcher(jobId).matches()) {
      return CompletableFuture.completedFuture(Optional.of(Placement.NONE));
    }
    String app = "application_" + jobId.substring("job_".length());
    // ApplicationAttemptId's form: the application's numbers, then the attempt's, 6 digits
    String asked = attempt != null ? attempt
        : "appattempt_" + jobId.substring("job_".length()) + "_000001";
    return containers(app, asked).thenCompose(first -> {
      if (first.isEmpty()) {
        return CompletableFuture.completedFuture(Optional.empty());
      }
      Set<String> found = first.get().orElse(Set.of());
      if (first.get().isPresent() && found.containsAll(lookingFor)) {
        return CompletableFuture.completedFuture(Optional.of(new Placement(found, asked)));
      }
      return get("/ws/v1/cluster/apps/" + app + "/appattempts",
          root -> lastAttempt(root.path("appAttempts").path("appAttempt")))
          .thenCompose(last -> {
            if (last.isEmpty()) {
              return CompletableFuture.completedFuture(Optional.<Placement>empty());
            }
            String id = last.get().orElse("");
            if (id.isEmpty()) {
              return CompletableFuture.completedFuture(Optional.of(Placement.NONE));
            }
            if (id.equals(asked)) {
              return CompletableFuture.completedFuture(Optional.of(new Placement(found, asked)));
            }
            return containers(app, id).thenApply(later -> later.map(hosts -> {
              Set<String> all = new HashSet<>(found);
              all.addAll(hosts.orElse(Set.of()));
              return new Placement(all, id);
            }));
          });
    });
  }

  /**
   * The hosts of {@code attempt}'s live containers; empty inside when YARN does not know the
   * attempt (or the application); empty outside when the ResourceManager did not answer.
   */
  private CompletableFuture<Optional<Optional<Set<String>>>> containers(String app,
      String attempt) {
    return get("/ws/v1/cluster/apps/" + app + "/appattempts/" + attempt + "/containers",
        root -> Optional.of(hosts(containerList(root))));
  }

  /**
   * The hosts that ran attempts of map {@code mapId} of {@code jobId}, from the job's MapReduce
   * AM through the ResourceManager's web proxy ({@code GET /proxy/{app}/ws/v1/mapreduce/jobs/
   * {job}/tasks/task_X_Y_m_NNNNNN/attempts}, each attempt's {@code nodeHttpAddress}): YARN lists
   * live containers only, and the AM still knows where a finished map ran. Empty when the AM
   * did not answer (gone, or no such task) or answered what cannot be read; never exceptionally.
   * Not an outage of the ResourceManager (its own calls may still answer).
   */
  public CompletableFuture<Optional<Set<String>>> mapAttemptHosts(String jobId, int mapId) {
    if (!JOB_ID.matcher(jobId).matches() || mapId < 0) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    String numbers = jobId.substring("job_".length());
    String path = "/proxy/application_" + numbers + "/ws/v1/mapreduce/jobs/" + jobId
        + "/tasks/task_" + numbers + String.format("_m_%06d", mapId) + "/attempts";
    return client.prepare().get(path).header(HttpHeaderNames.ACCEPT, "application/json")
        .execute().aggregate().handle((response, failure) -> {
          if (failure != null || !response.status().equals(HttpStatus.OK)) {
            LOG.debug("MapReduce AM gave no attempts for {}: {}", path,
                failure != null ? failure.toString() : response.status());
            return Optional.empty();
          }
          try {
            Set<String> hosts = new HashSet<>();
            JsonNode list = json.readTree(response.contentUtf8()).path("taskAttempts")
                .path("taskAttempt");
            for (JsonNode a : list.isArray() ? list : List.of(list)) {
              hostOf(a.path("nodeHttpAddress").asText("")).ifPresent(hosts::add);
            }
            return Optional.of(hosts);
          } catch (IOException e) {
            LOG.debug("unreadable attempts of {}: {}", path, e.getMessage());
            return Optional.empty();
          }
        });
  }

  /** Times the ResourceManager stopped answering (each outage once). */
  public long outages() {
    return outages.get();
  }

  /** The last attempt's appAttemptId; "" when there is none; IOException when unreadable. */
  private static Optional<String> lastAttempt(JsonNode list) throws IOException {
    JsonNode last = null;
    for (JsonNode a : list.isArray() ? list : List.of(list)) {
      if (!a.isMissingNode() && (last == null || a.path("id").asInt() > last.path("id").asInt())) {
        last = a;
      }
    }
    if (last == null) {
      return Optional.of("");
    }
    if (!last.hasNonNull("appAttemptId")) {
      throw new IOException("no appAttempt.appAttemptId");
    }
    return Optional.of(last.get("appAttemptId").asText());
  }

  /**
   * The containers of a containers answer: Hadoop 3.5.0's RM sends {@code {"container": [...]}}
   * (no wrapper, unlike its other lists); {@code {}} is no container. Any other answer is
   * unreadable (the RM then counts as not answering: fail open), never read as "placed
   * nowhere".
   */
  private static JsonNode containerList(JsonNode root) throws IOException {
    if (root.has("container") || (root.isObject() && root.isEmpty())) {
      return root.path("container");
    }
    throw new IOException("no container list in the answer");
  }

  private static Set<String> hosts(JsonNode list) throws IOException {
    Set<String> hosts = new HashSet<>();
    for (JsonNode c : list.isArray() ? list : List.of(list)) {
      if (c.isMissingNode()) {
        continue;
      }
      String node = c.path("nodeId").asText("");
      hosts.add(hostOf(node).orElseThrow(
          () -> new IOException("container.nodeId '" + node + "' is not host:port")));
    }
    return hosts;
  }

  /** The host of a {@code host:port} (a nodeId, a nodeHttpAddress); empty when it is not one. */
  private static Optional<String> hostOf(String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    return colon > 0 ? Optional.of(hostPort.substring(0, colon)) : Optional.empty();
  }

  private <T> CompletableFuture<Optional<T>> ask(String jobId, AppReader<T> reader) {
    if (!JOB_ID.matcher(jobId).matches()) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    String app = "application_" + jobId.substring("job_".length());
    return get("/ws/v1/cluster/apps/" + app, root -> reader.read(root.path("app")))
        .thenApply(found -> found.flatMap(a -> a));
  }

  /**
   * GETs {@code path} and reads its JSON with {@code reader}: the reading; empty inside when
   * YARN answers 404 (it does not know the application); empty outside when it did not answer
   * or answered what cannot be read (an outage).
   */
  private <T> CompletableFuture<Optional<Optional<T>>> get(String path, AppReader<T> reader) {
    return client.get(path).aggregate().handle((response, failure) -> {
      if (failure != null) {
        outage(failure.toString());
        return Optional.empty();
      }
      return parse(path, response, reader);
    });
  }

  private <T> Optional<Optional<T>> parse(String path, AggregatedHttpResponse response,
      AppReader<T> reader) {
    if (response.status().equals(HttpStatus.NOT_FOUND)) {
      recovered();
      LOG.debug("ResourceManager does not know {}", path);
      return Optional.of(Optional.empty());
    }
    if (!response.status().equals(HttpStatus.OK)) {
      outage("HTTP " + response.status().code());
      return Optional.empty();
    }
    try {
      Optional<T> read = reader.read(json.readTree(response.contentUtf8()));
      recovered();
      return Optional.of(read);
    } catch (IOException e) {
      outage("unreadable answer for " + path + ": " + e.getMessage());
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
      outages.incrementAndGet();
      LOG.warn("ResourceManager {} unreachable ({}): until it answers, new jobs get the default"
          + " policy, job ends are not learned from it, and reports from hosts not yet verified"
          + " get host checks only (cross-job claims unverified)", address, why);
    }
  }

  private void recovered() {
    if (down.compareAndSet(true, false)) {
      LOG.info("ResourceManager {} answers again", address);
    }
  }
}
