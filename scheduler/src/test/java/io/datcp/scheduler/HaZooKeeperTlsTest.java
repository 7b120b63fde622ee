package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.config.SchedulerConf;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.zookeeper.server.embedded.ExitHandler;
import org.apache.zookeeper.server.embedded.ZooKeeperServerEmbedded;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 4 for the HA mode's ZooKeeper connection: a ZooKeeper that listens on a secure
 * client port only (TLS, client certificates required, as the Docker HA cluster runs it). A
 * scheduler with ha.zookeeper.tls.* and a certificate of ZooKeeper's CA leads; one whose
 * certificate another CA signed, one that does not trust ZooKeeper's, one that dials a name
 * ZooKeeper's certificate does not bear, and one that speaks plaintext, are refused.
 */
class HaZooKeeperTlsTest {
  private static final String TOKEN = "ha-tls-test-admin-token-0123456789";
  private static final String PATH = "/test/scheduler";
  /** The least ha.zookeeper.sessionTimeoutMillis: a refused scheduler gives up after it. */
  private static final String SESSION_MILLIS = "2000";

  @TempDir Path dir;
  private TestPki pki;
  private String connect;
  /** Closed newest first: the schedulers, then ZooKeeper. */
  private final Deque<AutoCloseable> open = new ArrayDeque<>();

  @BeforeEach
  void startSecureZooKeeper() throws Exception {
    pki = new TestPki(dir.resolve("zk-pki"));
    Path server = keyStore(pki.server("zookeeper"));
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    Properties p = new Properties();
    p.put("tickTime", "1000");
    p.put("secureClientPort", Integer.toString(port));
    p.put("serverCnxnFactory", "org.apache.zookeeper.server.NettyServerCnxnFactory");
    p.put("admin.enableServer", "false");
    // ZooKeeper turns these into zookeeper.ssl.* system properties: removed again after
    p.put("ssl.keyStore.location", server.toString());
    p.put("ssl.keyStore.type", "PEM");
    p.put("ssl.trustStore.location", pki.ca().toString());
    p.put("ssl.trustStore.type", "PEM");
    p.put("ssl.clientAuth", "need");
    ZooKeeperServerEmbedded zk = ZooKeeperServerEmbedded.builder()
        .baseDir(Files.createDirectories(dir.resolve("zk"))).configuration(p)
        .exitHandler(ExitHandler.LOG_ONLY).build();
    open.push(zk);
    zk.start();
    connect = "localhost:" + port;
  }

  @AfterEach
  void stopAll() throws Exception {
    Exception failed = null;
    while (!open.isEmpty()) {
      try {
        open.pop().close();
      } catch (Exception e) {
        failed = failed == null ? e : failed;
      }
    }
    System.getProperties().stringPropertyNames().stream()
        .filter(n -> n.startsWith("zookeeper.ssl.")).forEach(System::clearProperty);
    if (failed != null) {
      throw failed;
    }
  }

  /** A PEM key store as ZooKeeper reads it: {@code cert}'s private key, then the certificate. */
  private static Path keyStore(Path cert) throws IOException {
    Path ks = cert.resolveSibling(cert.getFileName() + ".keystore");
    Files.writeString(ks, Files.readString(TestPki.keyOf(cert)) + Files.readString(cert));
    return ks;
  }

  private SchedulerServer start(String name, Map<String, String> tls) throws Exception {
    Map<String, String> conf = new HashMap<>(tls);
    conf.put("tls.plaintext", "true");
    conf.put("auth.nodes.required", "false");
    conf.put("auth.token", TOKEN);
    conf.put("ha.zookeeper.connect", connect);
    conf.put("ha.zookeeper.path", PATH);
    conf.put("ha.zookeeper.sessionTimeoutMillis", SESSION_MILLIS);
    conf.put("ha.zookeeper.auth", "digest:datcp:s3cret-tls");
    conf.put("ha.advertisedHost", "127.0.0.1");
    SchedulerServer s = SchedulerServer.builder().dataDir(dir.resolve(name)).grpcPort(0)
        .httpPort(0).conf(SchedulerConf.fromMap(conf)).build().start();
    open.push(s);
    return s;
  }

