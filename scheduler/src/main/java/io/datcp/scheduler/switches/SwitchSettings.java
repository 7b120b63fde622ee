package io.datcp.scheduler.switches;

import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.common.InvalidFieldException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiConsumer;

/**
 * Switch port settings from the config file: {@code switch.NAME.port.IFACE.SETTING=VALUE}. A
 * setting not given takes the DATCP Table 1 value ({@link SwitchPort#table1}); a switch with no
 * keys gets one port "*" with those values.
 */
public final class SwitchSettings {
  public static final String PREFIX = "switch.";
  public static final String KEY_FORM = "switch.NAME.port.IFACE.{rateBitsPerSecond|bufferBytes"
      + "|mark|redMinBytes|redMaxBytes|redMaxP|kBytes|dscpBands}";
  /** Rate of ports no key sets: the emulated testbed's links, bits/s. */
  public static final long DEFAULT_RATE_BITS_PER_SECOND = 100_000_000L;

  private static final Map<String, BiConsumer<Builder, String>> SETTINGS = new LinkedHashMap<>();

  static {
    SETTINGS.put("rateBitsPerSecond", (b, v) -> b.rate = Long.parseLong(v));
    SETTINGS.put("bufferBytes", (b, v) -> b.buffer = Long.parseLong(v));
    SETTINGS.put("mark", (b, v) -> b.mark = MarkMode.fromName(v));
    SETTINGS.put("redMinBytes", (b, v) -> b.redMin = Long.parseLong(v));
    SETTINGS.put("redMaxBytes", (b, v) -> b.redMax = Long.parseLong(v));
    SETTINGS.put("redMaxP", (b, v) -> b.redMaxP = Double.parseDouble(v));
    SETTINGS.put("kBytes", (b, v) -> b.k = Long.parseLong(v));
    SETTINGS.put("dscpBands", (b, v) -> b.dscp = dscpBands(v));
  }

  private final Map<String, List<SwitchPort>> switches;

  private SwitchSettings(Map<String, List<SwitchPort>> switches) {
    this.switches = switches;
  }

  /** Configured switches by name, ports in interface order. */
  public Map<String, List<SwitchPort>> switches() {
    return switches;
  }

  /** The ports of a switch no key names. */
  public static List<SwitchPort> defaultPorts() {
    return List.of(SwitchPort.table1("*", DEFAULT_RATE_BITS_PER_SECOND));
  }

  /** Parses the switch.* keys; fails naming the key on a malformed one. */
  public static SwitchSettings parse(Map<String, String> raw) {
    Map<String, Map<String, Builder>> ports = new TreeMap<>();
    Map<String, String> keyOf = new HashMap<>();
    for (Map.Entry<String, String> e : raw.entrySet()) {
      String key = e.getKey();
      String rest = key.substring(PREFIX.length());
      int port = rest.indexOf(".port.");
      int last = rest.lastIndexOf('.');
      if (port <= 0 || last <= port + ".port.".length()) {
        throw new ConfigException("configuration key '" + key + "' is not of the form "
            + KEY_FORM);
      }
      String name = rest.substring(0, port);
      String iface = rest.substring(port + ".port.".length(), last);
      String setting = rest.substring(last + 1);
      BiConsumer<Builder, String> apply = SETTINGS.get(setting);
      if (!name.matches("[A-Za-z0-9_-]{1,64}") || apply == null) {
        throw new ConfigException("configuration key '" + key + "' is not of the form "
            + KEY_FORM + " (NAME of A-Za-z0-9_-)");
      }
      Builder b = ports.computeIfAbsent(name, n -> new TreeMap<>())
          .computeIfAbsent(iface, Builder::new);
      try {
        apply.accept(b, e.getValue().trim());
      } catch (RuntimeException bad) {
        throw new ConfigException(key, e.getValue(), accepted(setting));
      }
      keyOf.put(name + "/" + iface, PREFIX + name + ".port." + iface + ".");
    }
    Map<String, List<SwitchPort>> out = new TreeMap<>();
    ports.forEach((name, byIface) -> {
      List<SwitchPort> list = new ArrayList<>();
      byIface.forEach((iface, b) -> {
        SwitchPort p = b.build();
        try {
          p.validate("");
        } catch (InvalidFieldException bad) {
          throw new ConfigException("configuration keys " + keyOf.get(name + "/" + iface) + "*: "
              + bad.getMessage());
        }
        list.add(p);
      });
      out.put(name, List.copyOf(list));
    });
    return new SwitchSettings(Map.copyOf(out));
  }

  private static String accepted(String setting) {
    switch (setting) {
      case "mark": return "none|red|step|pfdct";
      case "redMaxP": return "a probability in [0, 1]";
      case "dscpBands": return "DSCP:BAND pairs separated by commas, e.g. 34:0,0:1,8:2";
      default: return "a positive integer";
    }
  }

  private static Map<Integer, Integer> dscpBands(String v) {
    Map<Integer, Integer> m = new TreeMap<>();
    if (v.isEmpty()) {
      return m;
    }
    for (String pair : v.split(",")) {
      String[] kv = pair.trim().split(":");
      if (kv.length != 2) {
        throw new IllegalArgumentException(pair);
      }
      m.put(Integer.parseInt(kv[0].trim()), Integer.parseInt(kv[1].trim()));
    }
    return m;
  }

  /** One port's settings while the keys are read; unset ones take Table 1 values. */
  private static final class Builder {
    final SwitchPort base;
    long rate;
    long buffer;
    MarkMode mark;
    long redMin;
    long redMax;
    double redMaxP;
    long k;
    Map<Integer, Integer> dscp;

    Builder(String iface) {
      base = SwitchPort.table1(iface, DEFAULT_RATE_BITS_PER_SECOND);
      rate = base.rateBitsPerSecond();
      buffer = base.bufferBytes();
      mark = base.mark();
      redMin = base.redMinBytes();
      redMax = base.redMaxBytes();
      redMaxP = base.redMaxP();
      k = base.kBytes();
      dscp = base.dscpBand();
    }

    SwitchPort build() {
      return new SwitchPort(base.iface(), rate, buffer, mark, redMin, redMax, redMaxP, k, dscp);
    }
  }
}
