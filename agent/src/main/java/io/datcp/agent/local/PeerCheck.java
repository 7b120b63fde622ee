package io.datcp.agent.local;

import io.datcp.agent.flows.Owner;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Every call on the gRPC socket: refused with PERMISSION_DENIED unless the connecting process
 * may use the socket ({@link PeerRule}); else the process is the call's {@link #CALLER}, the
 * owner of what it registers.
 */
final class PeerCheck implements ServerInterceptor {
  private static final Logger LOG = Logger.getLogger(PeerCheck.class.getName());
  /** The calling process, in every allowed call's context. */
  static final Context.Key<Owner> CALLER = Context.key("io.datcp.agent.local.caller");

  private final PeerRule rule;
  private final Counter refused;
  private final AtomicBoolean logged = new AtomicBoolean();

  PeerCheck(PeerRule rule, Counter refused) {
    this.rule = rule;
    this.refused = refused;
  }

  @Override
  public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
      ServerCallHandler<Q, A> next) {
    Owner peer = call.getAttributes().get(PeerCredentialsNegotiator.PEER);
    String refusal = peer == null ? "the calling process's credentials (SO_PEERCRED) could not"
        + " be read" : rule.refusal(peer);
    if (refusal != null) {
      refused.increment();
      if (logged.compareAndSet(false, true)) {
        LOG.log(Level.WARNING, "refused a call on the agent socket: {0} (further refusals are"
            + " only counted: datcp_agent_local_refused_total)", refusal);
      }
      call.close(Status.PERMISSION_DENIED.withDescription(refusal), new Metadata());
      return new ServerCall.Listener<>() {};
    }
    return Contexts.interceptCall(Context.current().withValue(CALLER, peer), call, headers,
        next);
  }
}
