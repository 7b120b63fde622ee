package io.datcp.scheduler.api.grpc;

import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.SwitchConfig;
import io.datcp.proto.v1.SwitchConfigRequest;
import io.datcp.proto.v1.WatchRequest;
import io.datcp.scheduler.auth.NodeAuthInterceptor;
import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.common.LimitReachedException;
import io.datcp.scheduler.flows.FlowKey;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.ingest.Ack;
import io.datcp.scheduler.ingest.Caller;
import io.datcp.scheduler.ingest.NotPermittedException;
import io.datcp.scheduler.ingest.Reports;
import io.datcp.scheduler.serve.Lookups;
import io.datcp.scheduler.switches.SwitchBook;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * gRPC adapter for the per-host agents: lookups, the update stream, flow outcomes and the
 * switch configuration stream. The node credential (checked first) names the agent's host.
 *
 * <p>With watch.heartbeatMillis set, each update stream carries a heartbeat that often, timed per stream from
 * its opening (so 10,000 streams' heartbeats spread over the interval instead of leaving in one
 * burst): an agent that makes no call finds this scheduler dead (killed with its host, frozen,
 * cut off) when three in a row do not come, long before HTTP/2 keepalive would.
 */
public final class FlowPolicyGrpcService extends FlowPolicyServiceGrpc.FlowPolicyServiceImplBase {
  private final Lookups lookups;
  private final Reports reports;
  private final SwitchBook switches;
  private final int maxQueuedUpdates;
  private final ScheduledExecutorService heartbeats;
  private final int heartbeatMillis;
  /** What ends each open update and switch stream (see {@link #endStreams}). */
  private final Set<Consumer<StatusRuntimeException>> openStreams =
      ConcurrentHashMap.newKeySet();

  /**
   * @param maxQueuedUpdates updates one slow stream may queue before it is closed
   * @param heartbeats runs the update streams' heartbeats
   * @param heartbeatMillis watch.heartbeatMillis
   */
  public FlowPolicyGrpcService(Lookups lookups, Reports reports, SwitchBook switches,
      int maxQueuedUpdates, ScheduledExecutorService heartbeats, int heartbeatMillis) {
    this.lookups = lookups;
    this.reports = reports;
    this.switches = switches;
    this.maxQueuedUpdates = maxQueuedUpdates;
    this.heartbeats = heartbeats;
    this.heartbeatMillis = heartbeatMillis;
  }

  /**
   * Ends every open update and switch stream with {@code error}: this scheduler stopped
   * leading, and its agents reconnect to the one that leads.
   */
  public void endStreams(StatusRuntimeException error) {
    for (Consumer<StatusRuntimeException> end : List.copyOf(openStreams)) {
      end.accept(error);
    }
  }

  /**
   * Registers an open stream: {@code release} (its unregistering from the domain) runs once,
   * whether the client cancels or {@link #endStreams} ends it.
   */
  private void opened(ServerCallStreamObserver<?> call, BoundedStream<?> stream,
      Runnable release) {
    AtomicBoolean released = new AtomicBoolean();
    Runnable once = () -> {
      if (released.compareAndSet(false, true)) {
        release.run();
      }
    };
    Consumer<StatusRuntimeException> end = new Consumer<>() {
      @Override
      public void accept(StatusRuntimeException error) {
        openStreams.remove(this);
        if (stream.end(error)) {
          once.run();
        }
      }
    };
    openStreams.add(end);
    call.setOnCancelHandler(() -> {
      openStreams.remove(end);
      once.run();
    });
  }

  @Override
  public void lookupPolicy(PolicyLookup request, StreamObserver<FlowPolicy> out) {
    GrpcCalls.unaryAsync(out, () -> {
      Caller caller = GrpcCalls.caller(request.getAgentHost(), "agentHost");
      FlowKey flow = request.hasFlow()
          ? ProtoMapping.flow(request.getFlow(), request.getJobId(), request.getReduceId())
          : null;
      // the maps the lookup marks done, as Lookups reads them: a claim the ingest step judges
      List<Integer> served = request.getMapIdsList().isEmpty() && flow != null
          ? flow.mapIds() : request.getMapIdsList();
      return reports.checkMapsServed(caller, request.getJobId(), served).thenApply(
          v -> ProtoMapping.policy(lookups.lookup(caller.host(), request.getJobId(),
              request.getReduceId(), request.getBytes(), request.getMapIdsList(), flow)));
    });
  }

