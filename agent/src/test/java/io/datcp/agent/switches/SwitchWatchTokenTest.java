package io.datcp.agent.switches;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.kernel.PortCounters;
import io.datcp.agent.kernel.PortSettings;
import io.datcp.agent.scheduler.SchedulerClient;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.proto.v1.SwitchConfig;
import io.datcp.proto.v1.SwitchPort;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The switch role's configuration stream when the scheduler re-mints the node token: the agent
 * reads the token file again and follows the stream without a restart (no kernel: a recording
 * driver stands in for the ports).
 */
class SwitchWatchTokenTest {
  @TempDir
  Path dir;

  /** Records the ports configured. */
  private static final class RecordingDriver implements SwitchDriver {
    final List<String> configured = new CopyOnWriteArrayList<>();

    @Override
    public void configure(String ifname, PortSettings settings) {
      configured.add(ifname);
    }

    @Override
    public PortCounters counters(String ifname) {
      return null;
    }

    @Override
    public void reset(String ifname) {}

    @Override
    public List<String> interfaces() {
      return List.of();
    }
  }

  private static SwitchConfig config(String port) {
    return SwitchConfig.newBuilder().setSwitchName("tor1").addPorts(SwitchPort.newBuilder()
        .setInterface(port).setRateBitsPerSecond(100_000_000).setBufferBytes(200_000)).build();
  }

  @Test
  void theSwitchFollowsTheSchedulerAgainOnceTheReMintedTokenIsInTheFile() throws Exception {
    Path token = dir.resolve("node.token");
    Files.writeString(token, "token-1\n");
    RecordingDriver driver = new RecordingDriver();
    try (FakeScheduler scheduler = new FakeScheduler()) {
      scheduler.requiredToken = "token-1";
      scheduler.switchConfig = config("p0");
      scheduler.start();
      SimpleMeterRegistry meters = new SimpleMeterRegistry();
      try (SchedulerClient client = new SchedulerClient(AgentConf.fromMap(Map.of(
          "scheduler.target", scheduler.target(), "scheduler.tokenFile", token.toString(),
          "scheduler.plaintext", "true")), // the fake scheduler on loopback
          "tor1-host", meters);
          SwitchAgent sw = new SwitchAgent("tor1", driver, meters)) {
        sw.watch(client.policyStub(), client.outage(), 50, 200);
        await().atMost(Duration.ofSeconds(5)).until(() -> driver.configured.contains("p0"));

        // a scheduler with new tokens: the stream is refused until the file has the new one
        scheduler.stop();
        scheduler.requiredToken = "token-2";
        scheduler.switchConfig = config("p1");
        scheduler.start();
        await().atMost(Duration.ofSeconds(5))
            .until(() -> scheduler.refused.contains("WatchSwitchConfig"));
        Path tmp = dir.resolve("node.token.tmp");
        Files.writeString(tmp, "token-2\n");
        Files.move(tmp, token, StandardCopyOption.REPLACE_EXISTING,
            StandardCopyOption.ATOMIC_MOVE);
        await().atMost(Duration.ofSeconds(10)).until(() -> driver.configured.contains("p1"));
        assertThat(sw.ports()).containsExactly("p1");
      }
    }
  }
}
