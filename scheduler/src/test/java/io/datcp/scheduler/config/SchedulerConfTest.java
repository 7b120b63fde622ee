package io.datcp.scheduler.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.plan.PlannerPolicy;
import io.datcp.scheduler.policy.FlowMode;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SchedulerConfTest {
  @TempDir Path dir;

  @Test
  void defaultsMatchTheEmulatedTestbed() {
    SchedulerConf c = SchedulerConf.defaults();
    assertThat(c.get(SchedulerConf.DOWNLINK_BITS_PER_SECOND)).isEqualTo(100_000_000L);
    assertThat(c.get(SchedulerConf.DEFAULT_MODE)).isEqualTo(FlowMode.DATCP);
  }

  @Test
  void aFileSetsTypedValues() throws Exception {
    Path f = dir.resolve("scheduler.properties");
    Files.writeString(f, "planner.downlinkBitsPerSecond = 1000000000\npolicy.defaultMode=dctcp\n");
    SchedulerConf c = SchedulerConf.load(f);
    assertThat(c.get(SchedulerConf.DOWNLINK_BITS_PER_SECOND)).isEqualTo(1_000_000_000L);
    assertThat(c.get(SchedulerConf.DEFAULT_MODE)).isEqualTo(FlowMode.DCTCP);
  }

  @Test
  void anUnknownKeyIsNamedWithTheAcceptedKeys() {
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("planner.downlink", "1")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("'planner.downlink'")
        .hasMessageContaining("planner.downlinkBitsPerSecond");
  }

  @Test
  void aBadValueIsNamedWithItsKeyAndTheAcceptedValues() {
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("planner.targetUtilisation", "1.5")))
        .hasMessageContaining("planner.targetUtilisation").hasMessageContaining("(0, 1]");
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("policy.defaultQuenchMode", "pause")))
        .hasMessageContaining("policy.defaultQuenchMode").hasMessageContaining("suspend|kill");
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("reports.ratePerHost", "lots")))
        .hasMessageContaining("reports.ratePerHost");
  }

  @Test
  void theJobEndPollPeriodIsBoundedAndABadOneIsNamed() {
    assertThat(SchedulerConf.defaults().get(SchedulerConf.JOB_END_POLL_MILLIS)).isEqualTo(1000L);
    assertThat(SchedulerConf.fromMap(Map.of("jobs.endPollMillis", "100"))
        .get(SchedulerConf.JOB_END_POLL_MILLIS)).isEqualTo(100L);
    assertThat(SchedulerConf.fromMap(Map.of("jobs.endPollMillis", "60000"))
        .get(SchedulerConf.JOB_END_POLL_MILLIS)).isEqualTo(60_000L);
    for (String bad : new String[] {"99", "60001", "0", "-5", "1s", ""}) {
      assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("jobs.endPollMillis", bad)))
          .as(bad).isInstanceOf(ConfigException.class)
          .hasMessageContaining("jobs.endPollMillis").hasMessageContaining("[100, 60000]");
    }
  }

  @Test
  void thePlacementRefreshIntervalIsBoundedAndABadOneIsNamed() {
    assertThat(SchedulerConf.defaults().get(SchedulerConf.YARN_RM_REFRESH_MIN_INTERVAL_MILLIS))
        .isEqualTo(250L);
    assertThat(SchedulerConf.fromMap(Map.of("yarn.rm.refreshMinIntervalMillis", "10"))
        .get(SchedulerConf.YARN_RM_REFRESH_MIN_INTERVAL_MILLIS)).isEqualTo(10L);
    assertThat(SchedulerConf.fromMap(Map.of("yarn.rm.refreshMinIntervalMillis", "60000"))
        .get(SchedulerConf.YARN_RM_REFRESH_MIN_INTERVAL_MILLIS)).isEqualTo(60_000L);
    for (String bad : new String[] {"9", "60001", "0", "-1", "250ms", ""}) {
      assertThatThrownBy(() -> SchedulerConf.fromMap(
          Map.of("yarn.rm.refreshMinIntervalMillis", bad))).as(bad)
          .isInstanceOf(ConfigException.class)
          .hasMessageContaining("yarn.rm.refreshMinIntervalMillis")
          .hasMessageContaining("[10, 60000]");
    }
  }

  @Test
  void theServersEventLoopsAreOnePerCpuByDefaultAndABadCountIsNamed() {
    assertThat(SchedulerConf.defaults().get(SchedulerConf.SERVER_EVENT_LOOPS)).isZero();
    assertThat(SchedulerConf.fromMap(Map.of("server.eventLoops", "2"))
        .get(SchedulerConf.SERVER_EVENT_LOOPS)).isEqualTo(2);
    for (String bad : new String[] {"-1", "257", "two", ""}) {
      assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("server.eventLoops", bad)))
          .as(bad).isInstanceOf(ConfigException.class)
          .hasMessageContaining("server.eventLoops").hasMessageContaining("[0, 256]");
    }
  }

  @Test
  void thePlannerPolicyIsDeadlineByDefaultOrOrderAndABadOneIsNamed() {
    assertThat(SchedulerConf.defaults().get(SchedulerConf.PLANNER_POLICY))
        .isEqualTo(PlannerPolicy.DEADLINE);
    assertThat(SchedulerConf.fromMap(Map.of("planner.policy", "order"))
        .get(SchedulerConf.PLANNER_POLICY)).isEqualTo(PlannerPolicy.ORDER);
    assertThat(SchedulerConf.fromMap(Map.of("planner.policy", "deadline"))
        .get(SchedulerConf.PLANNER_POLICY)).isEqualTo(PlannerPolicy.DEADLINE);
    for (String bad : new String[] {"prio", "ORDER", "", "deadline,order"}) {
      assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("planner.policy", bad)))
          .as(bad).isInstanceOf(ConfigException.class)
          .hasMessage("bad value '" + bad + "' for configuration key 'planner.policy';"
              + " accepted: deadline|order");
    }
  }

  @Test
  void theBoundsOnWhatPeersMayMakeTheSchedulerHoldAreCheckedAtStartUp() {
    Map<String, String[]> ranges = Map.ofEntries(
        Map.entry("jobs.maxRunning", new String[] {"1", "1000000"}),
        Map.entry("jobs.maxMaps", new String[] {"1", "10000000"}),
        Map.entry("jobs.maxReduces", new String[] {"1", "100000"}),
        Map.entry("jobs.maxReducesPerHost", new String[] {"1", "1000000"}),
        Map.entry("jobs.maxShuffleEntries", new String[] {"1000", "1000000000"}),
        Map.entry("jobs.maxShuffleEntriesPerHost", new String[] {"1000", "1000000000"}),
        Map.entry("flows.maxMapIds", new String[] {"1", "100000"}),
        Map.entry("flows.retainTotal", new String[] {"1", "100000000"}),
        Map.entry("lookups.maxInterestPerHost", new String[] {"1", "100000000"}),
        Map.entry("lookups.maxInterest", new String[] {"1", "1000000000"}),
        Map.entry("watch.maxStreamsPerHost", new String[] {"1", "1000"}),
        Map.entry("reports.maxReportersPerHost", new String[] {"1", "100000"}));
    ranges.forEach((key, range) -> {
      long min = Long.parseLong(range[0]);
      long max = Long.parseLong(range[1]);
      SchedulerConf.Key<?> k = SchedulerConf.keys().stream()
          .filter(x -> x.name().equals(key)).findFirst().orElseThrow();
      assertThat((Object) SchedulerConf.fromMap(Map.of(key, range[0])).get(k))
          .isEqualTo((int) min);
      assertThat((Object) SchedulerConf.fromMap(Map.of(key, range[1])).get(k))
          .isEqualTo((int) max);
      for (String bad : new String[] {Long.toString(min - 1), Long.toString(max + 1), "many"}) {
        assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of(key, bad)))
            .as(key + "=" + bad).isInstanceOf(ConfigException.class)
            .hasMessageContaining("'" + key + "'")
            .hasMessageContaining("[" + min + ", " + max + "]");
      }
    });
  }

  @Test
  void theByteBudgetPerHostIsBoundedAndABadOneIsNamed() {
    assertThat(SchedulerConf.defaults().get(SchedulerConf.MAX_BYTES_PER_SECOND_PER_HOST))
        .isEqualTo(8L << 20);
    assertThat(SchedulerConf.defaults().get(SchedulerConf.BURST_BYTES_PER_HOST))
        .isEqualTo(32L << 20);
    for (String key : new String[] {"reports.maxBytesPerSecondPerHost",
        "reports.burstBytesPerHost"}) {
      SchedulerConf.Key<?> k = SchedulerConf.keys().stream()
          .filter(x -> x.name().equals(key)).findFirst().orElseThrow();
      assertThat((Object) SchedulerConf.fromMap(Map.of(key, "1024")).get(k)).isEqualTo(1024L);
      assertThat((Object) SchedulerConf.fromMap(Map.of(key, "1000000000000")).get(k))
          .isEqualTo(1_000_000_000_000L);
      for (String bad : new String[] {"1023", "1000000000001", "8MiB"}) {
        assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of(key, bad)))
            .as(key + "=" + bad).isInstanceOf(ConfigException.class)
            .hasMessageContaining("'" + key + "'")
            .hasMessageContaining("[1024, 1000000000000]");
      }
    }
  }

  @Test
  void theExampleFileListsEveryKeyWithItsDefault() throws Exception {
    Path example = Path.of("scheduler.properties.example");
    Properties props = new Properties();
    try (Reader r = Files.newBufferedReader(example)) {
      props.load(r);
    }
    assertThat(props.stringPropertyNames()).containsExactlyInAnyOrderElementsOf(
        SchedulerConf.keys().stream().map(SchedulerConf.Key::name).toList());
    SchedulerConf loaded = SchedulerConf.load(example);
    for (SchedulerConf.Key<?> k : SchedulerConf.keys()) {
      assertThat((Object) loaded.get(k)).as(k.name()).isEqualTo(k.defaultValue());
    }
  }

  @Test
  void everyKeyHasADescriptionAndAcceptedValues() {
    assertThat(SchedulerConf.keys()).isNotEmpty().allSatisfy(k -> {
      assertThat(k.description()).isNotBlank();
      assertThat(k.accepted()).isNotBlank();
    });
  }
}
