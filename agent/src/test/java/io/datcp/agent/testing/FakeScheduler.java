package io.datcp.agent.testing;

import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.PolicyUpdate;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.proto.v1.SwitchConfig;
import io.datcp.proto.v1.SwitchConfigRequest;
import io.datcp.proto.v1.WatchRequest;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * A scheduler stand-in on a loopback port: answers lookups with a policy the test chooses,
 * records outcomes, reports and credentials, and lets the test push policy updates and switch
 * configurations. It can be stopped and started again on the same port (an outage).
 */
public final class FakeScheduler implements AutoCloseable {
  public final List<PolicyLookup> lookups = new CopyOnWriteArrayList<>();
  public final List<FlowOutcomes> outcomes = new CopyOnWriteArrayList<>();
  public final List<ShuffleReport> reports = new CopyOnWriteArrayList<>();
  public final List<String> authorizations = new CopyOnWriteArrayList<>();
  public final List<WatchRequest> watches = new CopyOnWriteArrayList<>();
  private final List<ServerCallStreamObserver<PolicyUpdate>> watchers =
      new CopyOnWriteArrayList<>();
  private final List<ServerCallStreamObserver<SwitchConfig>> switchWatchers =
      new CopyOnWriteArrayList<>();
  /** Answer to a lookup; null = answer with the default (no deadline). */
  public volatile Function<PolicyLookup, FlowPolicy> answer = l -> FlowPolicy.newBuilder()
      .setJobId(l.getJobId()).setReduceId(l.getReduceId()).setFlow(l.getFlow()).build();
  /** Answer to a shuffle report (after it is recorded); throw a StatusRuntimeException to
   *  refuse the batch whole. */
  public volatile Function<ShuffleReport, ReportAck> reportAnswer =
      r -> ReportAck.newBuilder().setAccepted(r.getEventsCount()).build();
  /** Snapshot sent on every resync watch. */
  public volatile List<PolicyUpdate> snapshot = List.of();
  public volatile SwitchConfig switchConfig;
  /** When set, calls without "Bearer " + this are refused with UNAUTHENTICATED, as the
   *  scheduler's node authentication does. */
  public volatile String requiredToken;
  /**
   * Above 0: a heartbeat every this many milliseconds on every update stream, the interval
   * announced on the snapshot's end, as the scheduler's watch.heartbeatMillis. Set before start.
   */
  public volatile int heartbeatMillis;
  /**
   * When set, every call is refused as a follower of the HA mode does, naming this leader (none
   * when empty: a follower that knows no leader yet).
   */
  public volatile String followerOf;
  /** Calls refused for their credential. */
  public final List<String> refused = new CopyOnWriteArrayList<>();
  /** With {@link #tls}: the DNS subjectAltNames of each call's client certificate. */
  public final List<String> clientCertificateNames = new CopyOnWriteArrayList<>();
  private SslContext tls;
  private int port;
  private Server server;
  private ScheduledExecutorService heartbeats;

  /**
   * Serves TLS with cert and key; with clientCa, client certificates are required and checked
   * against it (mutual TLS, as the scheduler with tls.clientCaFile and tls.clientAuth=require).
   */
  public FakeScheduler tls(Path cert, Path key, Path clientCa) throws IOException {
    SslContextBuilder b = GrpcSslContexts.forServer(cert.toFile(), key.toFile());
    if (clientCa != null) {
      b.trustManager(clientCa.toFile()).clientAuth(ClientAuth.REQUIRE);
    }
    tls = b.build();
    return this;
  }

