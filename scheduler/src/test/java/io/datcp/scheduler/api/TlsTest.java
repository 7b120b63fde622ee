package io.datcp.scheduler.api;

import static io.datcp.scheduler.TestPki.keyOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.linecorp.armeria.client.ClientFactory;
import com.linecorp.armeria.client.grpc.GrpcClientBuilder;
import com.linecorp.armeria.client.grpc.GrpcClients;
import com.linecorp.armeria.common.auth.AuthToken;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.proto.v1.ShuffleReportServiceGrpc;
import io.datcp.scheduler.SchedulerServer;
import io.datcp.scheduler.TestPki;
import io.datcp.scheduler.TestServices;
import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.config.SchedulerConf;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.math.BigInteger;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 4: nothing in clear. Both ports speak TLS; a node's client certificate, signed
 * by the configured CA, is its credential (the host is its one DNS subjectAltName); tokens stay
 * an option over TLS. Written as the network and as a rogue node would act.
 */
class TlsTest {
  private static final String JOB = "job_1700000000000_0001";

  @TempDir Path dir;
  @RegisterExtension final TestServices.Servers servers = new TestServices.Servers();
  private final List<ClientFactory> factories = new ArrayList<>();
  private TestPki pki;
  private Path serverCert;

  @BeforeEach
  void pki() throws Exception {
    pki = new TestPki(dir.resolve("pki"));
    serverCert = pki.server("scheduler");
  }

  @AfterEach
  void closeClients() {
    factories.forEach(ClientFactory::close);
  }

  private Map<String, String> tlsConf() {
    return new HashMap<>(Map.of("tls.certFile", serverCert.toString(),
        "tls.keyFile", keyOf(serverCert).toString(), "tls.clientCaFile", pki.ca().toString()));
  }

  private SchedulerServer start(Map<String, String> conf) throws Exception {
    return servers.start(dir.resolve("data"), Clock.systemUTC(), SchedulerConf.fromMap(conf));
  }

  /** A stub over TLS trusting the test CA, presenting cert (null: none) and token (null). */
  private <T> T stub(SchedulerServer server, Path cert, String token, Class<T> type) {
    ClientFactory f = ClientFactory.builder().tlsCustomizer(b -> {
      b.trustManager(pki.ca().toFile());
      if (cert != null) {
        b.keyManager(cert.toFile(), keyOf(cert).toFile());
      }
    }).build();
    factories.add(f);
    GrpcClientBuilder b = GrpcClients.builder("https://127.0.0.1:" + server.grpcPort())
        .factory(f).responseTimeout(Duration.ofSeconds(10));
    if (token != null) {
      b.auth(AuthToken.ofOAuth2(token));
    }
    return b.build(type);
  }

  private static PolicyLookup lookup(String agentHost) {
    return PolicyLookup.newBuilder().setAgentHost(agentHost).setJobId(JOB).setReduceId(0)
        .setBytes(1_000_000).build();
  }

  private static ShuffleReport reduceStarted(String host) {
    return ShuffleReport.newBuilder().addEvents(ShuffleEvent.newBuilder()
        .setTimeUnixNanos(System.currentTimeMillis() * 1_000_000L)
        .setReduceStarted(ReduceStarted.newBuilder().setJobId(JOB).setReduceId(0).setHost(host)
            .setTotalMaps(1).setTotalReduces(1))).build();
  }

  private static void assertStatus(ThrowingCallable call, Status.Code code) {
    assertThatThrownBy(call).isInstanceOfSatisfying(StatusRuntimeException.class,
        e -> assertThat(e.getStatus().getCode()).isEqualTo(code));
  }