  @Override
  public void watchPolicies(WatchRequest request, StreamObserver<PolicyUpdate> out) {
    ServerCallStreamObserver<PolicyUpdate> call = (ServerCallStreamObserver<PolicyUpdate>) out;
    AtomicReference<Runnable> stop = new AtomicReference<>(() -> {});
    BoundedStream<PolicyUpdate> stream = new BoundedStream<>(call, maxQueuedUpdates, false,
        () -> {
          stop.get().run();
          lookups.slowWatcherClosed();
        });
    try {
      String host = GrpcCalls.caller(request.getAgentHost(), "agentHost").host();
      stop.set(lookups.watch(host, request.getResync(), u -> {
        PolicyUpdate.Builder b = PolicyUpdate.newBuilder()
            .setTimeUnixNanos(u.timeUnixNanos())
            .setJobFinished(u.jobFinished())
            .setSnapshotEnd(u.snapshotEnd());
        if (u.snapshotEnd()) {
          b.setHeartbeatMillis(heartbeatMillis); // the agent times the stream from here on
        }
        if (u.policy() != null) {
          b.setPolicy(ProtoMapping.policy(u.policy()));
        }
        stream.send(b.build());
      }));
      if (stream.closed()) {
        // Overflowed while the snapshot was queued, before the handle existed.
        stop.get().run();
        return;
      }
    } catch (InvalidFieldException e) {
      out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    } catch (NotPermittedException e) {
      out.onError(Status.PERMISSION_DENIED.withDescription(e.getMessage()).asRuntimeException());
      return;
    } catch (LimitReachedException e) {
      out.onError(Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    if (heartbeatMillis == 0) {
      opened(call, stream, () -> stop.get().run());
      return;
    }
    PolicyUpdate heartbeat = PolicyUpdate.newBuilder().setHeartbeat(true)
        .setHeartbeatMillis(heartbeatMillis).build();
    // also ends by itself on the first beat after the stream did (closed for overflow); with a
    // fixed delay, beats that a stalled timer missed are not sent in a burst afterwards
    AtomicReference<ScheduledFuture<?>> beating = new AtomicReference<>();
    beating.set(heartbeats.scheduleWithFixedDelay(() -> {
      if (!stream.sendIfIdle(heartbeat)) {
        beating.get().cancel(false);
      }
    }, heartbeatMillis, heartbeatMillis, TimeUnit.MILLISECONDS));
    opened(call, stream, () -> {
      beating.get().cancel(false);
      stop.get().run();
    });
  }

  @Override
  public void reportOutcomes(FlowOutcomes request, StreamObserver<ReportAck> out) {
    GrpcCalls.unary(out, () -> {
      List<FlowOutcome> outcomes = new ArrayList<>(request.getOutcomesCount());
      request.getOutcomesList().forEach(o -> outcomes.add(ProtoMapping.outcome(o)));
      Ack ack = reports.reportOutcomes(
          GrpcCalls.caller(request.getAgentHost(), "agentHost"), request.getReporterId(),
          request.getBatchId(), outcomes);
      return ProtoMapping.ack(ack);
    });
  }

  @Override
  public void watchSwitchConfig(SwitchConfigRequest request, StreamObserver<SwitchConfig> out) {
    ServerCallStreamObserver<SwitchConfig> call = (ServerCallStreamObserver<SwitchConfig>) out;
    // Each message is the whole configuration, so a slow reader only needs the newest.
    BoundedStream<SwitchConfig> stream = new BoundedStream<>(call, 1, true, () -> {});
    // Counted per node credential; without one (development) there is no host to count by.
    String host = NodeAuthInterceptor.HOST.get();
    Runnable counted = () -> {};
    Runnable stop;
    try {
      if (host != null) {
        counted = lookups.switchStream(host);
      }
      stop = switches.watch(request.getSwitchName(),
          c -> stream.send(ProtoMapping.switchConfig(c)));
    } catch (InvalidFieldException e) {
      counted.run();
      out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    } catch (LimitReachedException e) {
      out.onError(Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    Runnable uncount = counted;
    opened(call, stream, () -> {
      stop.run();
      uncount.run();
    });
  }
}
