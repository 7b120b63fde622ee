package io.datcp.scheduler.api.grpc;

import io.datcp.scheduler.ha.Leadership;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Optional;

/**
 * Node calls (reports, lookups, update streams) are served by the leader only: it alone holds the
 * job model and plans. A follower refuses them before reading anything with UNAVAILABLE, naming
 * the leader's gRPC address in the trailer {@code datcp-leader} and in the description, so a
 * client with several scheduler addresses goes to the leader at once.
 */
public final class LeaderGate implements ServerInterceptor {
  /** host:port of the leader's gRPC port, on a follower's refusal. */
  public static final Metadata.Key<String> LEADER_TRAILER =
      Metadata.Key.of("datcp-leader", Metadata.ASCII_STRING_MARSHALLER);
  /**
   * "follower", on every refusal: tells a client that this UNAVAILABLE is a live scheduler's
   * answer, not a transport failure (the agents hold a scheduler that failed for the transport).
   */
  public static final Metadata.Key<String> ROLE_TRAILER =
      Metadata.Key.of("datcp-role", Metadata.ASCII_STRING_MARSHALLER);

  private final Leadership leadership;

  public LeaderGate(Leadership leadership) {
    this.leadership = leadership;
  }

  @Override
  public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
      ServerCallHandler<Q, A> next) {
    if (leadership.isLeader()) {
      return next.startCall(call, headers);
    }
    StatusRuntimeException refusal = refusal();
    call.close(refusal.getStatus(), refusal.getTrailers());
    return new ServerCall.Listener<>() {};
  }

  /** UNAVAILABLE naming the leader, if one is known; also what ends streams on demotion. */
  public StatusRuntimeException refusal() {
    Metadata trailers = new Metadata();
    trailers.put(ROLE_TRAILER, "follower");
    Optional<String> leader = leadership.leader();
    leader.ifPresent(address -> trailers.put(LEADER_TRAILER, address));
    return Status.UNAVAILABLE.withDescription(leader
        .map(address -> "this scheduler is a follower; the leader is " + address
            + " (trailer datcp-leader)")
        .orElse("this scheduler is a follower and knows no leader yet; retry"))
        .asRuntimeException(trailers);
  }
}
