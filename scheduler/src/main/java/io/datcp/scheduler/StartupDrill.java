package io.datcp.scheduler;

import com.linecorp.armeria.client.ClientFactory;
import io.datcp.scheduler.config.SchedulerConf;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * startup.drillSeconds: before the scheduler listens, a throwaway instance of it (same limits,
 * no outside world: {@link SchedulerConf#forDrill}, a temporary data directory, loopback ports)
 * takes the largest valid messages one node can send ({@link WorstCalls}) through the whole gRPC
 * stack for the set time. The hostile-load benchmark found that an attacker's first seconds
 * cost honest calls most because the JIT then compiles the attack's code paths (two thirds of
 * them Armeria's, Netty's and protobuf's) on the cores that serve them; a second attack on the
 * same JVM met the target. Compiled code is per JVM, not per instance, so the real instance
 * starts with those paths compiled. What the drill cannot warm: the TLS handshake and the
 * ResourceManager's answers (its instance has neither), and messages of a shape it does not send.
 */
public final class StartupDrill {
  /** The drill's nodes are HOST-0, HOST-1, ...; their tokens exist in the throwaway instance. */
  static final String HOST = "drill";
  /**
   * Nodes sending at once. One node's calls are soon refused by its byte budget and answered
   * only when it refills (a few a second), too few to reach the JIT's last tier in seconds;
   * each node has a budget of its own.
   */
  private static final int SENDERS = 8;
  /** Closed loops per kind of call and node. */
  private static final int LOOPS = 2;
  /** Update streams opened and never read (watch.maxStreamsPerHost's default). */
  private static final int UNREAD_STREAMS = 8;
  private static final Duration IN_FLIGHT_GRACE = Duration.ofSeconds(10);
  private static final Logger LOG = LoggerFactory.getLogger(StartupDrill.class);

  /** What one drill sent: calls answered, those refused whole, and its length with set-up. */
  public record Result(long calls, long refusedCalls, double seconds) {}

  private StartupDrill() {}

  /** Runs a drill of {@code length} against a throwaway instance configured from {@code conf}. */
  public static Result run(SchedulerConf conf, Duration length)
      throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("datcp-drill");
    long start = System.nanoTime();
    try (SchedulerServer server = SchedulerServer.builder().dataDir(dir).grpcPort(0)
        .httpPort(0).conf(conf.forDrill()).build().start();
        ClientFactory factory = ClientFactory.builder().build();
        ClientFactory streamFactory = ClientFactory.builder().build()) {
      List<WorstCalls> senders = new ArrayList<>();
      for (int i = 0; i < SENDERS; i++) {
        String host = HOST + "-" + i;
        WorstCalls calls = new WorstCalls("http://127.0.0.1:" + server.grpcPort(),
            server.nodes().mint(host), host, "job_drill" + i + "_", factory, streamFactory);
        calls.start(UNREAD_STREAMS, LOOPS, Long.MAX_VALUE);
        senders.add(calls);
      }
      TimeUnit.NANOSECONDS.sleep(length.toNanos());
      senders.forEach(WorstCalls::stop);
      long graceEnd = System.nanoTime() + IN_FLIGHT_GRACE.toNanos();
      while (senders.stream().anyMatch(c -> c.inFlight() > 0) && System.nanoTime() < graceEnd) {
        TimeUnit.MILLISECONDS.sleep(10);
      }
      Result r = new Result(senders.stream().mapToLong(WorstCalls::answered).sum(),
          senders.stream().mapToLong(WorstCalls::refusedCalls).sum(),
          (System.nanoTime() - start) / 1e9);
      LOG.info("start-up drill: {} calls of the largest valid kinds answered in {} s ({} refused"
          + " whole)", r.calls(), String.format(Locale.ROOT, "%.1f", r.seconds()),
          r.refusedCalls());
      return r;
    } finally {
      deleteTree(dir);
      // The throwaway instance's jobs and map outputs (hundreds of MB) are garbage now, most of
      // it in the old generation, which G1 would keep until its heap fills to the marking
      // threshold: the real instance would start with a third of -Xmx1g held and collect more
      // often. One full collection before listening returns it.
      System.gc();
    }
  }

  private static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
  }
}