  private static Map<String, String> tls(Path keyStore, Path trustStore) {
    return Map.of("ha.zookeeper.tls.keyStoreFile", keyStore.toString(),
        "ha.zookeeper.tls.trustStoreFile", trustStore.toString());
  }

  @Test
  void schedulersWithZooKeepersCertificatesElectOneOverTls() throws Exception {
    Path keys = keyStore(pki.client("datcp-scheduler"));
    SchedulerServer a = start("a", tls(keys, pki.ca()));
    SchedulerServer b = start("b", tls(keys, pki.ca()));
    await().atMost(Duration.ofSeconds(60)).until(() ->
        a.leadership().isLeader() != b.leadership().isLeader()
            && a.leadership().leader().isPresent()
            && a.leadership().leader().equals(b.leadership().leader()));
  }

  @Test
  void aSchedulerWhoseCertificateZooKeeperDoesNotTrustIsRefused() throws Exception {
    TestPki rogue = new TestPki(dir.resolve("rogue-pki"));
    Path untrusted = keyStore(rogue.client("datcp-scheduler"));
    assertThatThrownBy(() -> start("rogue", tls(untrusted, pki.ca())))
        .isInstanceOf(ConfigException.class).hasMessageContaining("ha.zookeeper.connect")
        .hasMessageContaining("over TLS");
    // nor a scheduler that trusts another CA than the one of ZooKeeper's certificate
    Path trusted = keyStore(pki.client("datcp-scheduler"));
    assertThatThrownBy(() -> start("distrustful", tls(trusted, rogue.ca())))
        .isInstanceOf(ConfigException.class).hasMessageContaining("ha.zookeeper.connect");
  }

  @Test
  void aZooKeeperWhoseCertificateDoesNotNameTheHostDialledIsRefused() throws Exception {
    Path keys = keyStore(pki.client("datcp-scheduler"));
    // the same server on another loopback address, which its certificate does not name
    connect = connect.replace("localhost:", "127.0.0.2:");
    assertThatThrownBy(() -> start("elsewhere", tls(keys, pki.ca())))
        .isInstanceOf(ConfigException.class).hasMessageContaining("ha.zookeeper.connect");
  }

  @Test
  void withoutTlsKeysPlaintextIsRefusedByTheSecurePortAfterAWarning() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream saved = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      assertThatThrownBy(() -> start("plain", Map.of()))
          .isInstanceOf(ConfigException.class).hasMessageContaining("ha.zookeeper.connect");
    } finally {
      System.setErr(saved);
    }
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("ha.zookeeper.tls.* not set: plaintext to ZooKeeper");
  }

  @Test
  void badTlsSettingsStopStartUpNamingTheKey() throws Exception {
    Path keys = keyStore(pki.client("datcp-scheduler"));
    assertThatThrownBy(() -> start("half", Map.of("ha.zookeeper.tls.keyStoreFile",
        keys.toString()))).isInstanceOf(ConfigException.class)
        .hasMessageContaining("'ha.zookeeper.tls.trustStoreFile'");
    // a certificate without its key: what a key store made of tls.certFile alone would be
    Path certOnly = pki.client("no-key");
    assertThatThrownBy(() -> start("cert-only", tls(certOnly, pki.ca())))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("'ha.zookeeper.tls.keyStoreFile'");
    assertThatThrownBy(() -> start("no-ca", tls(keys, TestPki.keyOf(certOnly))))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("'ha.zookeeper.tls.trustStoreFile'");
    assertThatThrownBy(() -> start("missing", tls(dir.resolve("missing.pem"), pki.ca())))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("'ha.zookeeper.tls.keyStoreFile'");
    assertThatThrownBy(() -> SchedulerServer.builder().dataDir(dir.resolve("sole")).grpcPort(0)
        .httpPort(0).conf(SchedulerConf.fromMap(Map.of("tls.plaintext", "true",
            "ha.zookeeper.tls.keyStoreFile", keys.toString(),
            "ha.zookeeper.tls.trustStoreFile", pki.ca().toString()))).build())
        .isInstanceOf(ConfigException.class).hasMessageContaining("'ha.zookeeper.connect'");
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("ha.zookeeper.tls.trustStoreFile",
        "ca.pem"))).isInstanceOf(ConfigException.class)
        .hasMessageContaining("'ha.zookeeper.tls.trustStoreFile'")
        .hasMessageContaining("absolute path");
  }
}