  public FakeScheduler start() throws IOException {
    ServerInterceptor recordAuth = new ServerInterceptor() {
      @Override
      public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata h,
          ServerCallHandler<Q, A> next) {
        String auth = h.get(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER));
        authorizations.add(auth == null ? "" : auth);
        SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
        if (session != null) {
          try {
            X509Certificate peer = (X509Certificate) session.getPeerCertificates()[0];
            for (List<?> san : peer.getSubjectAlternativeNames()) {
              clientCertificateNames.add(String.valueOf(san.get(1)));
            }
          } catch (SSLPeerUnverifiedException | CertificateParsingException e) {
            clientCertificateNames.add("");
          }
        }
        String leader = followerOf;
        if (leader != null) {
          // As a follower scheduler's LeaderGate: refused unread, the leader named.
          Metadata trailers = new Metadata();
          trailers.put(Metadata.Key.of("datcp-role", Metadata.ASCII_STRING_MARSHALLER),
              "follower");
          if (!leader.isEmpty()) {
            trailers.put(Metadata.Key.of("datcp-leader", Metadata.ASCII_STRING_MARSHALLER),
                leader);
          }
          call.close(Status.UNAVAILABLE.withDescription("this scheduler is a follower; the"
              + " leader is " + (leader.isEmpty() ? "not known yet" : leader)), trailers);
          return new ServerCall.Listener<>() {};
        }
        String required = requiredToken;
        if (required != null && !("Bearer " + required).equals(auth)) {
          refused.add(call.getMethodDescriptor().getBareMethodName());
          call.close(Status.UNAUTHENTICATED.withDescription("unknown node token"), new Metadata());
          return new ServerCall.Listener<>() {};
        }
        return next.startCall(call, h);
      }
    };
    NettyServerBuilder b = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
        .addService(ServerInterceptors.intercept(new Policies(), recordAuth))
        .addService(ServerInterceptors.intercept(new Reports(), recordAuth))
        // as the scheduler (Armeria), which answers the agents' keepalive pings at any rate
        .permitKeepAliveTime(1, TimeUnit.SECONDS);
    if (tls != null) {
      b.sslContext(tls);
    }
    server = b.build().start();
    port = server.getPort();
    if (heartbeatMillis > 0 && heartbeats == null) {
      heartbeats = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "fake-scheduler-heartbeats");
        t.setDaemon(true);
        return t;
      });
      heartbeats.scheduleAtFixedRate(() -> push(PolicyUpdate.newBuilder().setHeartbeat(true)
          .setHeartbeatMillis(heartbeatMillis).build()), heartbeatMillis, heartbeatMillis,
          TimeUnit.MILLISECONDS);
    }
    return this;
  }

  /**
   * Answers lookups only after {@code millis}, as a scheduler killed with its container (no
   * reset: its connections stay up, its calls run into their deadline).
   */
  public void answerAfter(long millis) {
    answer = l -> {
      try {
        Thread.sleep(millis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return FlowPolicy.getDefaultInstance();
    };
  }

  public String target() {
    return "127.0.0.1:" + port;
  }

  /** Sends an update to every watching agent. */
  public void push(PolicyUpdate u) {
    for (ServerCallStreamObserver<PolicyUpdate> w : watchers) {
      synchronized (w) {
        if (!w.isCancelled()) {
          w.onNext(u);
        }
      }
    }
  }

  /** Ends every policy update stream with {@code status} and {@code trailers}. */
  public void closeWatchers(Status status, Metadata trailers) {
    for (ServerCallStreamObserver<PolicyUpdate> w : watchers) {
      synchronized (w) {
        if (!w.isCancelled()) {
          w.onError(status.asRuntimeException(trailers));
        }
      }
    }
    watchers.clear();
  }

  public int watchers() {
    return (int) watchers.stream().filter(w -> !w.isCancelled()).count();
  }

  /** Sends a switch configuration to every switch-role agent. */
  public void pushSwitch(SwitchConfig c) {
    switchConfig = c;
    for (ServerCallStreamObserver<SwitchConfig> w : switchWatchers) {
      synchronized (w) {
        if (!w.isCancelled()) {
          w.onNext(c);
        }
      }
    }
  }

  /** Stops serving (the port stays reserved for {@link #start()} again). */
  public void stop() throws InterruptedException {
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    watchers.clear();
    switchWatchers.clear();
  }

  @Override
  public void close() throws InterruptedException {
    stop();
    if (heartbeats != null) {
      heartbeats.shutdownNow();
    }
  }

  private final class Policies extends FlowPolicyServiceGrpc.FlowPolicyServiceImplBase {
    @Override
    public void lookupPolicy(PolicyLookup req, StreamObserver<FlowPolicy> out) {
      lookups.add(req);
      out.onNext(answer.apply(req));
      out.onCompleted();
    }

    @Override
    public void watchPolicies(WatchRequest req, StreamObserver<PolicyUpdate> out) {
      watches.add(req);
      ServerCallStreamObserver<PolicyUpdate> o = (ServerCallStreamObserver<PolicyUpdate>) out;
      synchronized (o) {
        for (PolicyUpdate u : snapshot) {
          o.onNext(u);
        }
        o.onNext(PolicyUpdate.newBuilder().setSnapshotEnd(true)
            .setHeartbeatMillis(Math.max(0, heartbeatMillis)).build());
      }
      watchers.add(o);
    }

    @Override
    public void reportOutcomes(FlowOutcomes req, StreamObserver<ReportAck> out) {
      boolean dup = outcomes.stream().anyMatch(o -> o.getReporterId().equals(req.getReporterId())
          && o.getBatchId() == req.getBatchId());
      if (!dup) {
        outcomes.add(req);
      }
      out.onNext(ReportAck.newBuilder().setAccepted(dup ? 0 : req.getOutcomesCount())
          .setDuplicate(dup).build());
      out.onCompleted();
    }

    @Override
    public void watchSwitchConfig(SwitchConfigRequest req, StreamObserver<SwitchConfig> out) {
      ServerCallStreamObserver<SwitchConfig> o = (ServerCallStreamObserver<SwitchConfig>) out;
      if (switchConfig != null) {
        o.onNext(switchConfig);
      }
      switchWatchers.add(o);
    }
  }

  private final class Reports extends ShuffleReportServiceGrpc.ShuffleReportServiceImplBase {
    @Override
    public void report(ShuffleReport req, StreamObserver<ReportAck> out) {
      reports.add(req);
      ReportAck ack;
      try {
        ack = reportAnswer.apply(req);
      } catch (StatusRuntimeException e) {
        out.onError(e);
        return;
      }
      out.onNext(ack);
      out.onCompleted();
    }
  }
}
