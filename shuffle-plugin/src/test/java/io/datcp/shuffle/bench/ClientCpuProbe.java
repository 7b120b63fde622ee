package io.datcp.shuffle.bench;

import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.datcp.shuffle.FakeAgent;
import io.datcp.shuffle.agent.AgentClient;
import io.datcp.shuffle.agent.AgentConfig;
import io.datcp.shuffle.agent.EventsClient;
import io.datcp.shuffle.agent.ReportTransport;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.slf4j.LoggerFactory;

/**
 * Not a test: what the plugin's agent client costs a fresh JVM, gRPC ({@link AgentClient},
 * Forward) against the events socket ({@link EventsClient}), side by side in one run. Each sample
 * is a child JVM that builds one client, sends N batches of E small events to a fake agent in
 * this process and closes the client; it prints its own CPU time (user + system, all threads;
 * the JVM counts it in 10 ms ticks here) at each step, its logging started before the first
 * (as a reduce task's is). Variants alternate in order round by round. Run it with
 * shuffle-plugin/bench/run-client-cpu.sh.
 */
public final class ClientCpuProbe {
  private enum Variant { GRPC, EVENTS }

  /** CPU seconds of one child: before its client, then after each step. */
  private record Sample(double boot, double construct, double send, double close) {
    double clientTotal() {
      return construct + send + close;
    }

    double process() {
      return boot + clientTotal();
    }
  }

