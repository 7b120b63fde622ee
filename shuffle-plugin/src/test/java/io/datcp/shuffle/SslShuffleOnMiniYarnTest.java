package io.datcp.shuffle;

import static io.datcp.shuffle.ShuffleChecks.assertEveryFetchRegisteredExactly;
import static io.datcp.shuffle.ShuffleChecks.partitionBytes;
import static io.datcp.shuffle.ShuffleChecks.runGeneratorJob;
import static io.datcp.shuffle.ShuffleChecks.shuffleBytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.ShuffleEvent;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import javax.net.ssl.SSLSocket;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRConfig;
import org.apache.hadoop.mapreduce.TaskCompletionEvent;
import org.apache.hadoop.security.ssl.KeyStoreTestUtil;
import org.apache.hadoop.security.ssl.SSLFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real MapReduce job with encrypted shuffle ({@code mapreduce.shuffle.ssl.enabled}) on a
 * MiniMRYarnCluster whose NodeManager runs DatcpShuffleHandler: Hadoop puts an SslHandler first
 * in each shuffle connection's pipeline, and the flow tracker must still see and register every
 * fetch response. Keystores and the ssl-server.xml / ssl-client.xml the SSLFactory loads are made
 * here with Hadoop's KeyStoreTestUtil, as Hadoop's own encrypted-shuffle tests do.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SslShuffleOnMiniYarnTest {
  private static final int MAPS = 3;
  private static final int REDUCES = 2;
  private static final int RECORDS = 100;
  private static final int VALUE_BYTES = 1000;
  private static final String PROBE = "GET /mapOutput?job=job_1700000000000_0001&reduce=0"
      + "&map=attempt_1700000000000_0001_m_000000_0 HTTP/1.1\r\n"
      + "name: mapreduce\r\nversion: 1.0.0\r\n\r\n";

  @TempDir
  static Path dir;
  private String keystores;
  private String sslConfDir;
  private final Configuration ssl = new Configuration(false);
  private FakeAgent agent;
  private DatcpMiniCluster cluster;

  @BeforeAll
  void start() throws Exception {
    keystores = Files.createDirectories(dir.resolve("keystores")).toString();
    // SSLFactory reads ssl-server.xml / ssl-client.xml as class path resources, in the
    // NodeManager (this JVM) and in the reduce tasks (child JVMs given this JVM's class path).
    sslConfDir = KeyStoreTestUtil.getClasspathDir(SslShuffleOnMiniYarnTest.class);
    KeyStoreTestUtil.setupSSLConfig(keystores, sslConfDir, ssl, false);
    ssl.setBoolean(MRConfig.SHUFFLE_SSL_ENABLED_KEY, true);
    agent = new FakeAgent(dir);
    // A registration wait long enough that the response's writes are held, then released
    // through the TLS pipeline.
    cluster = new DatcpMiniCluster("datcp-ssl-shuffle", agent.socket, 2000, ssl);
    await().atMost(Duration.ofSeconds(30)).until(() -> agent.subscribers() > 0);
  }

  @AfterAll
  void stop() throws Exception {
    try {
      if (cluster != null) {
        cluster.close();
      }
      if (agent != null) {
        agent.close();
      }
    } finally {
      if (sslConfDir != null) {
        KeyStoreTestUtil.cleanupSSLConfig(keystores, sslConfDir);
      }
    }
  }

  @Test
  void aJobShufflesOverTlsAndEveryFetchIsRegistered() throws Exception {
    Path out = dir.resolve("out");
    Job job = runGeneratorJob(cluster, MAPS, REDUCES, RECORDS, VALUE_BYTES, out);

    // The reducers fetched every map output from an https:// URL (Fetcher then uses TLS).
    List<URI> mapOutputServers = Arrays.stream(job.getTaskCompletionEvents(0, 100))
        .filter(e -> e.isMapTask() && e.getStatus() == TaskCompletionEvent.Status.SUCCEEDED)
        .map(e -> URI.create(e.getTaskTrackerHttp())).toList();
    assertThat(mapOutputServers).hasSize(MAPS)
        .allSatisfy(u -> assertThat(u.getScheme()).isEqualTo("https"));
    URI server = mapOutputServers.get(0);

    String jobId = job.getJobID().toString();
    await().atMost(Duration.ofSeconds(10)).until(() ->
        agent.events(ShuffleEvent.EventCase.MAP_OUTPUT_INDEXED).size() >= MAPS
            && !agent.flows.isEmpty() && agent.ends.size() == agent.flows.size());
    List<FakeAgent.Flow> flows = List.copyOf(agent.flows);
    assertEveryFetchRegisteredExactly(flows, agent.ends,
        partitionBytes(agent.events, jobId, MAPS, REDUCES), job);
    Set<Integer> ports = flows.stream().map(f -> f.registration().getSourcePort())
        .collect(Collectors.toSet());
    assertThat(ports).as("flows registered on the https shuffle port")
        .containsExactly(server.getPort());

    // That port speaks only TLS: plain HTTP gets no HTTP answer, TLS with the test trust store
    // gets Hadoop's own answer to an unauthenticated fetch.
    assertThat(Objects.toString(plainHttpStatus(server), ""))
        .as("plain HTTP to the TLS shuffle port").doesNotStartWith("HTTP/");
    assertThat(tlsHttpStatus(server)).startsWith("HTTP/1.1 401");
  }

  /** First line of the answer to a plain-text fetch, or null if there was none. */
  private static String plainHttpStatus(URI server) {
    try (Socket s = new Socket(server.getHost(), server.getPort())) {
      return exchange(s);
    } catch (IOException e) {
      return null; // reset by the server's TLS layer, or no answer at all
    }
  }

  private String tlsHttpStatus(URI server) throws Exception {
    SSLFactory client = new SSLFactory(SSLFactory.Mode.CLIENT, ssl);
    client.init();
    try (SSLSocket s = (SSLSocket) client.createSSLSocketFactory()
        .createSocket(server.getHost(), server.getPort())) {
      s.startHandshake();
      assertThat(s.getSession().getProtocol()).startsWith("TLS");
      return exchange(s);
    } finally {
      client.destroy();
    }
  }

  private static String exchange(Socket s) throws IOException {
    s.setSoTimeout(10_000);
    OutputStream out = s.getOutputStream();
    out.write(PROBE.getBytes(StandardCharsets.US_ASCII));
    out.flush();
    return new BufferedReader(new InputStreamReader(s.getInputStream(),
        StandardCharsets.US_ASCII)).readLine();
  }
}
