package io.datcp.it.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.it.cluster.DatcpCluster.Mode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer.OrderAnnotation;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.utility.MountableFile;

/**
 * Issue 18 item 4 on the Docker cluster (ToR, ResourceManager, scheduler, one NodeManager with
 * its agent): the scheduler made a throwaway CA at start and requires mutual TLS on gRPC. Acts
 * as a rogue node (certificates the CA did not sign, or none) and as the network (tcpdump on
 * the ToR's port toward the scheduler while the agent and a client with the admin token talk to
 * it). A few minutes, most of it the cluster's start.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(OrderAnnotation.class)
class DockerTlsIT {
  private static final String NODE = DatcpCluster.REDUCER;
  /** What the scheduler made for NODE (docker/scheduler/scheduler-entrypoint.sh). */
  private static final String NODE_TLS = "/data/node-tls/" + NODE + "/";
  private static final String LOOKUP = "https://scheduler:9090/datcp.v1.FlowPolicyService/LookupPolicy";
  /** curl's exit codes for a TLS failure: handshake, receive (the server's alert), send. */
  private static final List<Integer> TLS_REFUSED = List.of(35, 55, 56);

  private Path data;
  private DatcpCluster cluster;

  @BeforeAll
  void start() throws IOException {
    data = Files.createTempDirectory("datcp-tls-it-");
    cluster = new DatcpCluster(Mode.ON, 0, data);
    cluster.start();
  }

  @AfterAll
  void stop() throws IOException {
    DatcpCluster.stopAndDelete(cluster, data);
  }

  /** An empty gRPC call from NODE with curl: its exit code, and the HTTP status (stdout). */
  private ExecResult grpcCall(String... tlsArgs) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("curl", "-sS", "--http2", "-o", "/dev/null",
        "-w", "%{http_code}", "--max-time", "20", "--cacert", NODE_TLS + "ca.pem",
        "-H", "content-type: application/grpc", "-H", "te: trailers",
        "--data-binary", "@/tmp/empty-grpc-message"));
    cmd.addAll(List.of(tlsArgs));
    cmd.add(LOOKUP);
    return cluster.node(NODE).execInContainer(cmd.toArray(String[]::new));
  }

  @Test
  @Order(1)
  void aNodeWithoutACertificateTheCaSignedIsRefusedAtTheHandshake() throws Exception {
    // a gRPC message: not compressed, length 0 (an empty PolicyLookup)
    cluster.exec(NODE, "sh", "-c", "printf '\\0\\0\\0\\0\\0' >/tmp/empty-grpc-message");
    Path rogue = data.resolve("rogue");
    Path repo = Path.of(System.getProperty("datcp.repo.root", "..")).toRealPath();
    run(repo.resolve("scripts/tls-pki.sh").toString(), rogue.toString(), "ca");
    run(repo.resolve("scripts/tls-pki.sh").toString(), rogue.toString(), "client", NODE);
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-days", "1", "-subj", "/CN=" + NODE, "-addext", "subjectAltName=DNS:" + NODE,
        "-keyout", rogue.resolve("self.key").toString(),
        "-out", rogue.resolve("self.pem").toString());
    for (String f : List.of(NODE + ".pem", NODE + ".key", "self.pem", "self.key")) {
      cluster.node(NODE).copyFileToContainer(MountableFile.forHostPath(rogue.resolve(f)),
          "/tmp/rogue-" + f);
    }
    String token = Files.readString(data.resolve("node-tokens").resolve(NODE)).trim();

    // the node's own certificate from the scheduler's CA: the call reaches the service
    ExecResult own = grpcCall("--cert", NODE_TLS + "cert.pem", "--key", NODE_TLS + "key.pem");
    assertThat(own.getExitCode()).as(own.getStderr()).isZero();
    assertThat(own.getStdout()).isEqualTo("200");

    // another CA's certificate for the same host name, a self-signed one, none at all: even
    // with the node's valid token the connection ends in the handshake
    for (List<String> args : List.of(
        List.of("--cert", "/tmp/rogue-" + NODE + ".pem", "--key", "/tmp/rogue-" + NODE + ".key"),
        List.of("--cert", "/tmp/rogue-self.pem", "--key", "/tmp/rogue-self.key"),
        List.<String>of())) {
      List<String> withToken = new ArrayList<>(args);
      withToken.addAll(List.of("-H", "authorization: Bearer " + token));
      ExecResult r = grpcCall(withToken.toArray(String[]::new));
      assertThat(r.getExitCode()).as(args + ": " + r.getStderr()).isIn(TLS_REFUSED);
      assertThat(r.getStdout()).as(args.toString()).isEqualTo("000");
    }
  }

  @Test
  @Order(2)
  void noTokenCrossesTheTorInClear() throws Exception {
    String nodeToken = Files.readString(data.resolve("node-tokens").resolve(NODE)).trim();
    String adminToken = cluster.exec("scheduler", "cat", "/var/lib/datcp-scheduler/token")
        .getStdout().trim();
    // the ToR's port toward the scheduler: every byte between the scheduler and a node
    String port = cluster.exec("tor", "sh", "-c",
        "ip -o -4 addr show | awk '/ " + FABRIC_TOR_TO_SCHEDULER + "\\// {print $2}'")
        .getStdout().trim();
    assertThat(port).as("ToR port toward the scheduler").isNotEmpty();
    // immediate mode: packets reach the file as they come, not a ring block at a time
    cluster.exec("tor", "sh", "-c", "tcpdump --immediate-mode -Z root -U -s 0 -i " + port
        + " -w /tmp/tls.pcap tcp >/tmp/tcpdump.log 2>&1 & echo $! >/tmp/tcpdump.pid");
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> cluster.exec("tor", "cat",
        "/tmp/tcpdump.log").getStdout().contains("listening on"));

    // the capture's control: a marker sent in clear on the same path is seen
    String marker = "clear-marker-" + UUID.randomUUID();
    ExecResult clear = cluster.node(NODE).execInContainer("curl", "-sS", "--max-time", "5",
        "-H", "X-Probe: " + marker, "http://scheduler:8080/healthz");
    System.out.println("plaintext probe: exit " + clear.getExitCode() + ", " + clear.getStderr());

    // the agent, restarted, connects afresh: its token goes in the first headers of a
    // connection (later calls on it may send only an index into HPACK's table)
    cluster.exec(NODE, "sh", "-c", "pid=$(cat /run/datcp/agent.pid); kill $pid; "
        + UNTIL_GONE + "; /opt/datcp/bin/start-agent.sh");
    Awaitility.await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofSeconds(1))
        .until(() -> schedulerUp());
    // an operator's client with the admin token, across the ToR: a policy write
    String rule = "{\"order\":1,\"queue\":\"tls-probe\",\"importance\":1,\"phi\":0.5,"
        + "\"mode\":\"datcp\",\"quenchMode\":\"suspend\"}";
    assertThat(cluster.exec(NODE, "curl", "-fsS", "-o", "/dev/null", "-w", "%{http_code}",
        "--cacert", NODE_TLS + "ca.pem", "-X", "PUT", "-H", "Authorization: Bearer " + adminToken,
        "-H", "Content-Type: application/json", "-d", rule,
        "https://scheduler:8080/api/v1/policies/tls-probe").getStdout()).isEqualTo("200");

    // tcpdump writes what it has taken in before it stops: wait until the file stops growing
    cluster.exec("tor", "sh", "-c", "last=-1; for _ in $(seq 40); do n=$(stat -c %s"
        + " /tmp/tls.pcap); [ \"$n\" = \"$last\" ] && break; last=$n; sleep 1; done");
    cluster.exec("tor", "sh", "-c", "pid=$(cat /tmp/tcpdump.pid); kill -INT $pid; "
        + UNTIL_GONE);
    // kept for reading with tcpdump -r or wireshark
    Path pcap = Path.of("target", "DockerTlsIT-tor.pcap").toAbsolutePath();
    cluster.tor().copyFileFromContainer("/tmp/tls.pcap", pcap.toString());
    byte[] captured = Files.readAllBytes(pcap);
    Records tls = tlsRecords(captured);
    System.out.printf("capture on the ToR's %s (%s): %d bytes, ClientHello records to 9090: %d,"
        + " to 8080: %d; application data records: %d; tcpdump: %s%n", port, pcap,
        captured.length, tls.handshakes9090, tls.handshakes8080, tls.applicationData,
        cluster.exec("tor", "cat", "/tmp/tcpdump.log").getStdout().replace('\n', ' '));

    assertThat(contains(captured, marker)).as("the capture sees what crosses in clear").isTrue();
    assertThat(contains(captured, nodeToken)).as("the node token").isFalse();
    assertThat(contains(captured, adminToken)).as("the admin token").isFalse();
    assertThat(tls.handshakes9090).as("TLS handshakes on gRPC (the agent)").isPositive();
    assertThat(tls.handshakes8080).as("TLS handshakes on HTTP (the admin client)").isPositive();
    assertThat(tls.applicationData).as("TLS application data records").isPositive();
  }

  /**
   * Shell: waits up to 30 s until process $pid has exited. A zombie counts as gone: processes
   * started by exec are reparented to the container's first process, which may not reap them.
   */
  private static final String UNTIL_GONE = "for _ in $(seq 150); do [ -e /proc/$pid ] &&"
      + " ! grep -q '^State:.*Z' /proc/$pid/status 2>/dev/null || break; sleep 0.2; done";

  /** The ToR's address on the scheduler's network (subnet 2 with the scheduler on). */
  private static final String FABRIC_TOR_TO_SCHEDULER =
      DatcpCluster.FABRIC + ".2." + DatcpCluster.TOR_HOST;

  private boolean schedulerUp() throws Exception {
    ExecResult r = cluster.node(NODE).execInContainer("curl", "-fsS",
        "http://localhost:9464/metrics");
    return r.getExitCode() == 0 && r.getStdout().lines()
        .anyMatch(l -> l.startsWith("datcp_agent_scheduler_up ") && l.endsWith(" 1.0"));
  }

  private static boolean contains(byte[] haystack, String needle) {
    byte[] n = needle.getBytes(StandardCharsets.US_ASCII);
    outer:
    for (int i = 0; i + n.length <= haystack.length; i++) {
      for (int j = 0; j < n.length; j++) {
        if (haystack[i + j] != n[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  private static final class Records {
    int handshakes9090;
    int handshakes8080;
    int applicationData;
  }

  /**
   * Counts TCP segments toward the scheduler's ports whose payload starts a TLS handshake
   * record carrying a ClientHello (content type 22, version 3.x, handshake type 1), and
   * segments either way that start an application data record (23): pcap, Ethernet, IPv4.
   */
  private static Records tlsRecords(byte[] pcap) {
    Records out = new Records();
    ByteBuffer b = ByteBuffer.wrap(pcap).order(ByteOrder.LITTLE_ENDIAN);
    assertThat(b.getInt(0)).as("pcap magic (microseconds, little-endian)").isEqualTo(0xa1b2c3d4);
    assertThat(b.getInt(20)).as("link type Ethernet").isEqualTo(1);
    int at = 24;
    while (at + 16 <= pcap.length) {
      int captured = b.getInt(at + 8);
      int frame = at + 16;
      at = frame + captured;
      if (at > pcap.length || captured < 14 + 20 + 20
          || (pcap[frame + 12] & 0xff) != 0x08 || pcap[frame + 13] != 0x00) {
        continue; // short, or not IPv4
      }
      int ip = frame + 14;
      int ipLen = (pcap[ip] & 0x0f) * 4;
      if (pcap[ip + 9] != 6) {
        continue; // not TCP
      }
      int tcp = ip + ipLen;
      int srcPort = ((pcap[tcp] & 0xff) << 8) | (pcap[tcp + 1] & 0xff);
      int dstPort = ((pcap[tcp + 2] & 0xff) << 8) | (pcap[tcp + 3] & 0xff);
      int payload = tcp + ((pcap[tcp + 12] & 0xf0) >> 4) * 4;
      int totalLen = ((pcap[ip + 2] & 0xff) << 8) | (pcap[ip + 3] & 0xff);
      int end = Math.min(at, ip + totalLen);
      if (payload + 6 > end) {
        continue;
      }
      int type = pcap[payload] & 0xff;
      boolean v3 = pcap[payload + 1] == 3;
      if (type == 22 && v3 && pcap[payload + 5] == 1) {
        if (dstPort == 9090) {
          out.handshakes9090++;
        } else if (dstPort == 8080) {
          out.handshakes8080++;
        }
      } else if (type == 23 && v3 && (srcPort == 9090 || dstPort == 9090
          || srcPort == 8080 || dstPort == 8080)) {
        out.applicationData++;
      }
    }
    return out;
  }

  private static void run(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    p.getInputStream().transferTo(out);
    if (p.waitFor() != 0) {
      throw new IOException(String.join(" ", cmd) + " failed: " + out);
    }
  }
}
