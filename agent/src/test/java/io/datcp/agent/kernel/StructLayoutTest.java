package io.datcp.agent.kernel;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.jna.Structure;
import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The JNA mirrors of datcp_abi.h / datcp.h have the C compiler's sizes and offsets: a small C
 * program built against kmod/include prints them (no root, no kernel).
 */
class StructLayoutTest {
  private static final Map<String, Long> C = new HashMap<>();

  @BeforeAll
  static void compileAndRun(@TempDir Path dir) throws Exception {
    Path src = Path.of(StructLayoutTest.class.getResource("/abi_layout.c").toURI());
    Path exe = dir.resolve("abi_layout");
    run(List.of("gcc", "-Wall", "-Werror", "-I" + System.getProperty("datcp.include"),
        src.toString(), "-o", exe.toString()));
    for (String line : run(List.of(exe.toString())).split("\n")) {
      String[] p = line.trim().split(" ");
      C.put(p[0], Long.parseLong(p[1]));
    }
    assertThat(C).hasSizeGreaterThan(60);
  }

  @Test
  void everyStructMatchesTheCompiler() throws Exception {
    check("datcp_flow_key", new Abi.FlowKey());
    check("datcp_flow_meta", new Abi.FlowMeta());
    check("datcp_flow_stats", new Abi.FlowStats());
    check("datcp_event", new Abi.Event());
    check("datcp_port_config", new Abi.PortConfig());
    check("datcp_band_counters", new Abi.BandCounters());
    check("datcp_port_state", new Abi.PortState());
    check("datcp_load_opts", new Abi.LoadOpts());
    check("datcp_status", new Abi.Status());
  }

  @Test
  void theMirrorsFollowTheHeadersAbiVersion() {
    assertThat((long) Abi.ABI_VERSION).as("DATCP_ABI_VERSION of kmod/include/datcp_abi.h")
        .isEqualTo(C.get("DATCP_ABI_VERSION"));
  }

  private static void check(String name, Structure s) throws Exception {
    assertThat((long) s.size()).as("sizeof(struct %s)", name).isEqualTo(C.get(name));
    Method offset = Structure.class.getDeclaredMethod("fieldOffset", String.class);
    offset.setAccessible(true);
    for (String field : fieldOrder(s)) {
      assertThat(C).as("C offset of %s.%s printed", name, field).containsKey(name + "." + field);
      assertThat(((Integer) offset.invoke(s, field)).longValue())
          .as("offsetof(struct %s, %s)", name, field).isEqualTo(C.get(name + "." + field));
    }
  }

  @SuppressWarnings("unchecked")
  private static List<String> fieldOrder(Structure s) throws Exception {
    Method order = Structure.class.getDeclaredMethod("getFieldOrder");
    order.setAccessible(true);
    return (List<String>) order.invoke(s);
  }

  private static String run(List<String> cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor()).as("%s: %s", cmd, out).isZero();
    return out;
  }
}
