package io.datcp.agent.scheduler;

import io.datcp.agent.config.AgentConf;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.CertificateFactory;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The channels to the schedulers scheduler.target lists (one, or those of the HA mode, followed
 * to the leader by {@link LeaderChannel}): TLS, the scheduler's certificate checked against
 * scheduler.caFile (and its name against the target's host), and this node's certificate
 * presented when scheduler.certFile is set (mutual TLS: the scheduler knows the node by it).
 * Plaintext only with scheduler.plaintext=true, with a warning. Bad files stop start-up with a
 * message naming the key.
 *
 * <p>An agent that makes no call (a map node whose fetches were all registered before the
 * leader died) finds a scheduler that died without closing its connections (killed with its
 * container or host, frozen, a partition) by the heartbeats on its update stream, which it times
 * ({@link SchedulerClient}: 2-3 heartbeat intervals). HTTP/2 keepalive pings are the backstop
 * for a scheduler that sends no heartbeats (one built before them): a ping unanswered for {@link
 * #KEEPALIVE_TIMEOUT_SECONDS} closes the connection, its calls end UNAVAILABLE, which begins an
 * outage and moves the calls ({@link LeaderChannel}), 10-13 s after the scheduler went silent.
 */
final class SchedulerChannel {
  private static final Logger LOG = Logger.getLogger(SchedulerChannel.class.getName());
  /** Quiet time on a connection before a ping: grpc-java's least (smaller values are raised to
   *  it); the scheduler (Armeria) answers pings at any rate. */
  static final long KEEPALIVE_SECONDS = 10;
  /** A ping's answer waited for: well above a loaded scheduler's pauses. */
  static final long KEEPALIVE_TIMEOUT_SECONDS = 3;

  private SchedulerChannel() {}

  /**
   * Builds the channel (it connects lazily).
   *
   * @throws IllegalArgumentException naming the scheduler.* key whose value cannot be used
   */
  static LeaderChannel open(AgentConf conf) {
    List<String> targets = List.of(conf.get(AgentConf.SCHEDULER_TARGET).split(","));
    long hold = conf.get(AgentConf.SILENT_HOLD_MS);
    String ca = conf.get(AgentConf.SCHEDULER_CA_FILE);
    String cert = conf.get(AgentConf.SCHEDULER_CERT_FILE);
    String key = conf.get(AgentConf.SCHEDULER_KEY_FILE);
    if (conf.get(AgentConf.SCHEDULER_PLAINTEXT)) {
      if (!ca.isEmpty() || !cert.isEmpty() || !key.isEmpty()) {
        throw new IllegalArgumentException("configuration key 'scheduler.plaintext': true"
            + " conflicts with scheduler.caFile, scheduler.certFile and scheduler.keyFile");
      }
      LOG.warning("scheduler.plaintext=true: the scheduler at " + targets + " is reached"
          + " without TLS, the node token readable on the network (development on loopback"
          + " only)");
      return new LeaderChannel(targets,
          target -> keepAlive(NettyChannelBuilder.forTarget(target).usePlaintext()).build(),
          hold);
    }
    if (cert.isEmpty() != key.isEmpty()) {
      throw new IllegalArgumentException("configuration key '" + (cert.isEmpty()
          ? "scheduler.certFile" : "scheduler.keyFile") + "': scheduler.certFile and"
          + " scheduler.keyFile go together");
    }
    SslContextBuilder tls = GrpcSslContexts.forClient();
    if (!ca.isEmpty()) {
      checkCertificates("scheduler.caFile", ca);
      tls.trustManager(new File(ca));
    }
    if (!cert.isEmpty()) {
      checkCertificates("scheduler.certFile", cert);
      readable("scheduler.keyFile", key);
      try {
        tls.keyManager(new File(cert), new File(key));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("configuration key 'scheduler.keyFile': " + key
            + " is not a PEM private key (PKCS#8) of scheduler.certFile: " + e.getMessage());
      }
    }
    SslContext context;
    try {
      context = tls.build();
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException("configuration keys 'scheduler.caFile',"
          + " 'scheduler.certFile', 'scheduler.keyFile': no TLS context from them: " + e);
    }
    return new LeaderChannel(targets,
        target -> keepAlive(NettyChannelBuilder.forTarget(target).sslContext(context)).build(),
        hold);
  }

  private static NettyChannelBuilder keepAlive(NettyChannelBuilder b) {
    return b.keepAliveTime(KEEPALIVE_SECONDS, TimeUnit.SECONDS)
        .keepAliveTimeout(KEEPALIVE_TIMEOUT_SECONDS, TimeUnit.SECONDS);
  }

  private static void readable(String key, String file) {
    Path p = Path.of(file);
    if (!Files.isRegularFile(p) || !Files.isReadable(p)) {
      throw new IllegalArgumentException("configuration key '" + key + "': " + file
          + " is not a readable file");
    }
  }

  private static void checkCertificates(String key, String file) {
    readable(key, file);
    try (InputStream in = Files.newInputStream(Path.of(file))) {
      if (CertificateFactory.getInstance("X.509").generateCertificates(in).isEmpty()) {
        throw new IllegalArgumentException("configuration key '" + key + "': no PEM"
            + " certificate in " + file);
      }
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalArgumentException("configuration key '" + key + "': cannot read PEM"
          + " certificates from " + file + ": " + e.getMessage());
    }
  }
}
