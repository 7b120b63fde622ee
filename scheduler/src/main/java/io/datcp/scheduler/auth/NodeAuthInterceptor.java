package io.datcp.scheduler.auth;

import com.linecorp.armeria.server.ServiceRequestContext;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.security.cert.Certificate;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * Resolves the node credential of a reporter's or agent's call to its host and makes it
 * available to the service as {@link #HOST}. Two credentials name a host, both resolved here:
 *
 * <ul>
 *   <li>a client certificate (mutual TLS, tls.clientCaFile): the handshake has already refused
 *       any certificate the configured CAs did not sign; the host is the certificate's one DNS
 *       subjectAltName (its CN is not read);
 *   <li>a token, "authorization: Bearer TOKEN", minted per host ({@link NodeCredentials}).
 * </ul>
 *
 * A call with both must name one host with both. A call with neither is refused unless
 * credentials are optional (development); a call with an unknown token always is.
 */
public final class NodeAuthInterceptor implements ServerInterceptor {
  /** The authenticated host of the current call; null when it came without a credential. */
  public static final Context.Key<String> HOST = Context.key("datcp-node-host");

  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  private static final String BEARER = "Bearer ";
  /** GeneralName tag of a dNSName in X509Certificate.getSubjectAlternativeNames(). */
  private static final int DNS_NAME = 2;

  private final NodeCredentials credentials;
  private final boolean required;

  public NodeAuthInterceptor(NodeCredentials credentials, boolean required) {
    this.credentials = credentials;
    this.required = required;
  }

  @Override
  public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers,
      ServerCallHandler<Q, A> next) {
    String certified;
    try {
      certified = certificateHost();
    } catch (IllegalArgumentException e) {
      return refuse(call, e.getMessage());
    }
    String value = headers.get(AUTHORIZATION);
    String host = certified;
    if (value != null) {
      String tokenHost = value.regionMatches(true, 0, BEARER, 0, BEARER.length())
          ? credentials.hostOf(value.substring(BEARER.length()).trim()) : null;
      if (tokenHost == null) {
        return refuse(call, "unknown node token");
      }
      if (certified != null && !certified.equals(tokenHost)) {
        return refuse(call, "the node token is " + tokenHost + "'s, the client certificate "
            + certified + "'s");
      }
      host = tokenHost;
    }
    if (host == null) {
      if (required) {
        return refuse(call, "calls need a node credential: a client certificate signed by the"
            + " scheduler's tls.clientCaFile, or 'authorization: Bearer <node token>' (mint one"
            + " with POST /api/v1/nodes/{host}/token)");
      }
      return next.startCall(call, headers);
    }
    return Contexts.interceptCall(Context.current().withValue(HOST, host), call, headers, next);
  }

  /**
   * The host the call's client certificate names; null without one (plaintext, no
   * tls.clientCaFile, or a client that sent none).
   *
   * @throws IllegalArgumentException when the certificate does not name exactly one host
   */
  private static String certificateHost() {
    ServiceRequestContext ctx = ServiceRequestContext.currentOrNull();
    SSLSession session = ctx == null ? null : ctx.sslSession();
    if (session == null) {
      return null;
    }
    Certificate[] chain;
    try {
      chain = session.getPeerCertificates();
    } catch (SSLPeerUnverifiedException e) {
      return null;
    }
    List<String> names = new ArrayList<>();
    try {
      Collection<List<?>> sans = ((X509Certificate) chain[0]).getSubjectAlternativeNames();
      for (List<?> san : sans == null ? List.<List<?>>of() : sans) {
        if (Integer.valueOf(DNS_NAME).equals(san.get(0))) {
          names.add((String) san.get(1));
        }
      }
    } catch (CertificateParsingException e) {
      throw new IllegalArgumentException("unreadable client certificate: " + e.getMessage());
    }
    if (names.size() != 1 || !names.get(0).matches(NodeCredentials.HOST_PATTERN)) {
      throw new IllegalArgumentException("a node's client certificate must carry exactly one"
          + " DNS subjectAltName, its host name; this one has " + names);
    }
    return names.get(0);
  }

  private static <Q, A> ServerCall.Listener<Q> refuse(ServerCall<Q, A> call, String why) {
    call.close(Status.UNAUTHENTICATED.withDescription(why), new Metadata());
    return new ServerCall.Listener<>() {};
  }
}
