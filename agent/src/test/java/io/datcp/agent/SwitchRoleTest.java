package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.kernel.DatcpKernel;
import io.datcp.agent.kernel.KernelException;
import io.datcp.agent.kernel.PortCounters;
import io.datcp.agent.switches.DatcpSwitchDriver;
import io.datcp.agent.switches.SwitchAgent;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.KernelLock;
import io.datcp.agent.testing.KernelLockExtension;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.MarkMode;
import io.datcp.proto.v1.SwitchConfig;
import io.datcp.proto.v1.SwitchPort;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The switch role on an emulated switch (root; holds the kernel lock): two network namespaces
 * joined by a veth pair, the switch ports on one side. Configurations replace each other whole,
 * bad ports are skipped, counters count real packets.
 */
@ExtendWith(KernelLockExtension.class)
class SwitchRoleTest {
  private static final String NS = "datcpagt-sw" + ProcessHandle.current().pid();
  private static final String PEER = "datcpagt-h" + ProcessHandle.current().pid();
  private static DatcpKernel kernel;

  @TempDir
  Path dir;

  @BeforeAll
  static void setUp() throws Exception {
    sh("ip", "netns", "add", NS);
    sh("ip", "netns", "add", PEER);
    sh("ip", "-n", NS, "link", "add", "p0", "type", "veth", "peer", "name", "h0", "netns", PEER);
    sh("ip", "-n", NS, "link", "add", "p1", "type", "veth", "peer", "name", "p1b");
    sh("ip", "-n", NS, "addr", "add", "192.0.2.1/24", "dev", "p0");
    sh("ip", "-n", PEER, "addr", "add", "192.0.2.2/24", "dev", "h0");
    for (String l : List.of("p0", "p1", "p1b")) {
      sh("ip", "-n", NS, "link", "set", l, "up");
    }
    sh("ip", "-n", PEER, "link", "set", "h0", "up");
    kernel = DatcpKernel.load(KernelLock.library(), "test switch", List.of(13562), 100_000_000L, "").kernel();
  }

  @AfterAll
  static void tearDown() throws Exception {
    try {
      for (String p : List.of("p0", "p1", "p1b")) {
        kernel.resetPort(NS, p);
      }
    } finally {
      sh("ip", "netns", "del", NS);
      sh("ip", "netns", "del", PEER);
    }
  }

  private static SwitchPort.Builder red(String ifname) {
    return SwitchPort.newBuilder().setInterface(ifname).setRateBitsPerSecond(100_000_000)
        .setBufferBytes(200_000).setMark(MarkMode.MARK_MODE_RED).setRedMinBytes(80_000)
        .setRedMaxBytes(120_000).setRedMaxP(1.0);
  }

  @Test
  void configurationsReplaceEachOtherWholeAndCountersCountPackets() throws Exception {
    SwitchAgent sw = new SwitchAgent("tor1", new DatcpSwitchDriver(kernel, NS),
        new SimpleMeterRegistry());
    try {
      List<String> ports = sw.apply(SwitchConfig.newBuilder().setSwitchName("tor1")
          .addPorts(red("p0").putDscpBand(46, 0))
          .addPorts(SwitchPort.newBuilder().setInterface("*").setRateBitsPerSecond(50_000_000)
              .setBufferBytes(100_000).setMark(MarkMode.MARK_MODE_STEP).setKBytes(30_000))
          .addPorts(red("bad").putDscpBand(99, 0))
          .build());
      assertThat(ports).containsExactlyInAnyOrder("p0", "p1", "p1b");

      // three datagrams to the host behind p0 (bash's /dev/udp: no extra tool needed)
      sh("ip", "netns", "exec", NS, "bash", "-c",
          "for i in 1 2 3; do echo datcp > /dev/udp/192.0.2.2/9; sleep 0.1; done");
      PortCounters c = kernel.readPort(NS, "p0");
      assertThat(c.bands().get(1).packets()).isGreaterThanOrEqualTo(3);
      assertThat(c.bands().get(1).bytes()).isGreaterThan(0);

      // the next configuration names only p0: the others go back to plain forwarding
      assertThat(sw.apply(SwitchConfig.newBuilder().setSwitchName("tor1")
          .addPorts(red("p0")).build())).containsExactly("p0");
      assertThatThrownBy(() -> kernel.readPort(NS, "p1"))
          .isInstanceOf(KernelException.class).hasMessageContaining("not configured");
      assertThat(kernel.readPort(NS, "p0")).isNotNull();
    } finally {
      sw.resetAll();
    }
  }

  @Test
  void theSwitchRoleFollowsTheSchedulerAndServesCounters() throws Exception {
    try (FakeScheduler scheduler = new FakeScheduler().start()) {
      scheduler.switchConfig = SwitchConfig.newBuilder().setSwitchName("tor2")
          .addPorts(red("p1")).build();
      Map<String, String> s = TestAgents.settings(dir, scheduler.target(), 13562);
      s.put("agent.role", "switch");
      s.put("switch.name", "tor2");
      s.put("switch.netns", NS);
      try (AgentServer agent = TestAgents.start(s)) {
        try {
          await().atMost(Duration.ofSeconds(10))
              .until(() -> agent.switchPorts().equals(List.of("p1")));
          String metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
              "http://127.0.0.1:" + agent.metricsPort() + "/metrics")).build(),
              HttpResponse.BodyHandlers.ofString()).body();
          assertThat(metrics).contains("datcp_switch_band_packets{band=\"1\",interface=\"p1\"}");
          scheduler.pushSwitch(SwitchConfig.newBuilder().setSwitchName("tor2").build());
          await().atMost(Duration.ofSeconds(10)).until(() -> agent.switchPorts().isEmpty());
        } finally {
          agent.switchAgent().resetAll();
        }
      }
    }
  }

  private static void sh(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IOException(String.join(" ", cmd) + ": " + out);
    }
  }
}
