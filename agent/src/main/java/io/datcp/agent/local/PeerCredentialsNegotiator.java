package io.datcp.agent.local;

import io.datcp.agent.flows.Owner;
import io.grpc.Attributes;
import io.grpc.ChannelLogger;
import io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.InternalProtocolNegotiationEvent;
import io.grpc.netty.InternalProtocolNegotiator;
import io.grpc.netty.InternalProtocolNegotiators;
import io.grpc.netty.ProtocolNegotiationEvent;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.unix.PeerCredentials;
import io.netty.util.AsciiString;
import java.io.IOException;

/**
 * gRPC-Netty's plaintext server negotiation with one step added: the connection's SO_PEERCRED
 * (uid and pid of the process that connected, fixed by the kernel at connect) goes into the
 * transport's attributes as {@link #PEER}, which {@link PeerCheck} reads on every call.
 *
 * <p>Why this way: grpc-java offers no public hook that sees a server connection's channel
 * (a ServerTransportFilter or interceptor gets only its addresses, and a Unix socket's remote
 * address names nobody), and the epoll server channel class is final. The Internal*
 * negotiation classes are grpc-netty's own extension point for this (its xds and alts
 * transports use them); if an upgrade changes them this fails to compile, or PeerCheckTest
 * fails, instead of the check silently going away.
 */
final class PeerCredentialsNegotiator implements InternalProtocolNegotiator.ProtocolNegotiator {
  /** The connecting process; absent only if the credentials could not be read. */
  static final Attributes.Key<Owner> PEER = Attributes.Key.create("io.datcp.agent.local.peer");

  private final InternalProtocolNegotiator.ProtocolNegotiator plaintext =
      InternalProtocolNegotiators.serverPlaintext();

  @Override
  public AsciiString scheme() {
    return plaintext.scheme();
  }

  @Override
  public ChannelHandler newHandler(GrpcHttp2ConnectionHandler grpc) {
    ChannelLogger log = grpc.getNegotiationLogger();
    return InternalProtocolNegotiators.waitUntilActiveHandler(
        new CredentialsHandler(InternalProtocolNegotiators.grpcNegotiationHandler(grpc), log),
        log);
  }

  @Override
  public void close() {
    plaintext.close();
  }

  /** Adds the peer's credentials to the negotiation's attributes, then hands on to gRPC. */
  private static final class CredentialsHandler
      extends InternalProtocolNegotiators.ProtocolNegotiationHandler {
    CredentialsHandler(ChannelHandler next, ChannelLogger log) {
      super(next, log);
    }

    @Override
    protected void protocolNegotiationEventTriggered(ChannelHandlerContext ctx) {
      ProtocolNegotiationEvent event = getProtocolNegotiationEvent();
      Attributes.Builder attrs = InternalProtocolNegotiationEvent.getAttributes(event)
          .toBuilder();
      try {
        PeerCredentials c = ((EpollDomainSocketChannel) ctx.channel()).peerCredentials();
        attrs.set(PEER, new Owner(c.uid(), c.pid()));
      } catch (IOException e) {
        // no credentials, no PEER: PeerCheck refuses every call of this connection
      }
      replaceProtocolNegotiationEvent(InternalProtocolNegotiationEvent.withAttributes(event,
          attrs.build()));
      fireProtocolNegotiationEvent(ctx);
    }
  }
}
