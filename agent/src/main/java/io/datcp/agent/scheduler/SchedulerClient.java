package io.datcp.agent.scheduler;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.failopen.Outage;
import io.datcp.agent.flows.PolicySource;
import io.datcp.proto.v1.FlowKey;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.proto.v1.WatchRequest;
import io.grpc.CallCredentials;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The agent's side of FlowPolicyService and ShuffleReportService: cached policy lookups, the
 * policy update stream (resync on every reconnect, exponential back-off), and batched reports
 * of flow outcomes and forwarded map-side events. Fails open: while the scheduler is away,
 * lookups are skipped (flows keep the default policy), reports queue up to a bound, and the
 * outage is logged once.
 *
 * <p>The update stream is timed: the scheduler sends a heartbeat on it every interval it
 * announces (PolicyUpdate.heartbeat_millis, watch.heartbeatMillis), and a stream that brings
 * nothing for {@link #HEARTBEATS_MISSED} intervals is ended here and its scheduler taken for
 * dead ({@link LeaderChannel#silent}): killed with its host, frozen or cut off, it keeps the
 * connection up and answers nothing, and an agent that makes no call would otherwise find that
 * out only by HTTP/2 keepalive, 10-13 s later. The outage that begins sends the running
 * reduces' and the map side's state again to the scheduler that answers next.
 */
public final class SchedulerClient implements PolicySource, AutoCloseable {
  private static final Logger LOG = Logger.getLogger(SchedulerClient.class.getName());
  private static final long REPORT_DEADLINE_MS = 5_000;
  /** While the scheduler is away, at most one lookup per this interval goes out (a probe). */
  private static final long PROBE_INTERVAL_NANOS = 1_000_000_000L;
  /**
   * Heartbeat intervals without a message after which the update stream's scheduler is taken for
   * dead: one late heartbeat (a loaded scheduler's pause) is no failover, and a silent one is
   * noticed 2-3 intervals after its last heartbeat.
   */
  static final int HEARTBEATS_MISSED = 3;
  /** Longest wait between checks of the update stream (moved calls, silence). */
  private static final long WATCH_CHECK_NANOS = 1_000_000_000L;
  /** Flows whose latest update time is remembered; beyond it the memory starts over. */
  private static final int MAX_TRACKED_FLOWS = 100_000;

  private final String hostName;
  private final LeaderChannel channel;
  /** Null without scheduler.tokenFile. */
  private final NodeToken token;
  private final FlowPolicyServiceGrpc.FlowPolicyServiceStub policyStub;
  private final FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub policyBlocking;
  private final ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub reportBlocking;
  private final Outage outage;
  private final PolicyCache cache = new PolicyCache();
  private final Semaphore lookupSlots;
  private final long lookupTimeoutMs;
  private final long reconnectMinMs;
  private final long reconnectMaxMs;
  private final String reporterId = UUID.randomUUID().toString();
  private final BatchSender<FlowOutcome> outcomes;
  private final BatchSender<ShuffleEvent> forwarded;
  /** Sent again after each outage: the scheduler answering then may have lost its job state. */
  private final RunningReduces running = new RunningReduces();
  /** Sent again with them: the map side's partition sizes, without which it plans nothing. */
  private final MapSideState mapSide = new MapSideState();
  private final Counter lookupsSkipped;
  private final Counter lookupsAnswered;
  private volatile Consumer<FlowPolicy> updateSink = p -> {};
  private volatile boolean closed;
  private final ConcurrentHashMap<FlowKey, Long> latestUpdate = new ConcurrentHashMap<>();
  private final AtomicLong lastProbeNanos = new AtomicLong(System.nanoTime());
  private Thread watcher;
  /** Builds and starts policy lookups off the registration path (bounded by lookupSlots). */
  private final ExecutorService lookupThread = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "datcp-policy-lookup");
    t.setDaemon(true);
    return t;
  });
  private volatile ClientCallStreamObserver<WatchRequest> watchCall;
  /**
   * Silence on the update stream after which its scheduler is taken for dead:
   * HEARTBEATS_MISSED x the interval the last scheduler announced; 0 before any announced one
   * (a scheduler without heartbeats: keepalive only).
   */
  private volatile long silenceNanos;

  /**
   * Connects lazily to scheduler.target (the channel reconnects by itself).
   *
   * @throws IllegalArgumentException when scheduler.tokenFile is set but unreadable or empty,
   *     or the TLS settings cannot be used (naming the key)
   */
  public SchedulerClient(AgentConf conf, String hostName, MeterRegistry meters) {
    this.hostName = hostName;
    String target = conf.get(AgentConf.SCHEDULER_TARGET);
    channel = SchedulerChannel.open(conf);
    String tokenFile = conf.get(AgentConf.TOKEN_FILE);
    token = tokenFile.isEmpty() ? null : NodeToken.read(tokenFile);
    Channel calls = token == null ? channel
        : ClientInterceptors.intercept(channel, token.interceptor());
    FlowPolicyServiceGrpc.FlowPolicyServiceStub ps = FlowPolicyServiceGrpc.newStub(calls);
    FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub pb =
        FlowPolicyServiceGrpc.newBlockingStub(calls);
    ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub rb =
        ShuffleReportServiceGrpc.newBlockingStub(calls);
    if (token != null) {
      CallCredentials creds = token.credentials();
      ps = ps.withCallCredentials(creds);
      pb = pb.withCallCredentials(creds);
      rb = rb.withCallCredentials(creds);
    }
    policyStub = ps;
    policyBlocking = pb;
    reportBlocking = rb;
    outage = new Outage(LOG, "scheduler at " + target,
        "flows get the cached or default policy and reports queue");
    lookupSlots = new Semaphore(conf.get(AgentConf.MAX_LOOKUPS_IN_FLIGHT));
    lookupTimeoutMs = conf.get(AgentConf.LOOKUP_TIMEOUT_MS);
    reconnectMinMs = conf.get(AgentConf.RECONNECT_MIN_MS);
    reconnectMaxMs = conf.get(AgentConf.RECONNECT_MAX_MS);
    int capacity = conf.get(AgentConf.REPORT_QUEUE);
    int maxBatch = conf.get(AgentConf.REPORT_BATCH);
    long flush = conf.get(AgentConf.REPORT_FLUSH_MS);
    outcomes = new BatchSender<>("outcomes", (batch, id) -> withCurrentToken(() -> policyBlocking
        .withDeadlineAfter(REPORT_DEADLINE_MS, TimeUnit.MILLISECONDS)
        .reportOutcomes(FlowOutcomes.newBuilder().setAgentHost(hostName)
            .addAllOutcomes(batch).setReporterId(reporterId + "/outcomes").setBatchId(id)
            .build())),
        outage, capacity, maxBatch, flush, backoff(), meters);
    forwarded = new BatchSender<>("shuffle-reports", (batch, id) -> withCurrentToken(
        () -> reportBlocking.withDeadlineAfter(REPORT_DEADLINE_MS, TimeUnit.MILLISECONDS)
            .report(ShuffleReport.newBuilder().setReporterHost(hostName).addAllEvents(batch)
                .setReporterId(reporterId + "/shuffle").setBatchId(id).build())),
        new BatchSender.Resend<>() {
          @Override
          public long epoch() {
            return outage.count();
          }

          @Override
          public List<ShuffleEvent> events() {
            // the reduces first: a job's index then applies to it, not to the outputs a
            // scheduler holds for jobs it does not know yet
            List<ShuffleEvent> all = new ArrayList<>(running.events());
            all.addAll(mapSide.events());
            return all;
          }
        },
        outage, capacity, maxBatch, flush, backoff(), meters);
    lookupsSkipped = Counter.builder("datcp.agent.lookups").tag("result", "skipped")
        .description("policy lookups by result").register(meters);
    lookupsAnswered = Counter.builder("datcp.agent.lookups").tag("result", "answered")
        .register(meters);
    FunctionCounter.builder("datcp.agent.reports.resend.dropped", mapSide, MapSideState::dropped)
        .description("map output indexes not kept to send again after an outage (over a cap)")
        .register(meters);
    Gauge.builder("datcp.agent.scheduler.up", outage, o -> o.isDown() ? 0 : 1)
        .description("1 while the scheduler answers").register(meters);
    Gauge.builder("datcp.agent.scheduler.outages", outage, Outage::count)
        .description("scheduler outages since start").register(meters);
  }

  private Backoff backoff() {
    return new Backoff(reconnectMinMs, reconnectMaxMs);
  }

  /**
   * Runs a blocking call; when the scheduler refused the token and the token file gave a new
   * one meanwhile, runs it again at once (a batch keeps its id, so the scheduler's dedup holds).
   */
  private <R> R withCurrentToken(Supplier<R> call) {
    long g = token == null ? 0 : token.generation();
    try {
      return call.get();
    } catch (StatusRuntimeException e) {
      if (!refusedUnder(e.getStatus(), g)) {
        throw e;
      }
      return call.get();
    }
  }

  /** True when s is a refusal of the credential and a newer token is there to retry with. */
  private boolean refusedUnder(Status s, long generation) {
    return token != null && s.getCode() == Status.Code.UNAUTHENTICATED
        && token.generation() != generation;
  }

  /** Starts the policy update stream; updates for live flows go to sink. */
  public void watch(Consumer<FlowPolicy> sink) {
    updateSink = sink;
    watcher = new Thread(this::watchLoop, "datcp-policy-watch");
    watcher.setDaemon(true);
    watcher.start();
  }

  // ---- PolicySource ----

  @Override
  public FlowPolicy cached(String jobId, int reduceId) {
    return cache.get(jobId, reduceId);
  }

  @Override
  public void lookup(Supplier<PolicyLookup> lookup, Consumer<FlowPolicy> onAnswer) {
    if (outage.isDown() && !probeDue() || !lookupSlots.tryAcquire()) {
      // while the scheduler is away, one lookup a second probes; the rest keep the default
      lookupsSkipped.increment();
      return;
    }
    // built and started on the lookup thread: a gRPC call's start and serialisation cost more
    // than the registration itself, and that thread's context is not the caller's (which
    // ends, cancelled, when RegisterFlow answers)
    try {
      lookupThread.execute(() -> lookupAsync(lookup.get(), onAnswer, true));
    } catch (RejectedExecutionException e) {
      lookupSlots.release(); // closing
    }
  }

  private void lookupAsync(PolicyLookup lookup, Consumer<FlowPolicy> onAnswer,
      boolean mayRetry) {
    long tokenGeneration = token == null ? 0 : token.generation();
    policyStub.withDeadlineAfter(lookupTimeoutMs, TimeUnit.MILLISECONDS)
        .lookupPolicy(lookup, new StreamObserver<>() {
          @Override
          public void onNext(FlowPolicy p) {
            FlowPolicy answer = p.hasFlow() ? p : p.toBuilder().setFlow(lookup.getFlow()).build();
            lookupsAnswered.increment();
            outage.up();
            cache.put(answer, 0); // any watched decision is newer than this answer
            onAnswer.accept(answer);
          }

          @Override
          public void onError(Throwable t) {
            Status s = Status.fromThrowable(t);
            if (mayRetry && refusedUnder(s, tokenGeneration)) {
              // the old token was refused and the file holds a new one: ask again, once
              try {
                lookupThread.execute(() -> lookupAsync(lookup, onAnswer, false));
                return; // keeps its slot
              } catch (RejectedExecutionException e) {
                // closing
              }
            }
            lookupSlots.release();
            if (s.getCode() == Status.Code.UNAVAILABLE
                || s.getCode() == Status.Code.DEADLINE_EXCEEDED
                || s.getCode() == Status.Code.UNAUTHENTICATED) {
              outage.down(s.toString()); // lookups slow down to the probe until it answers
            }
          }

          @Override
          public void onCompleted() {
            lookupSlots.release();
          }
        });
  }

  private boolean probeDue() {
    long now = System.nanoTime();
    long last = lastProbeNanos.get();
    return now - last > PROBE_INTERVAL_NANOS && lastProbeNanos.compareAndSet(last, now);
  }

  // ---- reports ----

  /** Queues a flow outcome for ReportOutcomes. */
  public void report(FlowOutcome o) {
    outcomes.offer(List.of(o));
  }

  /**
   * Queues the plugin's events for ShuffleReportService.Report; those of reduces still shuffling
   * ({@link RunningReduces}) and the map outputs indexed here ({@link MapSideState}) are sent
   * again after an outage.
   */
  public int forward(List<ShuffleEvent> events) {
    running.record(events);
    mapSide.record(events);
    forwarded.offer(events);
    return events.size();
  }

  /** The scheduler's outage tracker. */
  public Outage outage() {
    return outage;
  }

  /** The async policy stub with credentials (the switch role watches its config on it). */
  public FlowPolicyServiceGrpc.FlowPolicyServiceStub policyStub() {
    return policyStub;
  }

  /** Events dropped from the outcome and forward queues. */
  public long droppedReports() {
    return outcomes.droppedCount() + forwarded.droppedCount();
  }

  // ---- policy updates ----

  private void watchLoop() {
    Backoff backoff = backoff();
    while (!closed) {
      CountDownLatch done = new CountDownLatch(1);
      List<FlowPolicy> snapshot = new ArrayList<>();
      long resync = cache.mark();
      boolean[] live = {false};
      String target = channel.currentTarget();
      long tokenGeneration = token == null ? 0 : token.generation();
      Status[] ended = {Status.OK};
      AtomicLong heard = new AtomicLong(System.nanoTime());
      policyStub.watchPolicies(WatchRequest.newBuilder().setAgentHost(hostName).setResync(true)
          .build(), new ClientResponseObserver<WatchRequest, PolicyUpdate>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<WatchRequest> call) {
              watchCall = call;
            }

            @Override
            public void onNext(PolicyUpdate u) {
              heard.set(System.nanoTime());
              outage.up();
              backoff.reset();
              if (u.getHeartbeat() || u.getSnapshotEnd()) {
                silenceNanos = HEARTBEATS_MISSED * u.getHeartbeatMillis() * 1_000_000L;
              }
              if (u.getHeartbeat()) {
                return;
              }
              if (u.getSnapshotEnd()) {
                cache.replaceAll(snapshot, nowUnix(), resync);
                snapshot.forEach(updateSink);
                snapshot.clear();
                live[0] = true;
              } else if (u.getJobFinished()) {
                cache.dropJob(u.getPolicy().getJobId());
                running.dropJob(u.getPolicy().getJobId());
                mapSide.dropJob(u.getPolicy().getJobId());
              } else if (!live[0]) {
                snapshot.add(u.getPolicy());
              } else {
                cache.put(u.getPolicy(), u.getTimeUnixNanos());
                if (latestForFlow(u)) {
                  updateSink.accept(u.getPolicy());
                }
              }
            }

            @Override
            public void onError(Throwable t) {
              ended[0] = Status.fromThrowable(t);
              if (!closed && outage.down(ended[0].toString())) {
                forwarded.wake();
              }
              done.countDown();
            }

            @Override
            public void onCompleted() {
              done.countDown();
            }
          });
      try {
        // the stream has no deadline: one open to a scheduler that died without a reset would
        // stay open for good, so it ends when it brings nothing for HEARTBEATS_MISSED heartbeat
        // intervals, or when the other calls moved to another scheduler
        while (!done.await(untilCheck(heard.get()), TimeUnit.NANOSECONDS)) {
          long silence = silenceNanos;
          long quiet = System.nanoTime() - heard.get();
          if (silence > 0 && quiet >= silence) {
            channel.silent(target);
            watchCall.cancel("nothing on the update stream for " + quiet / 1_000_000 + " ms ("
                + HEARTBEATS_MISSED + " heartbeat intervals): taken for dead", null);
            break;
          }
          if (!channel.currentTarget().equals(target)) {
            watchCall.cancel("calls moved to " + channel.currentTarget(), null);
            break;
          }
        }
        done.await();
        if (!closed && !refusedUnder(ended[0], tokenGeneration)) { // a new token: at once
          Thread.sleep(backoff.nextDelayMillis());
        }
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Nanoseconds to the update stream's next check: its silence bound, at most a second. */
  private long untilCheck(long heardNanos) {
    long silence = silenceNanos;
    if (silence == 0) {
      return WATCH_CHECK_NANOS;
    }
    long left = heardNanos + silence - System.nanoTime();
    return Math.max(1_000_000L, Math.min(WATCH_CHECK_NANOS, left));
  }

  /** Updates of one flow may arrive out of order: only the latest decision applies. */
  private boolean latestForFlow(PolicyUpdate u) {
    if (latestUpdate.size() > MAX_TRACKED_FLOWS) {
      latestUpdate.clear();
    }
    FlowKey k = u.getPolicy().getFlow();
    long t = u.getTimeUnixNanos();
    return latestUpdate.merge(k, t, Math::max) == t;
  }

  private static long nowUnix() {
    Instant t = Instant.now();
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }

  @Override
  public void close() {
    closed = true;
    ClientCallStreamObserver<WatchRequest> call = watchCall;
    if (call != null) {
      call.cancel("agent stopping", null);
    }
    if (watcher != null) {
      watcher.interrupt();
    }
    lookupThread.shutdownNow();
    outcomes.close();
    forwarded.close();
    channel.shutdownNow();
    try {
      channel.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
