package io.datcp.scheduler;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.linecorp.armeria.client.ClientFactory;
import com.linecorp.armeria.common.HttpMethod;
import com.linecorp.armeria.common.HttpResponse;
import com.linecorp.armeria.common.MediaType;
import com.linecorp.armeria.common.metric.MeterIdPrefixFunction;
import com.linecorp.armeria.common.metric.MoreMeters;
import com.linecorp.armeria.common.util.EventLoopGroups;
import com.linecorp.armeria.server.Server;
import com.linecorp.armeria.server.ServerBuilder;
import com.linecorp.armeria.server.ServerTlsConfig;
import com.linecorp.armeria.server.annotation.JacksonRequestConverterFunction;
import com.linecorp.armeria.server.annotation.JacksonResponseConverterFunction;
import com.linecorp.armeria.server.grpc.GrpcService;
import com.linecorp.armeria.server.healthcheck.HealthCheckService;
import com.linecorp.armeria.server.metric.MetricCollectingService;
import io.datcp.scheduler.api.grpc.FlowPolicyGrpcService;
import io.datcp.scheduler.api.grpc.HeavyLane;
import io.datcp.scheduler.api.grpc.LeaderGate;
import io.datcp.scheduler.api.grpc.PolicyAdminGrpcService;
import io.datcp.scheduler.api.grpc.ShuffleReportGrpcService;
import io.datcp.scheduler.api.rest.JobResource;
import io.datcp.scheduler.api.rest.NodeResource;
import io.datcp.scheduler.api.rest.PolicyResource;
import io.datcp.scheduler.api.rest.RestErrors;
import io.datcp.scheduler.api.rest.SwitchResource;
import io.datcp.scheduler.api.rest.WriteToken;
import io.datcp.scheduler.auth.NodeAuthInterceptor;
import io.datcp.scheduler.auth.NodeByteBudget;
import io.datcp.scheduler.auth.NodeCredentials;
import io.datcp.scheduler.auth.TlsFiles;
import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.dashboard.Dashboard;
import io.datcp.scheduler.dashboard.DashboardResource;
import io.datcp.scheduler.ha.Leadership;
import io.datcp.scheduler.ha.SoleLeadership;
import io.datcp.scheduler.ha.ZooKeeperEnsemble;
import io.datcp.scheduler.ha.ZooKeeperLeadership;
import io.datcp.scheduler.ha.ZooKeeperTls;
import io.datcp.scheduler.ingest.HostRateLimiter;
import io.datcp.scheduler.ingest.YarnApps;
import io.datcp.scheduler.policy.PolicyBook;
import io.datcp.scheduler.policy.RuleStore;
import io.datcp.scheduler.store.PolicyStore;
import io.datcp.scheduler.store.ZooKeeperPolicyStore;
import io.grpc.ServerInterceptors;
import io.grpc.protobuf.services.ProtoReflectionService;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.ClientAuth;
import io.netty.util.concurrent.EventExecutor;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scheduler process: one domain service behind two Armeria (Netty) servers, one for gRPC
 * (plugins, agents, policy administration; health checking and reflection on) and one for HTTP
 * (REST under /api/v1/, the OpenAPI document, /metrics, /healthz and the dashboard at /).
 * Build one with {@link #builder()}; tests run it in-process on port 0.
 */
public final class SchedulerServer implements AutoCloseable {
  /**
   * In-flight calls get this long to finish on stop. No quiet period: no load balancer drains the
   * scheduler, and agents and plugins fail open while it is away.
   */
  private static final Duration SHUTDOWN_GRACE = Duration.ofSeconds(2);
  /** Bytes of gRPC framing around a request message (5-byte prefix, with ample headroom). */
  private static final int GRPC_FRAMING_BYTES = 1024;
  /** HTTP body cap on the gRPC port, in largest messages. */
  private static final int HTTP_CAP_MESSAGES = 4;
  /** Messages of one host that may wait for the heavy-host lane (each at most reports.maxMessageBytes). */
  private static final int HEAVY_LANE_PER_HOST = 4;
  /** Messages of all hosts that may. */
  private static final int HEAVY_LANE_QUEUED = 64;

  private static final Logger LOG = LoggerFactory.getLogger(SchedulerServer.class);

  /**
   * Per-route request metrics keep count, sum and max only. Armeria's default also keeps nine
   * client-side percentiles of five meters per request in rotating HdrHistograms: about a tenth
   * of the gRPC port's CPU under load (JFR, 10,000 simulated hosts), for quantiles nobody reads;
   * Prometheus computes rates and means from count and sum.
   */
  private static final DistributionStatisticConfig REQUEST_METRICS =
      DistributionStatisticConfig.builder().percentilesHistogram(false).percentiles()
          .serviceLevelObjectives().build().merge(DistributionStatisticConfig.DEFAULT);

  private final SchedulerService service;
  private final RuleStore store;
  private final Leadership leadership;
  /** The HA mode's ZooKeeper session; nothing to close for a single scheduler. */
  private final AutoCloseable ensemble;
  private final String advertisedHost;
  private final WriteToken token;
  private final NodeCredentials nodes;
  private final ScheduledExecutorService sweeper;
  /** Sends the update streams' heartbeats (watch.heartbeatMillis), apart from the sweeps. */
  private final ScheduledExecutorService heartbeats;
  private final EventLoopGroup eventLoops;
  /** The ResourceManager's client, on the servers' event loops. */
  private final ClientFactory clients;
  private final HeavyLane heavyLane;
  private final Server grpc;
  private final Server http;

  @SuppressWarnings("deprecation")
  private SchedulerServer(Builder b) throws IOException {
    SchedulerConf conf = b.conf;
    TlsFiles tls = tls(conf); // first: a bad key must stop start-up before anything is opened
    Files.createDirectories(b.dataDir);
    token = WriteToken.loadOrCreate(b.dataDir, conf.get(SchedulerConf.AUTH_TOKEN));
    ObjectMapper json = new ObjectMapper()
        .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, true)
        .configure(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES, true);
    Coordination coordination = coordination(conf, b.dataDir, json);
    store = coordination.store();
    leadership = coordination.leadership();
    ensemble = coordination.ensemble();
    advertisedHost = conf.get(SchedulerConf.HA_ADVERTISED_HOST);
    PolicyBook book = new PolicyBook(store, conf.get(SchedulerConf.DEFAULT_MODE),
        conf.get(SchedulerConf.DEFAULT_QUENCH_MODE));
    nodes = NodeCredentials.open(b.dataDir);
    PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    Gauge.builder("datcp.ha.leader", leadership, l -> l.isLeader() ? 1 : 0)
        .description("1 while this scheduler leads (plans, serves agents and plugins), 0 while"
            + " it follows; always 1 for a single scheduler")
        .tag("mode", leadership.mode())
        .register(meters);
    // Armeria reads this process-wide setting when it creates a route's meters.
    MoreMeters.setDistributionStatisticConfig(REQUEST_METRICS);
    int loops = conf.get(SchedulerConf.SERVER_EVENT_LOOPS);
    eventLoops = EventLoopGroups.newEventLoopGroup(
        loops > 0 ? loops : Runtime.getRuntime().availableProcessors());
    clients = ClientFactory.builder().workerGroup(eventLoops, false).build();
    YarnApps yarn = yarn(conf, clients);
    service = new SchedulerService(conf, book, b.clock,
        new HostRateLimiter(conf.get(SchedulerConf.REPORT_RATE_PER_HOST),
            conf.get(SchedulerConf.REPORT_BURST_PER_HOST), b.nanoTime), meters, yarn);
    NodeAuthInterceptor nodeAuth = new NodeAuthInterceptor(nodes,
        conf.get(SchedulerConf.AUTH_NODES_REQUIRED));
    NodeByteBudget budget = new NodeByteBudget(
        conf.get(SchedulerConf.MAX_BYTES_PER_SECOND_PER_HOST),
        conf.get(SchedulerConf.BURST_BYTES_PER_HOST), b.nanoTime, meters);
    service.reports().onLimitRefusals(budget::refusedForLimits);
    heavyLane = new HeavyLane(budget::heavy, HEAVY_LANE_PER_HOST, HEAVY_LANE_QUEUED,
        System::nanoTime, HeavyLane::workerCpuNanos);
    if (!conf.get(SchedulerConf.AUTH_NODES_REQUIRED)) {
      LOG.warn("auth.nodes.required=false: reports and agents without a node token are trusted"
          + " (development only)");
    }
    if (!conf.get(SchedulerConf.HA_ZOOKEEPER_CONNECT).isEmpty()
        && conf.get(SchedulerConf.WATCH_HEARTBEAT_MILLIS) == 0) {
      LOG.warn("ha.zookeeper.connect without watch.heartbeatMillis: an agent that makes no call"
          + " finds a dead leader only by its keepalive pings (10-13 s); 1000 finds it in 2-3 s");
    }
    long sweepSeconds = Math.max(1, Math.min(60,
        conf.get(SchedulerConf.JOB_IDLE_TIMEOUT_SECONDS) / 4));
    sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "scheduler-job-sweeps");
      t.setDaemon(true);
      return t;
    });
    sweeper.scheduleWithFixedDelay(() -> {
      try {
        service.expireIdleJobs();
      } catch (RuntimeException e) {
        // A failed sweep must not end the schedule; the next one retries.
        LOG.warn("idle job sweep failed", e);
      }
    }, sweepSeconds, sweepSeconds, TimeUnit.SECONDS);
    if (yarn != null) {
      long pollMillis = conf.get(SchedulerConf.JOB_END_POLL_MILLIS);
      sweeper.scheduleWithFixedDelay(() -> {
        try {
          // Not awaited: the answers arrive on Armeria's event loops, not on this thread.
          service.pollJobEnds().whenComplete((ended, failure) -> {
            if (failure != null) {
              LOG.warn("applying job ends from the ResourceManager failed", failure);
            }
          });
        } catch (RuntimeException e) {
          LOG.warn("job end poll failed", e);
        }
      }, pollMillis, pollMillis, TimeUnit.MILLISECONDS);
    }
    int maxMessage = conf.get(SchedulerConf.REPORT_MAX_MESSAGE_BYTES);
    heartbeats = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "scheduler-watch-heartbeats");
      t.setDaemon(true);
      return t;
    });

    LeaderGate leaderGate = new LeaderGate(leadership);
    FlowPolicyGrpcService agentCalls = new FlowPolicyGrpcService(service.lookups(),
        service.reports(), service.switches(), conf.get(SchedulerConf.WATCH_MAX_QUEUED),
        heartbeats, conf.get(SchedulerConf.WATCH_HEARTBEAT_MILLIS));
    // A scheduler that stops leading sends its agents' streams to the one that leads.
    leadership.onLoss(() -> agentCalls.endStreams(leaderGate.refusal()));
    ServerBuilder gb = Server.builder();
    if (tls == null) {
      gb.http(b.grpcPort);
    } else {
      // Nodes' certificates are asked for on the gRPC port only: the HTTP port's callers are
      // operators, browsers and metric scrapers, with the admin token for writes.
      gb.https(b.grpcPort).tlsProvider(tls, ServerTlsConfig.builder()
          .clientAuth(!tls.verifiesClients() ? ClientAuth.NONE
              : conf.get(SchedulerConf.TLS_CLIENT_AUTH).equals("require") ? ClientAuth.REQUIRE
              : ClientAuth.OPTIONAL)
          .build());
    }
    gb
        .workerGroup(eventLoops, false)
        .gracefulShutdownTimeout(Duration.ZERO, SHUTDOWN_GRACE)
        .meterRegistry(meters)
        // The gRPC message limit below judges oversized reports (RESOURCE_EXHAUSTED, read from the
        // length prefix); this HTTP cap only stops bodies far beyond it.
        .maxRequestLength(HTTP_CAP_MESSAGES * (long) maxMessage + GRPC_FRAMING_BYTES)
        // Policy update streams live as long as the agent; clients bound unary calls themselves.
        .requestTimeout(Duration.ZERO)
        .service(GrpcService.builder()
            // The leader gate first: a follower refuses node calls before any other work.
            .addService(ServerInterceptors.intercept(budget.guard(heavyLane.offload(
                new ShuffleReportGrpcService(service.reports()).bindService()), nodeAuth),
                leaderGate))
            .addService(ServerInterceptors.intercept(budget.guard(heavyLane.offload(
                agentCalls.bindService()), nodeAuth), leaderGate))
            .addService(new PolicyAdminGrpcService(service.rules(), service.switches()))
            // v1alpha: the reflection flavour Armeria wires to its server; grpcurl falls back
            // to it.
            .addService(ProtoReflectionService.newInstance())
            .enableHealthCheckService(true)
            .maxRequestMessageLength(maxMessage)
            .build())
        .decorator(budget.delayRefusals())
        .decorator(MetricCollectingService.newDecorator(
            MeterIdPrefixFunction.ofDefault("datcp.grpc")));
    for (String method : PolicyAdminGrpcService.WRITE_METHODS) {
      gb.routeDecorator().path("/" + method).build(token.decorator());
    }
    grpc = gb.build();

    ServerBuilder hb = Server.builder();
    if (tls == null) {
      hb.http(b.httpPort);
    } else {
      hb.https(b.httpPort).tlsProvider(tls, ServerTlsConfig.builder()
          .clientAuth(ClientAuth.NONE).build());
    }
    hb
        .workerGroup(eventLoops, false)
        .gracefulShutdownTimeout(Duration.ZERO, SHUTDOWN_GRACE)
        .meterRegistry(meters)
        .maxRequestLength(maxMessage)
        .service("/healthz", HealthCheckService.of())
        // Ready = leading: a load balancer or probe sends node traffic to the leader only.
        .service("/readyz", HealthCheckService.builder().checkers(leadership::isLeader)
            .longPolling(0).build())
        .service("/api/v1/ha", (ctx, req) -> HttpResponse.ofJson(haStatus()))
        .service("/metrics", (ctx, req) -> HttpResponse.of(
            MediaType.parse("text/plain; version=0.0.4; charset=utf-8"), meters.scrape()))
        .annotatedService()
        .pathPrefix("/api/v1")
        .requestConverters(new JacksonRequestConverterFunction(json))
        .responseConverters(new JacksonResponseConverterFunction(json))
        .exceptionHandlers(new RestErrors())
        .build(new PolicyResource(service.rules()))
        .annotatedService()
        .pathPrefix("/api/v1")
        .responseConverters(new JacksonResponseConverterFunction(json))
        .exceptionHandlers(new RestErrors())
        .build(new JobResource(service.views()))
        .annotatedService()
        .pathPrefix("/api/v1")
        .responseConverters(new JacksonResponseConverterFunction(json))
        .exceptionHandlers(new RestErrors())
        .build(new NodeResource(nodes))
        .annotatedService()
        .pathPrefix("/api/v1")
        .requestConverters(new JacksonRequestConverterFunction(json))
        .responseConverters(new JacksonResponseConverterFunction(json))
        .exceptionHandlers(new RestErrors())
        .build(new SwitchResource(service.switches()))
        .annotatedService()
        .pathPrefix("/api/v1")
        .responseConverters(new JacksonResponseConverterFunction(json))
        .exceptionHandlers(new RestErrors())
        .build(new DashboardResource(service.views(), service.planViews()))
        .decorator(MetricCollectingService.newDecorator(
            MeterIdPrefixFunction.ofDefault("datcp.http")));
    hb.routeDecorator()
        .methods(HttpMethod.PUT, HttpMethod.POST, HttpMethod.DELETE, HttpMethod.PATCH)
        .pathPrefix("/api/v1/").build(token.decorator());
    Dashboard.mount(hb);
    http = hb.build();
  }

  /**
   * The TLS files of both ports; null with tls.plaintext=true (logged as a warning).
   *
   * @throws ConfigException naming the tls.* key that is missing, conflicting or unreadable
   */
  private static TlsFiles tls(SchedulerConf conf) {
    String cert = conf.get(SchedulerConf.TLS_CERT_FILE);
    String key = conf.get(SchedulerConf.TLS_KEY_FILE);
    String clientCa = conf.get(SchedulerConf.TLS_CLIENT_CA_FILE);
    if (conf.get(SchedulerConf.TLS_PLAINTEXT)) {
      if (!cert.isEmpty() || !key.isEmpty() || !clientCa.isEmpty()) {
        throw new ConfigException("configuration key 'tls.plaintext': true conflicts with"
            + " tls.certFile, tls.keyFile and tls.clientCaFile; set either");
      }
      LOG.warn("tls.plaintext=true: gRPC and HTTP without TLS, node and admin tokens cross the"
          + " network readable (development on loopback only)");
      return null;
    }
    if (cert.isEmpty() || key.isEmpty()) {
      throw new ConfigException("configuration key '" + (cert.isEmpty() ? "tls.certFile"
          : "tls.keyFile") + "': required (a PEM file) unless tls.plaintext=true;"
          + " scheduler/README.md, 'TLS', shows how to make one");
    }
    if (clientCa.isEmpty() && conf.get(SchedulerConf.TLS_CLIENT_AUTH).equals("require")) {
      throw new ConfigException("configuration key 'tls.clientAuth': require needs"
          + " tls.clientCaFile");
    }
    return TlsFiles.load(Path.of(cert), Path.of(key),
        clientCa.isEmpty() ? null : Path.of(clientCa));
  }

  /** The policy store and the election: local and sole, or (ha.zookeeper.connect) shared. */
  private record Coordination(RuleStore store, Leadership leadership, AutoCloseable ensemble) {}

  /**
   * @throws ConfigException naming the ha.* or auth.* key the HA mode cannot start with
   */
  private static Coordination coordination(SchedulerConf conf, Path dataDir, ObjectMapper json) {
    String connect = conf.get(SchedulerConf.HA_ZOOKEEPER_CONNECT);
    if (connect.isEmpty()) {
      if (!conf.get(SchedulerConf.HA_ZOOKEEPER_TLS_KEY_STORE).isEmpty()
          || !conf.get(SchedulerConf.HA_ZOOKEEPER_TLS_TRUST_STORE).isEmpty()) {
        throw new ConfigException("configuration key 'ha.zookeeper.connect': required with"
            + " ha.zookeeper.tls.keyStoreFile and ha.zookeeper.tls.trustStoreFile (TLS to"
            + " ZooKeeper); without ZooKeeper, leave them empty");
      }
      return new Coordination(PolicyStore.open(dataDir, json), new SoleLeadership(), () -> { });
    }
    if (conf.get(SchedulerConf.AUTH_TOKEN).isEmpty()) {
      throw new ConfigException("configuration key 'auth.token': required with"
          + " ha.zookeeper.connect (at least 16 characters, the same on every scheduler), so"
          + " that policy writes to any of them carry the same token");
    }
    String path = conf.get(SchedulerConf.HA_ZOOKEEPER_PATH);
    String digest = zooKeeperDigest(conf.get(SchedulerConf.HA_ZOOKEEPER_AUTH));
    if (digest == null) {
      LOG.warn("ha.zookeeper.auth is empty: anyone who reaches ZooKeeper at {} can change the"
          + " policy rules and the election under {}", connect, path);
    }
    ZooKeeperTls tls = ZooKeeperTls.load(conf.get(SchedulerConf.HA_ZOOKEEPER_TLS_KEY_STORE),
        conf.get(SchedulerConf.HA_ZOOKEEPER_TLS_TRUST_STORE));
    if (tls == null) {
      LOG.warn("ha.zookeeper.tls.* not set: plaintext to ZooKeeper at {}, so the credential of"
          + " ha.zookeeper.auth and the policy rules cross the network readable", connect);
    }
    ZooKeeperEnsemble zk = ZooKeeperEnsemble.connect(connect,
        conf.get(SchedulerConf.HA_SESSION_TIMEOUT_MILLIS), digest, tls);
    try {
      zk.restrict(List.of(path, path + "/policies", path + "/leader"));
      return new Coordination(ZooKeeperPolicyStore.open(zk.client(), path + "/policies", json),
          new ZooKeeperLeadership(zk.client(), path + "/leader"), zk);
    } catch (RuntimeException e) {
      zk.close();
      throw e;
    }
  }

  /**
   * The USER:PASSWORD of ha.zookeeper.auth (read from the file it names with {@code @}), or
   * null when it is empty.
   *
   * @throws ConfigException naming the key when the file is unreadable or not of the form
   */
  static String zooKeeperDigest(String auth) {
    if (auth.isEmpty()) {
      return null;
    }
    String value = auth;
    if (auth.startsWith("@")) {
      try {
        value = Files.readString(Path.of(auth.substring(1)), StandardCharsets.UTF_8).trim();
      } catch (IOException e) {
        throw new ConfigException("configuration key 'ha.zookeeper.auth': cannot read "
            + auth.substring(1) + ": " + e.getMessage());
      }
      if (!SchedulerConf.ZK_DIGEST.matcher(value).matches()) {
        throw new ConfigException("configuration key 'ha.zookeeper.auth': " + auth.substring(1)
            + " must hold one line digest:USER:PASSWORD");
      }
    }
    return value.substring("digest:".length());
  }

  /** What GET /api/v1/ha answers: mode, this instance's role, its and the leader's address. */
  private Map<String, Object> haStatus() {
    Map<String, Object> status = new LinkedHashMap<>();
    status.put("mode", leadership.mode());
    status.put("role", leadership.isLeader() ? "leader" : "follower");
    status.put("self", address());
    status.put("leader", leadership.leader().orElse(null));
    return status;
  }

  /** This instance's gRPC address as it joins the election: ha.advertisedHost:port. */
  public String address() {
    String host = advertisedHost;
    if (host.isEmpty()) {
      try {
        host = InetAddress.getLocalHost().getCanonicalHostName();
      } catch (UnknownHostException e) {
        throw new ConfigException("configuration key 'ha.advertisedHost': this machine's host"
            + " name does not resolve (" + e.getMessage() + "); set it");
      }
    }
    return host + ":" + grpcPort();
  }

  /** The ResourceManager, when configured: for job ends always, for attributes unless dev. */
  private static YarnApps yarn(SchedulerConf conf, ClientFactory clients) {
    boolean fromReports = conf.get(SchedulerConf.JOB_ATTRIBUTES_FROM).equals("reports");
    if (fromReports) {
      LOG.warn("jobs.attributesFrom=reports: policy rules match on what jobs claim about"
          + " themselves (development only)");
    }
    String rm = conf.get(SchedulerConf.YARN_RM_WEBAPP);
    if (rm.isEmpty()) {
      LOG.warn("yarn.rm.webappAddress is not set: {}; cross-job claims are not verified (a"
          + " node may report any job's reduces and map outputs on its own host)", fromReports
          ? "jobs end only when reported or idle"
          : "every job gets the default policy, and jobs end only when reported or idle");
      return null;
    }
    return new YarnApps(rm, clients);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Starts both servers; returns when they accept connections. */
  public SchedulerServer start() {
    try {
      grpc.start().join();
      http.start().join();
      leadership.start(address());
    } catch (RuntimeException e) {
      close();
      throw e;
    }
    return this;
  }

  public int grpcPort() {
    return grpc.activeLocalPort();
  }

  public int httpPort() {
    return http.activeLocalPort();
  }

  /** The bearer token policy writes need. */
  public String token() {
    return token.value();
  }

  /** The domain service, for in-process tests and benchmarks. */
  public SchedulerService service() {
    return service;
  }

  /**
   * Event-loop threads the two servers run their calls on and the ResourceManager client its
   * requests, counted once (server.eventLoops).
   */
  public int eventLoopThreads() {
    Set<EventExecutor> loops = new HashSet<>();
    grpc.config().workerGroup().forEach(loops::add);
    http.config().workerGroup().forEach(loops::add);
    clients.eventLoopGroup().forEach(loops::add);
    return loops.size();
  }

  /** Node credentials of reporters and agents. */
  public NodeCredentials nodes() {
    return nodes;
  }

  /** This instance's role in the election (always leading without ha.zookeeper.connect). */
  public Leadership leadership() {
    return leadership;
  }

  @Override
  public void close() {
    // Leave the election first: another scheduler leads while this one stops.
    leadership.close();
    sweeper.shutdownNow();
    heartbeats.shutdownNow();
    CompletableFuture.allOf(http.stop(), grpc.stop()).join();
    heavyLane.close();
    clients.close();
    eventLoops.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    store.close();
    try {
      ensemble.close();
    } catch (Exception e) {
      LOG.warn("closing the ZooKeeper session failed; it expires on its own", e);
    }
  }

  /** Settings of one scheduler instance. */
  public static final class Builder {
    private Path dataDir;
    private int grpcPort;
    private int httpPort;
    private SchedulerConf conf = SchedulerConf.defaults();
    private Clock clock = Clock.systemUTC();
    private LongSupplier nanoTime = System::nanoTime;

    private Builder() {}

    /** Where policies and the generated token live. */
    public Builder dataDir(Path dir) {
      this.dataDir = dir;
      return this;
    }

    /** 0 picks a free port. */
    public Builder grpcPort(int port) {
      this.grpcPort = port;
      return this;
    }

    /** 0 picks a free port. */
    public Builder httpPort(int port) {
      this.httpPort = port;
      return this;
    }

    public Builder conf(SchedulerConf conf) {
      this.conf = conf;
      return this;
    }

    /** The clock for event and deadline times; tests freeze it. */
    public Builder clock(Clock clock) {
      this.clock = clock;
      return this;
    }

    /** The monotonic clock of the per-host rate and byte budgets, nanoseconds; tests step it. */
    public Builder nanoTime(LongSupplier nanoTime) {
      this.nanoTime = nanoTime;
      return this;
    }

    public SchedulerServer build() throws IOException {
      Objects.requireNonNull(dataDir, "dataDir");
      return new SchedulerServer(this);
    }
  }
}
