package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.agent.testing.KernelLock;
import io.datcp.agent.testing.KernelLockExtension;
import io.datcp.agent.testing.TestAgents;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an agent leaves in the shared kernel when it stops (root; holds the kernel lock): a
 * connection made on the shuffle port after the last agent stopped runs the kernel's default
 * congestion control, not datcp, so an `off` run after an `on` run is really off; while another
 * agent or `datcpctl load` still holds the port, its connections stay on datcp; an agent killed with SIGKILL holds
 * nothing once it is gone; a switch-role agent puts no socket on datcp. `datcpctl status`
 * names each holder and what it holds.
 */
@ExtendWith(KernelLockExtension.class)
class KernelHoldTest {
  @TempDir
  Path dir;
  private ServerSocket listener;

  @BeforeEach
  void listen() throws IOException {
    listener = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
  }

  @AfterEach
  void close() throws IOException {
    listener.close();
  }

  private Map<String, String> settings(String name) {
    Map<String, String> m = TestAgents.settings(dir.resolve(name), "", listener.getLocalPort());
    m.put("agent.host", name);
    m.put("metrics.port", "-1");
    return m;
  }

  @Test
  void aStoppedAgentLeavesTheShufflePortOffDatcp() throws Exception {
    AgentServer agent = TestAgents.start(settings("h1"));
    try {
      assertThat(runsDatcp()).as("a connection while the agent runs").isTrue();
    } finally {
      agent.close();
    }
    assertThat(runsDatcp()).as("a connection after the agent stopped").isFalse();
  }

  @Test
  void whatAnotherAgentStillHoldsStays() throws Exception {
    AgentServer first = TestAgents.start(settings("h1"));
    AgentServer second = TestAgents.start(settings("h2"));
    try {
      first.close();
      assertThat(runsDatcp()).as("while the second agent still runs").isTrue();
    } finally {
      second.close();
    }
    assertThat(runsDatcp()).as("after both stopped").isFalse();
  }

  @Test
  void whatDatcpctlLoadHoldsStays() throws Exception {
    ctl("load", "--port", Integer.toString(listener.getLocalPort()));
    try {
      TestAgents.start(settings("h1")).close();
      assertThat(runsDatcp()).as("after the agent stopped, with datcpctl's hold").isTrue();
    } finally {
      ctl("unload"); // datcpctl's hold lasts until then
    }
  }

  @Test
  void statusNamesEachHolderAndWhatItHolds() throws Exception {
    AgentServer first = TestAgents.start(settings("h1"));
    AgentServer second = TestAgents.start(settings("h2"));
    int port = listener.getLocalPort();
    try {
      assertThat(ctl("status", "--json"))
          .containsPattern("\\{\"id\":\\d+,\"name\":\"agent host h1\",\"pid\":"
              + ProcessHandle.current().pid() + ",\"kind\":\"process\",\"live\":true,"
              + "\"sockops\":true,\"ports\":\\[" + port + "\\]}")
          .contains("\"name\":\"agent host h2\"");
      assertThat(ctl("status")).contains("agent host h1 (pid " + ProcessHandle.current().pid()
          + ", running): sockops yes, ports " + port);
    } finally {
      first.close();
    }
    try {
      assertThat(ctl("status", "--json")).contains("agent host h2").doesNotContain("agent host h1");
    } finally {
      second.close();
    }
    assertThat(ctl("status", "--json")).contains("\"sockops_attached\":false")
        .doesNotContain("agent host");
  }

  @Test
  void aKilledAgentHoldsNothing() throws Exception {
    Process killed = TestAgents.startProcess(settings("killed"), dir.resolve("killed.log"));
    try {
      assertThat(runsDatcp()).isTrue();
    } finally {
      killed.destroyForcibly().waitFor();
    }
    // the next agent's clean stop is not held up by the dead one's record
    AgentServer next = TestAgents.start(settings("h1"));
    next.close();
    assertThat(runsDatcp()).as("after the killed agent and the next one").isFalse();
    assertThat(ctl("status", "--json")).doesNotContain("agent host killed");
  }

  @Test
  void pruneReleasesWhatOnlyAKilledAgentHeld() throws Exception {
    Process killed = TestAgents.startProcess(settings("killed"), dir.resolve("killed.log"));
    killed.destroyForcibly().waitFor();
    assertThat(runsDatcp()).as("before the prune: the killed agent's sockops").isTrue();
    assertThat(ctl("status")).contains("agent host killed (pid ")
        .contains("exited; 'datcpctl prune' releases it): sockops yes");
    ctl("prune");
    assertThat(runsDatcp()).as("after the prune").isFalse();
  }

  @Test
  void aSwitchAgentPutsNoSocketOnDatcp() throws Exception {
    Map<String, String> s = settings("tor");
    s.put("agent.role", "switch");
    s.put("switch.name", "tor-t");
    try (AgentServer sw = TestAgents.start(s)) {
      assertThat(runsDatcp()).as("a shuffle-port connection on the switch's kernel").isFalse();
      assertThat(ctl("status", "--json")).contains("\"name\":\"agent switch tor-t\"")
          .contains("\"sockops\":false,\"ports\":[]}").contains("\"sockops_attached\":false");
    }
  }

  /** Whether a new loopback connection to the shuffle port runs datcp (ss reads its cc). */
  private boolean runsDatcp() throws Exception {
    try (Socket c = new Socket()) {
      c.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort()));
      try (Socket s = listener.accept()) {
        String info = run("ss", "-Hti", "state", "established", "( sport = :"
            + listener.getLocalPort() + " and dport = :" + c.getLocalPort() + " )");
        assertThat(info).as("ss finds the accepted socket").contains(":" + c.getLocalPort());
        return List.of(info.split("\\s+")).contains("datcp");
      }
    }
  }

  private static String ctl(String... args) throws Exception {
    String[] cmd = new String[args.length + 1];
    cmd[0] = Path.of(KernelLock.library()).resolveSibling("datcpctl").toString();
    System.arraycopy(args, 0, cmd, 1, args.length);
    return run(cmd);
  }

  private static String run(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as(String.join(" ", cmd) + ": " + out).isZero();
    return out;
  }
}
