package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The package map of scheduler/README.md ("Code map"), checked on the compiled classes: a
 * package may use only packages of lower layers, never one of its own layer or above, so no
 * import runs upward and none circles. Read from the class files' constant pools, so fully
 * qualified names and nested types count as well as imports.
 */
class ArchitectureTest {
  /** Layers, top first; packages relative to io.datcp.scheduler, "" for the root. */
  static final List<Set<String>> LAYERS = List.of(
      Set.of(""),                                    // SchedulerServer, SchedulerMain, facade
      Set.of("api.grpc", "api.rest", "dashboard"),   // thin adapters
      Set.of("config"),                              // typed keys of everything below
      Set.of("ingest"),                              // reports in: checks, dedup, YARN facts
      Set.of("serve"),                               // lookups, views, pushes to agents
      Set.of("plan"),                                // deadlines per reducer host
      Set.of("jobs"),                                // the live job model
      Set.of("store"),                               // rules' persistence
      Set.of("policy", "switches", "flows", "auth", "ha"), // rules, switch settings, flow log,
                                                   // tokens, election and ZooKeeper session
      Set.of("common"));                             // exceptions, lock stripes, time

  private static final String BASE = "io/datcp/scheduler/";
  private static final Pattern NAME = Pattern.compile("io/datcp/scheduler/([\\w/$]+)");

  @Test
  void packagesOnlyUseLowerLayers() throws Exception {
    Map<String, Set<String>> uses = packageUses(classesRoot());
    assertThat(uses).as("scheduler packages found in the compiled classes")
        .containsKeys("", "ingest", "plan", "serve", "jobs");
    assertThat(violations(uses)).isEmpty();
  }

  @Test
  void checkFindsUpwardAndCircularUses() {
    assertThat(violations(Map.of("jobs", Set.of("plan"))))
        .containsExactly("jobs -> plan (upward)");
    assertThat(violations(Map.of("policy", Set.of("switches"), "switches", Set.of("policy"))))
        .containsExactly("policy -> switches (same layer)", "switches -> policy (same layer)");
    assertThat(violations(Map.of("newpackage", Set.of("common"))))
        .containsExactly("newpackage: in no layer of ArchitectureTest.LAYERS");
  }

  /** Every use of a package of the same or a higher layer, and every package not in a layer. */
  static List<String> violations(Map<String, Set<String>> uses) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, Set<String>> e : new TreeMap<>(uses).entrySet()) {
      int from = layerOf(e.getKey());
      if (from < 0) {
        out.add(e.getKey() + ": in no layer of ArchitectureTest.LAYERS");
        continue;
      }
      for (String to : new TreeSet<>(e.getValue())) {
        int layer = layerOf(to);
        if (to.equals(e.getKey()) || layer > from) {
          continue;
        }
        out.add(e.getKey() + " -> " + to + (layer < 0 ? " (in no layer)"
            : layer == from ? " (same layer)" : " (upward)"));
      }
    }
    return out;
  }

  private static int layerOf(String pkg) {
    for (int i = 0; i < LAYERS.size(); i++) {
      if (LAYERS.get(i).contains(pkg)) {
        return i;
      }
    }
    return -1;
  }

  private static Path classesRoot() throws URISyntaxException {
    return Path.of(SchedulerServer.class.getProtectionDomain().getCodeSource().getLocation()
        .toURI());
  }

  /** Package -> the scheduler packages its classes name. */
  static Map<String, Set<String>> packageUses(Path root) throws IOException {
    Map<String, Set<String>> uses = new TreeMap<>();
    try (Stream<Path> files = Files.walk(root.resolve(BASE))) {
      for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".class"))::iterator) {
        String from = packageOf(root.relativize(f).toString().replace('\\', '/'));
        Set<String> to = uses.computeIfAbsent(from, k -> new TreeSet<>());
        try (InputStream in = Files.newInputStream(f)) {
          for (String s : utf8Constants(in)) {
            Matcher m = NAME.matcher(s);
            while (m.find()) {
              to.add(packageOf(BASE + m.group(1)));
            }
          }
        }
      }
    }
    return uses;
  }

  /** "io/datcp/scheduler/plan/Replanner.class" -> "plan"; a root class -> "". */
  private static String packageOf(String path) {
    String rest = path.substring(BASE.length());
    int slash = rest.lastIndexOf('/');
    return slash < 0 ? "" : rest.substring(0, slash).replace('/', '.');
  }

  /** The UTF-8 entries of a class file's constant pool (JVMS §4.4): names and descriptors. */
  private static List<String> utf8Constants(InputStream stream) throws IOException {
    DataInputStream in = new DataInputStream(stream);
    if (in.readInt() != 0xCAFEBABE) {
      throw new IOException("not a class file");
    }
    in.readUnsignedShort(); // minor
    in.readUnsignedShort(); // major
    int count = in.readUnsignedShort();
    List<String> out = new ArrayList<>();
    for (int i = 1; i < count; i++) {
      int tag = in.readUnsignedByte();
      switch (tag) {
        case 1 -> out.add(in.readUTF());
        case 7, 8, 16, 19, 20 -> in.skipBytes(2);
        case 15 -> in.skipBytes(3);
        case 3, 4, 9, 10, 11, 12, 17, 18 -> in.skipBytes(4);
        case 5, 6 -> {
          in.skipBytes(8);
          i++; // takes two entries
        }
        default -> throw new IOException("unknown constant pool tag " + tag);
      }
    }
    return out;
  }
}
