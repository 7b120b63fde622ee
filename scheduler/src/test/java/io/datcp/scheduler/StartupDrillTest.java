package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.config.SchedulerConf;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** startup.drillSeconds: the throwaway instance's calls, and that it keeps to itself. */
class StartupDrillTest {

  @Test
  void drillSendsEveryKindThroughTheStackAndNeverAsksTheResourceManager() throws Exception {
    try (FakeResourceManager rm = new FakeResourceManager()) {
      SchedulerConf conf = SchedulerConf.fromMap(Map.of(
          "yarn.rm.webappAddress", rm.address(), "jobs.attributesFrom", "yarn",
          "jobs.maxReducesPerHost", "50"));
      List<Path> before = drillDirs();
      StartupDrill.Result r = StartupDrill.run(conf, Duration.ofSeconds(2));
      // eight nodes with two closed loops of each of three kinds: each loop got more than
      // its first call answered
      assertThat(r.calls()).isGreaterThan(48);
      assertThat(r.seconds()).isGreaterThanOrEqualTo(2.0);
      assertThat(rm.appRequests() + rm.attemptRequests() + rm.containerRequests())
          .as("the drill's instance has no ResourceManager").isZero();
      assertThat(drillDirs()).as("the throwaway data directory is removed")
          .containsExactlyInAnyOrderElementsOf(before);
    }
  }

  @Test
  void drillConfigurationKeepsLimitsAndDropsTheOutsideWorld() {
    SchedulerConf conf = SchedulerConf.fromMap(Map.of(
        "jobs.maxReducesPerHost", "50", "flows.maxMapIds", "77",
        "yarn.rm.webappAddress", "http://rm:8088", "ha.zookeeper.connect", "zk:2181",
        "tls.certFile", "/etc/datcp/cert.pem", "tls.keyFile", "/etc/datcp/key.pem",
        "auth.token", "operator-secret-0123456789", "auth.nodes.required", "false",
        "switch.tor.port.eth1.kBytes", "30000", "startup.drillSeconds", "20"));
    SchedulerConf drill = conf.forDrill();
    assertThat(drill.get(SchedulerConf.MAX_REDUCES_PER_HOST)).isEqualTo(50);
    assertThat(drill.get(SchedulerConf.MAX_MAP_IDS)).isEqualTo(77);
    assertThat(drill.get(SchedulerConf.YARN_RM_WEBAPP)).isEmpty();
    assertThat(drill.get(SchedulerConf.HA_ZOOKEEPER_CONNECT)).isEmpty();
    assertThat(drill.get(SchedulerConf.TLS_CERT_FILE)).isEmpty();
    assertThat(drill.get(SchedulerConf.TLS_PLAINTEXT)).isTrue();
    assertThat(drill.get(SchedulerConf.AUTH_TOKEN)).isEmpty();
    assertThat(drill.get(SchedulerConf.AUTH_NODES_REQUIRED)).isTrue();
    assertThat(drill.get(SchedulerConf.JOB_ATTRIBUTES_FROM)).isEqualTo("reports");
    assertThat(drill.get(SchedulerConf.STARTUP_DRILL_SECONDS)).isZero();
    assertThat(conf.switches().switches()).containsKey("tor");
    assertThat(drill.switches().switches()).isEmpty();
  }

  @Test
  void drillSecondsOutOfRangeNamesTheKey() {
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("startup.drillSeconds", "601")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("startup.drillSeconds")
        .hasMessageContaining("[0, 600]");
  }

  private static List<Path> drillDirs() throws IOException {
    try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
      return s.filter(p -> p.getFileName().toString().startsWith("datcp-drill")).toList();
    }
  }
}
