package io.datcp.scheduler;

import com.linecorp.armeria.common.HttpResponse;
import com.linecorp.armeria.common.HttpStatus;
import com.linecorp.armeria.common.MediaType;
import com.linecorp.armeria.server.Server;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

/**
 * A YARN ResourceManager for tests and benchmarks, answering the REST calls the scheduler makes
 * (as Hadoop 3.5's RMWebServices and the MapReduce AM's web services, through the RM's proxy,
 * shape them): {@code /ws/v1/cluster/apps/{app}} (queue, user, state), {@code
 * .../appattempts} (one attempt), {@code .../appattempts/{attempt}/containers} (one container
 * per placed host) and {@code /proxy/{app}/ws/v1/mapreduce/jobs/{job}} (maps and reduces).
 * Applications it was not told of are 404, as YARN answers.
 */
public final class FakeResourceManager implements AutoCloseable {
  /** What YARN knows of one application. */
  private static final class App {
    volatile String queue = "default";
    volatile String state = "RUNNING";
    volatile String finalStatus = "UNDEFINED";
    volatile long finishedMillis;
    final Set<String> hosts = ConcurrentHashMap.newKeySet();
    volatile int maps = -1;
    volatile int reduces = -1;
  }

  private final Map<String, App> apps = new ConcurrentHashMap<>();
  private final AtomicInteger appRequests = new AtomicInteger();
  private final AtomicInteger containerRequests = new AtomicInteger();
  private volatile CompletableFuture<Void> answer = CompletableFuture.completedFuture(null);
  private final Server server;

  /** On a free port. */
  public FakeResourceManager() {
    this(0);
  }

  public FakeResourceManager(int port) {
    server = Server.builder().http(port)
        .serviceUnder("/ws/v1/cluster/apps/",
            (ctx, req) -> later(cluster(ctx.mappedPath().substring(1))))
        .serviceUnder("/proxy/", (ctx, req) -> later(am(ctx.mappedPath().substring(1))))
        .build();
    server.start().join();
  }

  /** http://127.0.0.1:port, for yarn.rm.webappAddress. */
  public String address() {
    return "http://127.0.0.1:" + server.activeLocalPort();
  }

  /** YARN runs {@code jobId}'s application with containers on {@code hosts} (added). */
  public FakeResourceManager place(String jobId, String... hosts) {
    app(jobId).hosts.addAll(List.of(hosts));
    return this;
  }

  /** The job's MapReduce AM says it has {@code maps} maps and {@code reduces} reduces. */
  public FakeResourceManager counts(String jobId, int maps, int reduces) {
    App a = app(jobId);
    a.maps = maps;
    a.reduces = reduces;
    return this;
  }

  public FakeResourceManager queue(String jobId, String queue) {
    app(jobId).queue = queue;
    return this;
  }

  public FakeResourceManager ended(String jobId, String state, String finalStatus,
      long finishedMillis) {
    App a = app(jobId);
    a.state = state;
    a.finalStatus = finalStatus;
    a.finishedMillis = finishedMillis;
    return this;
  }

  /** Answers wait for {@code gate} (a completed one: at once). */
  public void answerWhen(CompletableFuture<Void> gate) {
    answer = gate;
  }

  /** Applications (queue, state) asked for so far. */
  public int appRequests() {
    return appRequests.get();
  }

  /** Container lists asked for so far. */
  public int containerRequests() {
    return containerRequests.get();
  }

  /** Forgets what it was told of {@code jobId}; it no longer sends its answers. */
  public void forget(String jobId) {
    apps.remove(appId(jobId));
  }

  private App app(String jobId) {
    return apps.computeIfAbsent(appId(jobId), k -> new App());
  }

  private static String appId(String jobId) {
    return "application_" + jobId.substring("job_".length());
  }

  private HttpResponse later(HttpResponse r) {
    return HttpResponse.of(answer.thenApply(v -> r));
  }

  /** {@code mapped}: after /ws/v1/cluster/apps/. */
  private HttpResponse cluster(String mapped) {
    String[] p = mapped.split("/");
    App a = apps.get(p[0]);
    if (a == null) {
      return HttpResponse.of(HttpStatus.NOT_FOUND, MediaType.JSON,
          "{\"RemoteException\":{\"exception\":\"NotFoundException\"}}");
    }
    String attempt = "appattempt_" + p[0].substring("application_".length()) + "_000001";
    if (p.length == 1) {
      appRequests.incrementAndGet();
      return json("{\"app\":{\"id\":\"" + p[0] + "\",\"user\":\"alice\",\"name\":\"etl\","
          + "\"queue\":\"" + a.queue + "\",\"priority\":0,\"state\":\"" + a.state
          + "\",\"finalStatus\":\"" + a.finalStatus + "\",\"finishedTime\":" + a.finishedMillis
          + "}}");
    }
    if (p.length == 2 && p[1].equals("appattempts")) {
      return json("{\"appAttempts\":{\"appAttempt\":[{\"id\":1,\"appAttemptId\":\"" + attempt
          + "\",\"appAttemptState\":\"RUNNING\",\"nodeId\":\"am-host:45454\"}]}}");
    }
    if (p.length == 4 && p[1].equals("appattempts") && p[2].equals(attempt)
        && p[3].equals("containers")) {
      containerRequests.incrementAndGet();
      AtomicInteger n = new AtomicInteger();
      String containers = a.hosts.stream().map(h -> "{\"containerId\":\"container_"
          + attempt.substring("appattempt_".length()) + "_" + n.incrementAndGet()
          + "\",\"assignedNodeId\":\"" + h + ":45454\",\"containerState\":\"RUNNING\","
          + "\"nodeHttpAddress\":\"http://" + h + ":8042\",\"nodeId\":\"" + h + ":45454\"}")
          .collect(Collectors.joining(","));
      // Hadoop 3.5.0's RM answers this list without a "containers" wrapper (unlike "apps",
      // "appAttempts", "nodes"), as a live ResourceManager of the Docker cluster did
      return json("{\"container\":[" + containers + "]}");
    }
    return HttpResponse.of(HttpStatus.NOT_FOUND);
  }

  /** {@code mapped}: after /proxy/, e.g. application_1_2/ws/v1/mapreduce/jobs/job_1_2. */
  private HttpResponse am(String mapped) {
    String app = mapped.substring(0, Math.max(0, mapped.indexOf('/')));
    App a = apps.get(app);
    if (a == null || a.maps < 0) {
      return HttpResponse.of(HttpStatus.NOT_FOUND);
    }
    return json("{\"job\":{\"id\":\"job_" + app.substring("application_".length())
        + "\",\"state\":\"RUNNING\",\"mapsTotal\":" + a.maps + ",\"reducesTotal\":" + a.reduces
        + "}}");
  }

  private static HttpResponse json(String body) {
    return HttpResponse.of(HttpStatus.OK, MediaType.JSON, body);
  }

  @Override
  public void close() {
    server.stop().join();
  }
}