  private ClientCpuProbe() { }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("--child")) {
      child(Variant.valueOf(args[1]), args[2], args[3], Integer.parseInt(args[4]),
          Integer.parseInt(args[5]));
      return;
    }
    Map<String, String> opt = options(args);
    int rounds = Integer.parseInt(opt.getOrDefault("--rounds", "10"));
    int batches = Integer.parseInt(opt.getOrDefault("--batches", "50"));
    int events = Integer.parseInt(opt.getOrDefault("--events", "5"));
    List<String> childOpts = Arrays.asList(
        opt.getOrDefault("--child-opts", "-Xmx384m -XX:TieredStopAtLevel=1").split(" "));
    Path dir = Files.createTempDirectory("datcp-cpu-probe");
    // the fake agent's Netty warns once per gRPC connection about an option a Unix socket lacks
    org.apache.log4j.Logger.getLogger("io.grpc.netty.shaded.io.netty.bootstrap.ServerBootstrap")
        .setLevel(org.apache.log4j.Level.ERROR);
    Map<Variant, List<Sample>> samples = new EnumMap<>(Variant.class);
    System.out.printf(Locale.ROOT, "%d rounds; each child JVM (%s) builds a client and sends %d"
        + " batches of %d events; CPU seconds (user + system) of the child%n", rounds,
        String.join(" ", childOpts), batches, events);
    System.out.printf(Locale.ROOT, "%-6s %-7s %8s %10s %8s %8s %13s %8s%n", "round", "client",
        "jvm boot", "construct", "send", "close", "client total", "process");
    try (FakeAgent agent = new FakeAgent(dir)) {
      for (int r = 1; r <= rounds; r++) {
        List<Variant> order = r % 2 == 1 ? List.of(Variant.GRPC, Variant.EVENTS)
            : List.of(Variant.EVENTS, Variant.GRPC);
        for (Variant v : order) {
          Sample s = run(v, agent, batches, events, childOpts);
          samples.computeIfAbsent(v, k -> new ArrayList<>()).add(s);
          System.out.printf(Locale.ROOT, "%-6d %-7s %8.3f %10.3f %8.3f %8.3f %13.3f %8.3f%n",
              r, name(v), s.boot(), s.construct(), s.send(), s.close(), s.clientTotal(),
              s.process());
        }
      }
    }
    System.out.println();
    System.out.printf(Locale.ROOT, "median of %d    %10s %10s %12s%n", rounds, "gRPC", "events",
        "gRPC/events");
    Map<String, java.util.function.ToDoubleFunction<Sample>> columns = new LinkedHashMap<>();
    columns.put("construct", Sample::construct);
    columns.put("send", Sample::send);
    columns.put("close", Sample::close);
    columns.put("client total", Sample::clientTotal);
    columns.put("jvm boot", Sample::boot);
    columns.put("process", Sample::process);
    columns.forEach((label, f) -> {
      double g = median(samples.get(Variant.GRPC), f);
      double e = median(samples.get(Variant.EVENTS), f);
      System.out.printf(Locale.ROOT, "%-15s %10.3f %10.3f %12s%n", label, g, e,
          e > 0 ? String.format(Locale.ROOT, "%.1fx", g / e) : "-");
    });
  }

  private static String name(Variant v) {
    return v == Variant.GRPC ? "gRPC" : "events";
  }

  private static Map<String, String> options(String[] args) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) {
        throw new IllegalArgumentException("usage: [--rounds N] [--batches N] [--events N]"
            + " [--child-opts 'JVM OPTIONS'], got " + args[i]);
      }
      m.put(args[i], args[i + 1]);
    }
    return m;
  }

  private static double median(List<Sample> samples,
      java.util.function.ToDoubleFunction<Sample> f) {
    double[] v = samples.stream().mapToDouble(f).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }

  private static Sample run(Variant v, FakeAgent agent, int batches, int events,
      List<String> childOpts) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    cmd.addAll(childOpts);
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"),
        ClientCpuProbe.class.getName(), "--child", v.name(), agent.socket.toString(),
        agent.eventsSocket.toString(), Integer.toString(batches), Integer.toString(events)));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String result = null;
    StringBuilder all = new StringBuilder();
    try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
        StandardCharsets.UTF_8))) {
      for (String line; (line = out.readLine()) != null; ) {
        all.append(line).append('\n');
        if (line.startsWith("cpu ")) {
          result = line;
        }
      }
    }
    if (p.waitFor() != 0 || result == null) {
      throw new IOException("child " + v + " failed:\n" + all);
    }
    String[] f = result.split(" ");
    return new Sample(Double.parseDouble(f[1]), Double.parseDouble(f[2]),
        Double.parseDouble(f[3]), Double.parseDouble(f[4]));
  }

  private static double cpuSeconds() {
    return ((com.sun.management.OperatingSystemMXBean)
        ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
  }

  private static void child(Variant v, String socket, String eventsSocket, int batches,
      int events) {
    // a reduce task's logging is up before the plugin starts: not the client's cost
    LoggerFactory.getLogger(ClientCpuProbe.class).debug("probe child {}", v);
    double boot = cpuSeconds();
    AgentConfig config = new AgentConfig(socket, eventsSocket, Duration.ofMillis(5),
        Duration.ofSeconds(10), 10_000, 500, Duration.ofSeconds(5));
    ReportTransport client = v == Variant.GRPC ? new AgentClient(config, "cpu probe")
        : new EventsClient(config, "cpu probe");
    double built = cpuSeconds();
    String reporter = v + "-" + ProcessHandle.current().pid();
    for (int b = 1; b <= batches; b++) {
      ShuffleReport.Builder report = ShuffleReport.newBuilder().setReporterHost("probe-host")
          .setReporterId(reporter).setBatchId(b);
      for (int e = 0; e < events; e++) {
        report.addEvents(ShuffleEvent.newBuilder().setTimeUnixNanos(System.nanoTime())
            .setFetchFinished(FetchFinished.newBuilder().setJobId("job_1700000000000_0001")
                .setReduceId(0).addMapIds(e).setSourceHost("nm1").setBytes(1_000_000)
                .setDurationNanos(50_000_000)));
      }
      if (client.forward(report.build()).getAccepted() != events) {
        throw new IllegalStateException("batch " + b + " not accepted");
      }
    }
    double sent = cpuSeconds();
    client.close();
    double closed = cpuSeconds();
    System.out.printf(Locale.ROOT, "cpu %.4f %.4f %.4f %.4f%n", boot, built - boot, sent - built,
        closed - sent);
  }
}
