package io.datcp.scheduler.switches;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.config.SchedulerConf;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SwitchSettingsTest {
  @Test
  void unsetSettingsAndUnnamedSwitchesTakeTheTable1Profile() {
    SchedulerConf conf = SchedulerConf.fromMap(Map.of(
        "switch.tor1.port.eth1.rateBitsPerSecond", "1000000000",
        "switch.tor1.port.eth2.mark", "step",
        "switch.tor1.port.eth2.dscpBands", "34:0, 8:1"));

    List<SwitchPort> ports = conf.switches().switches().get("tor1");
    assertThat(ports).extracting(SwitchPort::iface).containsExactly("eth1", "eth2");
    assertThat(ports.get(0).rateBitsPerSecond()).isEqualTo(1_000_000_000L);
    assertThat(ports.get(0).bufferBytes()).isEqualTo(200_000);
    assertThat(ports.get(0).mark()).isEqualTo(MarkMode.RED);
    assertThat(ports.get(0).redMinBytes()).isEqualTo(80_000);
    assertThat(ports.get(0).redMaxBytes()).isEqualTo(120_000);
    assertThat(ports.get(0).redMaxP()).isEqualTo(1.0);
    assertThat(ports.get(0).dscpBand()).containsExactlyInAnyOrderEntriesOf(
        Map.of(34, 0, 0, 1, 8, 2));
    assertThat(ports.get(1).mark()).isEqualTo(MarkMode.STEP);
    assertThat(ports.get(1).dscpBand()).containsExactlyInAnyOrderEntriesOf(Map.of(34, 0, 8, 1));
    assertThat(SwitchSettings.defaultPorts()).singleElement()
        .isEqualTo(SwitchPort.table1("*", 100_000_000L));
  }

  @Test
  void badSwitchKeysStopStartUpNamingTheKey() {
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of(
        "switch.tor1.port.eth1.mark", "ecn")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("switch.tor1.port.eth1.mark").hasMessageContaining("none|red");
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("switch.tor1.eth1.mark", "red")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("switch.NAME.port.IFACE");
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of(
        "switch.tor1.port.eth1.redMinBytes", "150000")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("switch.tor1.port.eth1.").hasMessageContaining("redMinBytes");
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of(
        "switch.tor1.port.eth1.dscpBands", "34:3")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("band 3");
  }
}
