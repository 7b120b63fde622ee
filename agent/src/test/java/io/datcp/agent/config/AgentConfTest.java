package io.datcp.agent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.proto.v1.FlowMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AgentConfTest {

  @Test
  void theExampleFileListsEveryKeyWithItsDefault() throws Exception {
    Path example = Path.of("agent.properties.example");
    Properties p = new Properties();
    try (var r = Files.newBufferedReader(example)) {
      p.load(r);
    }
    assertThat(p.stringPropertyNames()).containsExactlyInAnyOrderElementsOf(
        AgentConf.keys().stream().map(AgentConf.Key::name).toList());
    AgentConf fromFile = AgentConf.load(example);
    // what a host must set: who may use the socket (defaults: the agent's group, root only)
    Map<AgentConf.Key<?>, Object> set = Map.of(AgentConf.SOCKET_GROUP, "hadoop",
        AgentConf.NODE_MANAGER_USER, "yarn");
    for (AgentConf.Key<?> k : AgentConf.keys()) {
      assertThat((Object) fromFile.get(k)).as(k.name())
          .isEqualTo(set.getOrDefault(k, k.defaultValue()));
    }
  }

  @Test
  void whoMayUseTheSocketIsCheckedAtStart() {
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.nodeManagerUser", "yarn user")))
        .hasMessage("bad value 'yarn user' for configuration key 'local.nodeManagerUser';"
            + " accepted: empty (root only), a user name or a numeric uid");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.nodeManagerUser", "4294967295")))
        .hasMessageContaining("'local.nodeManagerUser'");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.nodeManagerUser",
        "datcp-no-such-user")).nodeManagerUid())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("'local.nodeManagerUser'").hasMessageContaining("known to this host");
    assertThat(AgentConf.fromMap(Map.of("local.nodeManagerUser", "nobody")).nodeManagerUid())
        .hasValue(65534);
    assertThat(AgentConf.fromMap(Map.of("local.nodeManagerUser", "1001")).nodeManagerUid())
        .hasValue(1001);
    assertThat(AgentConf.defaults().nodeManagerUid()).isEmpty();
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.eventsSocketPeers", "all")))
        .hasMessage("bad value 'all' for configuration key 'local.eventsSocketPeers'; accepted:"
            + " nodemanager|any");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.maxFlowsPerPeer", "0")))
        .hasMessage("bad value '0' for configuration key 'local.maxFlowsPerPeer'; accepted: an"
            + " integer in 1..65536 (flows)");
  }

  @Test
  void anUnknownKeyNamesTheAcceptedKeys() {
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.socketpath", "/x")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("unknown configuration key 'local.socketpath'")
        .hasMessageContaining("local.socketPath");
  }

  @Test
  void aBadValueNamesTheKeyAndTheAcceptedValues() {
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("policy.defaultMode", "fast")))
        .hasMessage("bad value 'fast' for configuration key 'policy.defaultMode'; accepted:"
            + " datcp|pd2tcp|d2tcp|dctcp|off");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("kernel.shufflePorts", "13562,0")))
        .hasMessageContaining("'kernel.shufflePorts'");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.socketPath", "relative.sock")))
        .hasMessageContaining("'local.socketPath'").hasMessageContaining("absolute path");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.maxLiveFlows", "70000")))
        .hasMessageContaining("1..65536");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("policy.defaultPhi", "1.5")))
        .hasMessageContaining("[0, 1]");
  }

  @Test
  void schedulerTargetTakesOneAddressOrTheHaModesList() {
    assertThat(AgentConf.fromMap(Map.of("scheduler.target", "s1:9090,s2:9090,[::1]:9091"))
        .get(AgentConf.SCHEDULER_TARGET)).isEqualTo("s1:9090,s2:9090,[::1]:9091");
    for (String bad : List.of("s1:9090,", "s1:9090,s2", "s1:9090 s2:9090")) {
      assertThatThrownBy(() -> AgentConf.fromMap(Map.of("scheduler.target", bad)))
          .as(bad).hasMessageContaining("'scheduler.target'")
          .hasMessageContaining("HOST:PORT[,HOST:PORT...]");
    }
  }

  @Test
  void keysThatGoTogetherAreChecked() {
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("agent.role", "switch")))
        .hasMessageContaining("'switch.name' is required when agent.role=switch");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("scheduler.reconnectMinMillis", "500",
        "scheduler.reconnectMaxMillis", "100")))
        .hasMessageContaining("scheduler.reconnectMaxMillis");
  }

  @Test
  void theEventsSocketDefaultsToEventsSockBesideTheGrpcSocket() {
    assertThat(AgentConf.fromMap(Map.of()).eventsSocketPath()).isEqualTo("/run/datcp/events.sock");
    assertThat(AgentConf.fromMap(Map.of("local.socketPath", "/var/run/x/agent.sock"))
        .eventsSocketPath()).isEqualTo("/var/run/x/events.sock");
    assertThat(AgentConf.fromMap(Map.of("local.eventsSocketPath", "/tmp/e.sock"))
        .eventsSocketPath()).isEqualTo("/tmp/e.sock");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.eventsSocketPath", "events.sock")))
        .hasMessageContaining("'local.eventsSocketPath'").hasMessageContaining("absolute path");
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.socketPath", "/run/a.sock",
        "local.eventsSocketPath", "/run/a.sock")))
        .hasMessageContaining("'local.eventsSocketPath' must name another socket");
    // the derived path collides with the gRPC socket itself
    assertThatThrownBy(() -> AgentConf.fromMap(Map.of("local.socketPath", "/run/events.sock")))
        .hasMessageContaining("'local.eventsSocketPath'");
  }

  @Test
  void overridesKeepTypedValues(@TempDir Path dir) throws Exception {
    Path f = dir.resolve("a.properties");
    Files.writeString(f, "kernel.shufflePorts=13562, 13563\npolicy.defaultMode=dctcp\n");
    AgentConf c = AgentConf.load(f).with(Map.of("agent.role", "switch", "switch.name", "tor1"));
    assertThat(c.get(AgentConf.SHUFFLE_PORTS)).isEqualTo(List.of(13562, 13563));
    assertThat(c.get(AgentConf.DEFAULT_MODE)).isEqualTo(FlowMode.FLOW_MODE_DCTCP);
    assertThat(c.get(AgentConf.ROLE)).isEqualTo(AgentConf.Role.SWITCH);
  }
}
