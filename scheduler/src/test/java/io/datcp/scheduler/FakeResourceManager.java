package io.datcp.scheduler;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * A YARN ResourceManager for tests and benchmarks, answering the REST calls the scheduler makes
 * (as Hadoop 3.5's RMWebServices shapes them): {@code /ws/v1/cluster/apps/{app}} (queue, user,
 * state), {@code .../appattempts} (the application's attempts, the first until the AM is
 * {@link #restartAm restarted}) and {@code .../appattempts/{attempt}/containers} (one container
 * per host placed in that attempt), and through its web proxy the job's MapReduce AM's map
 * attempts ({@link #mapRanAndEnded}). Applications and attempts it was not told of are 404, as
 * YARN answers. Served by the JDK's HTTP server. {@link #main} serves one in a process of its own
 * for the load benchmark, told where jobs run over two more paths (see there).
 */
public final class FakeResourceManager implements AutoCloseable {
  /** What YARN knows of one application. */
  private static final class App {
    volatile String queue = "default";
    volatile String state = "RUNNING";
    volatile String finalStatus = "UNDEFINED";
    volatile long finishedMillis;
    /** Hosts of each attempt's live containers, the first attempt's at index 0. */
    final List<Set<String>> attempts = new CopyOnWriteArrayList<>(
        List.of(ConcurrentHashMap.newKeySet()));
    /** What the job's MapReduce AM knows: map id -> hosts its attempts ran on. */
    final Map<Integer, Set<String>> mapAttempts = new ConcurrentHashMap<>();
  }

  private final Map<String, App> apps = new ConcurrentHashMap<>();
  private final AtomicInteger appRequests = new AtomicInteger();
  private final AtomicInteger attemptRequests = new AtomicInteger();
  private final AtomicInteger containerRequests = new AtomicInteger();
  private final AtomicInteger amRequests = new AtomicInteger();
  private volatile CompletableFuture<Void> answer = CompletableFuture.completedFuture(null);
  private final HttpServer server;

  private record Answer(int status, String json) {}

  /** On a free port. */
  public FakeResourceManager() {
    this(0);
  }

  public FakeResourceManager(int port) {
    // As a ResourceManager's web server (Jetty) does: without TCP_NODELAY an answer's second
    // write waited for the scheduler's delayed ACK, about 40 ms on every request.
    System.setProperty("sun.net.httpserver.nodelay", "true");
    try {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String prefix = "/ws/v1/cluster/apps/";
    server.createContext(prefix, exchange -> {
      Answer a = cluster(exchange.getRequestURI().getPath().substring(prefix.length()));
      answer.thenRun(() -> send(exchange, a));
    });
    server.createContext("/proxy/", exchange -> {
      Answer a = proxy(exchange.getRequestURI().getPath().substring("/proxy/".length()));
      answer.thenRun(() -> send(exchange, a));
    });
    server.start();
  }

  /**
   * Serves one on port {@code args[0]} until killed, for the load benchmark: in a JVM of its own
   * its collections and threads do not pause the clocks of the calls the benchmark times. The
   * benchmark tells it where jobs run with {@code POST /bench/place/{jobId}} (body: host names,
   * one per line) and reads {@code GET /bench/served} (container lists, attempt lists,
   * applications served).
   */
  public static void main(String[] args) {
    FakeResourceManager rm = new FakeResourceManager(Integer.parseInt(args[0]));
    rm.server.createContext("/bench/place/", exchange -> {
      String job = exchange.getRequestURI().getPath().substring("/bench/place/".length());
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      rm.place(job, body.lines().filter(l -> !l.isEmpty()).toArray(String[]::new));
      send(exchange, json("{}"));
    });
    rm.server.createContext("/bench/served", exchange -> send(exchange, new Answer(200,
        rm.containerRequests() + " " + rm.attemptRequests() + " " + rm.appRequests())));
  }

  /** http://127.0.0.1:port, for yarn.rm.webappAddress. */
  public String address() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /**
   * YARN runs {@code jobId}'s application with containers on {@code hosts} (added to its
   * current attempt).
   */
  public FakeResourceManager place(String jobId, String... hosts) {
    List<Set<String>> attempts = app(jobId).attempts;
    attempts.get(attempts.size() - 1).addAll(List.of(hosts));
    return this;
  }

  /**
   * The job's AM failed and YARN started its next attempt, with no containers yet; the last
   * attempt's containers were killed.
   */
  public FakeResourceManager restartAm(String jobId) {
    List<Set<String>> attempts = app(jobId).attempts;
    attempts.get(attempts.size() - 1).clear();
    attempts.add(ConcurrentHashMap.newKeySet());
    return this;
  }

  /**
   * An attempt of map {@code mapId} ran on {@code host} and its container ended: YARN no longer
   * lists it there, the job's MapReduce AM still names the host among the map's attempts.
   */
  public FakeResourceManager mapRanAndEnded(String jobId, int mapId, String host) {
    App a = app(jobId);
    a.mapAttempts.computeIfAbsent(mapId, m -> ConcurrentHashMap.newKeySet()).add(host);
    a.attempts.get(a.attempts.size() - 1).remove(host);
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

  /** Attempt lists asked for so far. */
  public int attemptRequests() {
    return attemptRequests.get();
  }

  /** Container lists asked for so far. */
  public int containerRequests() {
    return containerRequests.get();
  }

  /** Map attempt lists asked of jobs' AMs through the proxy so far. */
  public int amRequests() {
    return amRequests.get();
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

  private static void send(HttpExchange exchange, Answer a) {
    try (exchange) {
      byte[] body = a.json().getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "application/json");
      exchange.sendResponseHeaders(a.status(), body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    } catch (IOException e) {
      // the client went away; nothing to answer
    }
  }

  /** {@code mapped}: after /ws/v1/cluster/apps/. */
  private Answer cluster(String mapped) {
    String[] p = mapped.split("/");
    App a = apps.get(p[0]);
    if (a == null) {
      return NOT_FOUND;
    }
    if (p.length == 1) {
      appRequests.incrementAndGet();
      return json("{\"app\":{\"id\":\"" + p[0] + "\",\"user\":\"alice\",\"name\":\"etl\","
          + "\"queue\":\"" + a.queue + "\",\"priority\":0,\"state\":\"" + a.state
          + "\",\"finalStatus\":\"" + a.finalStatus + "\",\"finishedTime\":" + a.finishedMillis
          + "}}");
    }
    if (p.length == 2 && p[1].equals("appattempts")) {
      attemptRequests.incrementAndGet();
      int last = a.attempts.size();
      String attempts = IntStream.rangeClosed(1, last).mapToObj(i -> "{\"id\":" + i
          + ",\"appAttemptId\":\"" + attemptId(p[0], i) + "\",\"appAttemptState\":\""
          + (i == last ? "RUNNING" : "FAILED") + "\",\"nodeId\":\"am-host:45454\"}")
          .collect(Collectors.joining(","));
      return json("{\"appAttempts\":{\"appAttempt\":[" + attempts + "]}}");
    }
    int n = p.length == 4 && p[1].equals("appattempts") && p[3].equals("containers")
        ? IntStream.rangeClosed(1, a.attempts.size())
            .filter(i -> p[2].equals(attemptId(p[0], i))).findFirst().orElse(0)
        : 0;
    if (n > 0) {
      containerRequests.incrementAndGet();
      String attempt = p[2];
      Set<String> hosts = a.attempts.get(n - 1);
      AtomicInteger c = new AtomicInteger();
      String containers = hosts.stream().map(h -> "{\"containerId\":\"container_"
          + attempt.substring("appattempt_".length()) + "_" + c.incrementAndGet()
          + "\",\"assignedNodeId\":\"" + h + ":45454\",\"containerState\":\"RUNNING\","
          + "\"nodeHttpAddress\":\"http://" + h + ":8042\",\"nodeId\":\"" + h + ":45454\"}")
          .collect(Collectors.joining(","));
      // Hadoop 3.5.0's RM answers this list without a "containers" wrapper (unlike "apps",
      // "appAttempts", "nodes"), as a live ResourceManager of the Docker cluster did
      return json("{\"container\":[" + containers + "]}");
    }
    return NOT_FOUND;
  }

  /**
   * {@code mapped}: after /proxy/; the MapReduce AM's {@code
   * {app}/ws/v1/mapreduce/jobs/{job}/tasks/{task}/attempts}, as Hadoop 3.5's AMWebServices
   * shapes it. A task the AM does not know is 404.
   */
  private Answer proxy(String mapped) {
    String[] p = mapped.split("/");
    App a = apps.get(p[0]);
    if (a == null || p.length != 9 || !p[6].equals("tasks") || !p[8].equals("attempts")
        || !p[7].matches("task_[0-9]+_[0-9]+_m_[0-9]{6}")) {
      return NOT_FOUND;
    }
    amRequests.incrementAndGet();
    int map = Integer.parseInt(p[7].substring(p[7].length() - 6));
    Set<String> hosts = a.mapAttempts.get(map);
    if (hosts == null) {
      return NOT_FOUND;
    }
    AtomicInteger n = new AtomicInteger();
    String attempts = hosts.stream().map(h -> "{\"id\":\"attempt_"
        + p[7].substring("task_".length()) + "_" + n.getAndIncrement() + "\",\"state\":"
        + "\"SUCCEEDED\",\"type\":\"MAP\",\"nodeHttpAddress\":\"" + h + ":8042\"}")
        .collect(Collectors.joining(","));
    return json("{\"taskAttempts\":{\"taskAttempt\":[" + attempts + "]}}");
  }

  /** YARN's ApplicationAttemptId form: the application's numbers, the attempt's in 6 digits. */
  private static String attemptId(String app, int attempt) {
    return String.format(Locale.ROOT, "appattempt_%s_%06d",
        app.substring("application_".length()), attempt);
  }

  private static final Answer NOT_FOUND = new Answer(404,
      "{\"RemoteException\":{\"exception\":\"NotFoundException\"}}");

  private static Answer json(String body) {
    return new Answer(200, body);
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