  @Test
  void aNodeCertificateSpeaksForItsOwnHostOnly() throws Exception {
    SchedulerServer server = start(tlsConf());
    Path node1 = pki.client("node1");
    var policies = stub(server, node1, null,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
    var reports = stub(server, node1, null,
        ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);

    assertThat(policies.lookupPolicy(lookup("")).getJobId()).isEqualTo(JOB);
    assertThat(policies.lookupPolicy(lookup("node1")).getJobId()).isEqualTo(JOB);
    assertStatus(() -> policies.lookupPolicy(lookup("node2")), Status.Code.PERMISSION_DENIED);
    assertThat(reports.report(reduceStarted("node2")).getRefusedList()).singleElement()
        .satisfies(r -> assertThat(r.getCode())
            .isEqualTo(Status.Code.PERMISSION_DENIED.value()));
    assertThat(server.service().job(JOB)).isEmpty();
    assertThat(reports.report(reduceStarted("node1")).getAccepted()).isEqualTo(1);
    assertThat(server.service().job(JOB)).isPresent();
  }

  @Test
  void aCertificateNoConfiguredCaSignedIsRefusedAtTheHandshake() throws Exception {
    SchedulerServer server = start(tlsConf());
    Path selfSigned = TestPki.selfSigned(dir, "node1");
    Path otherCas = new TestPki(dir.resolve("other-ca")).client("node1");

    // a client that presents its certificate whatever CAs the server names, as a rogue would
    assertThat(http2Preface(server.grpcPort(), pki.client("node1"))).as("CA-signed")
        .isGreaterThanOrEqualTo(0);
    for (Path rogue : List.of(selfSigned, otherCas)) {
      // the server's alert, or (when it closed before the client wrote) a broken connection:
      // with the CA-signed certificate the same client gets the server's first frame
      assertThatThrownBy(() -> http2Preface(server.grpcPort(), rogue)).as(rogue.toString())
          .isInstanceOfAny(SSLException.class, SocketException.class);
      // a well-behaved client leaves a certificate of another CA out and comes without a
      // credential
      var reports = stub(server, rogue, null,
          ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
      assertThatThrownBy(() -> reports.report(reduceStarted("node1")))
          .isInstanceOf(StatusRuntimeException.class);
    }
    assertThat(server.service().job(JOB)).isEmpty();
  }

  /**
   * Opens a TLS connection to port presenting cert (and its key) whatever the server asks,
   * sends the HTTP/2 preface and returns the first byte the server answers.
   */
  private int http2Preface(int port, Path cert) throws Exception {
    try (SSLSocket s = (SSLSocket) TestPki.presenting(cert, pki.ca()).getSocketFactory()
        .createSocket("127.0.0.1", port)) {
      s.setSoTimeout(10_000);
      SSLParameters alpn = s.getSSLParameters();
      alpn.setApplicationProtocols(new String[] {"h2"});
      s.setSSLParameters(alpn);
      s.startHandshake();
      s.getOutputStream().write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0"
          .getBytes(StandardCharsets.ISO_8859_1));
      s.getOutputStream().flush();
      return s.getInputStream().read();
    }
  }

  @Test
  void tokensRemainAnOptionOverTlsAndMustNameTheCertificatesHost() throws Exception {
    SchedulerServer server = start(tlsConf());
    String node2Token = server.nodes().mint("node2");
    Path node1 = pki.client("node1");

    var tokenOnly = stub(server, null, node2Token,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
    assertThat(tokenOnly.lookupPolicy(lookup("node2")).getJobId()).isEqualTo(JOB);
    assertStatus(() -> tokenOnly.lookupPolicy(lookup("node1")), Status.Code.PERMISSION_DENIED);

    var both = stub(server, node1, node2Token,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
    assertStatus(() -> both.lookupPolicy(lookup("node2")), Status.Code.UNAUTHENTICATED);
    var neither = stub(server, null, null,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
    assertStatus(() -> neither.lookupPolicy(lookup("")), Status.Code.UNAUTHENTICATED);
  }

  @Test
  void aCertificateThatNamesNoSingleHostIsNoCredential() throws Exception {
    SchedulerServer server = start(tlsConf());
    for (String sans : List.of("DNS:node1,DNS:node2", "IP:10.0.0.1")) {
      var node = stub(server, pki.clientNaming("multi" + sans.length(), sans), null,
          FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class);
      assertStatus(() -> node.lookupPolicy(lookup("node1")), Status.Code.UNAUTHENTICATED);
    }
  }

  @Test
  void clientAuthRequireRefusesClientsWithoutACertificateAtTheHandshake() throws Exception {
    Map<String, String> conf = tlsConf();
    conf.put("tls.clientAuth", "require");
    SchedulerServer server = start(conf);
    String token = server.nodes().mint("node2");
    assertStatus(() -> stub(server, null, token,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class).lookupPolicy(lookup("")),
        Status.Code.UNAVAILABLE);
    assertThat(stub(server, pki.client("node2"), null,
        FlowPolicyServiceGrpc.FlowPolicyServiceBlockingStub.class).lookupPolicy(lookup(""))
        .getJobId()).isEqualTo(JOB);
  }

  @Test
  void neitherPortAnswersInClear() throws Exception {
    SchedulerServer server = start(tlsConf());
    String token = server.nodes().mint("node1");
    var clear = TestServices.stub(server, token,
        ShuffleReportServiceGrpc.ShuffleReportServiceBlockingStub.class);
    assertThatThrownBy(() -> clear.report(reduceStarted("node1")))
        .isInstanceOf(StatusRuntimeException.class);
    assertThat(server.service().job(JOB)).isEmpty();

    HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    assertThatThrownBy(() -> plain.send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + server.httpPort() + "/healthz")).timeout(Duration.ofSeconds(5))
        .build(), HttpResponse.BodyHandlers.ofString())).isInstanceOf(java.io.IOException.class);

    HttpClient https = HttpClient.newBuilder().sslContext(trusting(pki.ca())).build();
    assertThat(https.send(HttpRequest.newBuilder(URI.create(
        "https://127.0.0.1:" + server.httpPort() + "/healthz")).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
  }

  @Test
  void aRenewedCertificateServesNewConnectionsAndABrokenOneIsNotTaken() throws Exception {
    SchedulerServer server = start(tlsConf());
    BigInteger first = servedSerial(server.httpPort());
    assertThat(first).isEqualTo(read(serverCert).getSerialNumber());

    pki.server("scheduler"); // renewed in place: new key, new serial
    BigInteger renewed = read(serverCert).getSerialNumber();
    assertThat(renewed).isNotEqualTo(first);
    Thread.sleep(1_100); // the files are looked at no more than once a second
    assertThat(servedSerial(server.httpPort())).isEqualTo(renewed);

    Files.writeString(keyOf(serverCert), "-----BEGIN PRIVATE KEY-----\nbroken\n");
    Thread.sleep(1_100);
    assertThat(servedSerial(server.httpPort())).isEqualTo(renewed);
  }

  @Test
  void plaintextOnlyWhenSetAndThenWithAWarning() throws Exception {
    assertThatThrownBy(() -> start(new HashMap<>())).isInstanceOf(ConfigException.class)
        .hasMessageContaining("'tls.certFile'").hasMessageContaining("tls.plaintext=true");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream saved = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      start(Map.of("tls.plaintext", "true"));
    } finally {
      System.setErr(saved);
    }
    assertThat(err.toString(StandardCharsets.UTF_8)).contains("WARN")
        .contains("tls.plaintext=true");
  }

  @Test
  void badTlsSettingsStopStartUpNamingTheKey() throws Exception {
    Path otherKey = keyOf(pki.client("node1"));
    Path empty = Files.writeString(dir.resolve("empty.pem"), "");
    Map<Map<String, String>, String> cases = Map.of(
        Map.of("tls.certFile", dir.resolve("missing.pem").toString()), "'tls.certFile'",
        Map.of("tls.keyFile", otherKey.toString()), "'tls.keyFile'",
        Map.of("tls.keyFile", serverCert.toString()), "'tls.keyFile'",
        Map.of("tls.clientCaFile", empty.toString()), "'tls.clientCaFile'",
        Map.of("tls.clientCaFile", "", "tls.clientAuth", "require"), "'tls.clientAuth'",
        Map.of("tls.plaintext", "true"), "'tls.plaintext'");
    cases.forEach((override, key) -> {
      Map<String, String> conf = tlsConf();
      conf.putAll(override);
      assertThatThrownBy(() -> start(conf)).as(override.toString())
          .isInstanceOf(ConfigException.class).hasMessageContaining(key);
    });
    assertThat(Files.exists(dir.resolve("data"))).as("nothing opened").isFalse();
  }

  /** The serial number of the certificate a new TLS connection to port is served. */
  private BigInteger servedSerial(int port) throws Exception {
    try (SSLSocket s = (SSLSocket) trusting(pki.ca()).getSocketFactory()
        .createSocket("127.0.0.1", port)) {
      s.startHandshake();
      return ((X509Certificate) s.getSession().getPeerCertificates()[0]).getSerialNumber();
    }
  }

  private static X509Certificate read(Path pem) throws Exception {
    try (InputStream in = new FileInputStream(pem.toFile())) {
      return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
  }

  private static SSLContext trusting(Path ca) throws Exception {
    KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
    ks.load(null, null);
    ks.setCertificateEntry("ca", read(ca));
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(
        TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(ks);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, tmf.getTrustManagers(), null);
    return ctx;
  }
}
