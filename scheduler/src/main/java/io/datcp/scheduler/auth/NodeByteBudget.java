package io.datcp.scheduler.auth;

import com.google.protobuf.MessageLite;
import com.linecorp.armeria.common.HttpResponse;
import com.linecorp.armeria.server.DecoratingHttpServiceFunction;
import com.linecorp.armeria.server.ServiceRequestContext;
import io.datcp.scheduler.common.HostBuckets;
import io.datcp.scheduler.common.ReceivedMessage;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.util.AttributeKey;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A budget of request bytes per authenticated host (reports.maxBytesPerSecondPerHost,
 * reports.burstBytesPerHost), checked when a call starts, before its message is read.
 *
 * <p>Why here and not in the services: every limit the services apply is judged on a parsed
 * message, and a host that sends the largest valid messages as fast as their refusals come back
 * made the scheduler parse 39 MB/s of them, whose garbage set off young collections that
 * quadrupled the honest hosts' p99. A call started while its host's bucket is empty is closed
 * here with RESOURCE_EXHAUSTED; Armeria then aborts the request without reading it into a
 * message (a closed call's messages are never deserialized).
 *
 * <p>A token bucket that may go into debt: a call starts when the bucket holds any bytes, and
 * its message's size is taken when the message arrives, so one call may overdraw the bucket
 * (calls that start together overdraw it by all their messages) and the host's later calls wait
 * until the rate has paid it back. Calls without a node credential (auth.nodes.required=false)
 * are not budgeted: their host is not known before the message is read.
 *
 * <p>A refusal is answered when the host's bucket will hold bytes again, at most a second later
 * ({@link #delayRefusals}): answered at once, a host calling in a loop sent its next message at
 * once, 1,000 refused calls a second of up to 1 MB each, whose bytes and calls the scheduler
 * still has to take in (and, in the benchmark, whose sending takes a core of the same machine).
 * Held back, each loop waits for its budget; what a refused call holds meanwhile is its context
 * and response, not its message, which is dropped unread.
 */
public final class NodeByteBudget implements ServerInterceptor {
  private static final String RATE_KEY = "reports.maxBytesPerSecondPerHost";
  /** Longest a refusal is held back, nanoseconds. */
  private static final long MAX_REFUSAL_DELAY_NANOS = 1_000_000_000L;
  /** Set on a call refused here: how long to hold its answer back. */
  private static final AttributeKey<Duration> REFUSAL_DELAY =
      AttributeKey.valueOf(NodeByteBudget.class, "refusalDelay");
  /** Events a host may have refused for a limit, per second and at once, before its calls are. */
  private static final double STRIKES_PER_SECOND = 100;
  private static final double STRIKES_BURST = 2_000;
  /** A light host sends at most this fraction of the budget: 1/8, 1 MiB/s by default. */
  private static final int LIGHT_SHARE = 8;
  private static final Logger LOG = LoggerFactory.getLogger(NodeByteBudget.class);

  private final HostBuckets buckets;
  /** Events of a host refused for a limit ({@link #refusedForLimits}). */
  private final HostBuckets strikes;
  private final Counter refusedForStrikes;
  /** A host is heavy while it sends more than an eighth of its budget ({@link #heavy}). */
  private final HostBuckets light;
  private final Counter refused;
  /** The refusal's description up to the host's name, built once. */
  private final String refusal;
  private final AtomicBoolean logged = new AtomicBoolean();
  private final AtomicBoolean strikesLogged = new AtomicBoolean();

  /**
   * @param bytesPerSecond sustained request bytes per second per host
   * @param burst bytes a host may send at once after being idle
   * @param nanoTime monotonic clock, nanoseconds
   * @param meters where refused calls are counted (datcp_report_rejected_total{reason=bytes})
   */
  public NodeByteBudget(long bytesPerSecond, long burst, LongSupplier nanoTime,
      MeterRegistry meters) {
    this.buckets = new HostBuckets(bytesPerSecond, burst, nanoTime);
    this.strikes = new HostBuckets(STRIKES_PER_SECOND, STRIKES_BURST, nanoTime);
    this.refusedForStrikes = Counter.builder("datcp.report.rejected").tag("reason", "limits")
        .description("Report batches refused").register(meters);
    this.light = new HostBuckets(bytesPerSecond / (double) LIGHT_SHARE,
        burst / (double) LIGHT_SHARE, nanoTime);
    this.refused = Counter.builder("datcp.report.rejected").tag("reason", "bytes")
        .description("Report batches refused").register(meters);
    this.refusal = RATE_KEY + " (" + bytesPerSecond + " bytes/s, reports.burstBytesPerHost "
        + burst + ") exceeded by host '";
  }

  /** {@code service} behind {@code nodeAuth}, then this budget of the host it names. */
  public ServerServiceDefinition guard(ServerServiceDefinition service,
      NodeAuthInterceptor nodeAuth) {
    // The last interceptor given runs first.
    return ServerInterceptors.intercept(service, this, nodeAuth);
  }

  @Override
  public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
      ServerCallHandler<Q, A> next) {
    String host = NodeAuthInterceptor.HOST.get();
    if (host == null) {
      return next.startCall(call, headers);
    }
    long struck = strikes.nanosUntilPositive(host);
    if (struck > 0) {
      return refuse(call, refusedForStrikes, struck, strikesLogged, "host '" + host
          + "' had more than " + (long) STRIKES_BURST + " events refused for a limit (and "
          + (long) STRIKES_PER_SECOND + " a second since): its calls are refused unread until"
          + " that has paid back; retry later", "reason=limits");
    }
    long wait = nanosUntilAdmitted(host);
    if (wait > 0) {
      return refuse(call, refused, wait, logged,
          refusal + host + "': call refused unread; retry later", "reason=bytes");
    }
    return new SimpleForwardingServerCallListener<>(next.startCall(call, headers)) {
      @Override
      public void onMessage(Q message) {
        charge(host, message instanceof ReceivedMessage r ? r.size()
            : message instanceof MessageLite m ? m.getSerializedSize() : 0);
        super.onMessage(message);
      }
    };
  }

  /**
   * Closes {@code call} unread with RESOURCE_EXHAUSTED, its answer held back until the host
   * may call again ({@code wait}, at most a second); counted, and logged the first time.
   */
  private static <Q, A> ServerCall.Listener<Q> refuse(ServerCall<Q, A> call, Counter counter,
      long wait, AtomicBoolean once, String description, String metricReason) {
    counter.increment();
    holdRefusal(Duration.ofNanos(Math.min(wait, MAX_REFUSAL_DELAY_NANOS)));
    if (once.compareAndSet(false, true)) {
      LOG.warn("{}; further refusals are only counted (datcp_report_rejected_total{{}})",
          description, metricReason);
    }
    // No cause: a status without one is written as it is, no exception or stack trace.
    call.close(Status.RESOURCE_EXHAUSTED.withDescription(description), new Metadata());
    return new ServerCall.Listener<>() {};
  }

  /**
   * Holds back the answers of calls this budget refused (see the class comment); a decorator of
   * the gRPC port's services.
   */
  public DecoratingHttpServiceFunction delayRefusals() {
    return (delegate, ctx, req) -> {
      HttpResponse res = delegate.serve(ctx, req);
      // The gRPC service starts a call, and so runs this budget, before serve returns.
      Duration delay = ctx.attr(REFUSAL_DELAY);
      return delay == null ? res : HttpResponse.delayed(res, delay, ctx.eventLoop());
    };
  }

  /**
   * Holds back the answer of the call being started on this thread, refused by another bound
   * (the heavy-host lane), as this budget holds back its own: see the class comment.
   */
  public static void holdRefusal(Duration delay) {
    ServiceRequestContext ctx = ServiceRequestContext.currentOrNull();
    if (ctx != null) {
      ctx.setAttr(REFUSAL_DELAY, delay);
    }
  }

  /** 0 when {@code host}'s bucket holds bytes now, else nanoseconds until it will (at least 1). */
  long nanosUntilAdmitted(String host) {
    return buckets.nanosUntilPositive(host);
  }

  /** Takes {@code bytes} from {@code host}'s bucket, into debt if need be. */
  void charge(String host, long bytes) {
    buckets.take(host, bytes);
    light.take(host, bytes);
  }

  /**
   * Counts {@code events} of {@code host}'s refused for a limit (jobs.*, flows.*: what no honest
   * host reaches, see scheduler/README "Limits"). A host with 2,000 of them (two full batches),
   * and 100 a second since, has its calls refused unread until the excess has paid back at that rate: its
   * batches were parsed and judged event by event only to be refused, and a host that keeps
   * sending them spends the scheduler's CPU and heap on nothing.
   */
  public void refusedForLimits(String host, int events) {
    strikes.take(host, events);
  }

  /**
   * Whether {@code host} sends more than an eighth of the budget now (its burst spent at more
   * than an eighth of the rate): its calls then go to the heavy-host lane
   * ({@code api.grpc.HeavyLane}), off the event loops. An honest host sends far less (see
   * scheduler/README, "Why 8 MiB/s").
   */
  public boolean heavy(String host) {
    return light.nanosUntilPositive(host) > 0;
  }
}
