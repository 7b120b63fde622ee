package io.datcp.scheduler.auth;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

/**
 * Resolves the node credential of a reporter's or agent's call ("authorization: Bearer TOKEN")
 * to its host and makes it available to the service as {@link #HOST}. A call without one is
 * refused unless credentials are optional (development); a call with an unknown one always is.
 */
public final class NodeAuthInterceptor implements ServerInterceptor {
  /** The authenticated host of the current call; null when it came without a credential. */
  public static final Context.Key<String> HOST = Context.key("datcp-node-host");

  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  private static final String BEARER = "Bearer ";

  private final NodeCredentials credentials;
  private final boolean required;

  public NodeAuthInterceptor(NodeCredentials credentials, boolean required) {
    this.credentials = credentials;
    this.required = required;
  }

  @Override
  public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
      ServerCallHandler<Q, A> next) {
    String value = headers.get(AUTHORIZATION);
    if (value == null) {
      if (required) {
        return refuse(call, "calls need 'authorization: Bearer <node token>' (mint one with"
            + " POST /api/v1/nodes/{host}/token)");
      }
      return next.startCall(call, headers);
    }
    String host = value.regionMatches(true, 0, BEARER, 0, BEARER.length())
        ? credentials.hostOf(value.substring(BEARER.length()).trim()) : null;
    if (host == null) {
      return refuse(call, "unknown node token");
    }
    return Contexts.interceptCall(Context.current().withValue(HOST, host), call, headers, next);
  }

  private static <Q, A> ServerCall.Listener<Q> refuse(ServerCall<Q, A> call, String why) {
    call.close(Status.UNAUTHENTICATED.withDescription(why), new Metadata());
    return new ServerCall.Listener<>() {};
  }
}
