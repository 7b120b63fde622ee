package io.datcp.scheduler.bench;

import com.linecorp.armeria.client.ClientFactory;
import io.datcp.scheduler.WorstCalls;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Issue 18 item 5's attacker: one node with a valid token of its own (host "evil") sending the
 * largest valid messages it can ({@link WorstCalls}) as fast as the answers come back, on its
 * own connection, and watch.maxStreamsPerHost update streams it never reads.
 */
public final class HostileClient {
  private static final String HOST = "evil";

  private final WorstCalls calls;
  private final int loops;
  private final long callsPerLoop;

  /**
   * @param factory for its calls
   * @param streamFactory for its unread update streams
   * @param loops closed loops per kind of call
   * @param callsPerLoop calls each loop sends; 0: no limit
   */
  HostileClient(String uri, String token, ClientFactory factory, ClientFactory streamFactory,
      int loops, long callsPerLoop) {
    calls = new WorstCalls(uri, token, HOST, "job_666_", factory, streamFactory);
    this.loops = loops;
    this.callsPerLoop = callsPerLoop > 0 ? callsPerLoop : Long.MAX_VALUE;
  }

  /** @param unreadStreams update streams to open and never read (watch.maxStreamsPerHost: 8) */
  void start(int unreadStreams) {
    calls.start(unreadStreams, loops, callsPerLoop);
  }

  /**
   * The attacker in a JVM of its own (LoadBenchmark --hostile-attacker, started by
   * run-hostile.sh ATTACKER_JVM): the honest clients' JVM then neither builds its messages nor
   * compiles its code, as a real attacker's machine is not the honest nodes'. First, for
   * {@code warmupSeconds}, it attacks a throwaway scheduler of its own ({@code warmupUri}), so
   * its sending path is compiled before it meets the measured one; then, each time the
   * benchmark starts an attacked window, it attacks {@code uri} for {@code seconds} on new
   * connections and hands its summary back.
   *
   * @param out where the warm-up's summary is printed
   */
  static void attackFromOwnJvm(String warmupUri, String warmupToken, int warmupSeconds,
      String uri, String token, int seconds, int rounds, int loops, int unreadStreams,
      long callsPerLoop, AttackSignals signals, java.io.PrintStream out)
      throws java.io.IOException, InterruptedException {
    if (warmupSeconds > 0) {
      out.println(attackMeasuringJvm(warmupUri, warmupToken, warmupSeconds, loops,
          unreadStreams, callsPerLoop, "warm-up, throwaway scheduler"));
    }
    signals.ready();
    for (int round = 1; round <= rounds; round++) {
      signals.awaitAttack(round);
      signals.attackSummary(round, attackMeasuringJvm(uri, token, seconds, loops, unreadStreams,
          callsPerLoop, String.format(Locale.ROOT, "own JVM, %d s warm-up", warmupSeconds)));
    }
  }

  /**
   * {@link #attack} with what it cost this JVM: its CPU and its JIT's compile time (what the
   * warm-up is for: little of it should be left in the measured attack).
   */
  private static String attackMeasuringJvm(String uri, String token, int seconds, int loops,
      int unreadStreams, long callsPerLoop, String what)
      throws java.io.IOException, InterruptedException {
    var jit = java.lang.management.ManagementFactory.getCompilationMXBean();
    long cpuBefore = LoadBenchmark.cpuTicks("self");
    long jitBefore = jit.getTotalCompilationTime();
    String summary = attack(uri, token, seconds, loops, unreadStreams, callsPerLoop);
    // /proc/PID/stat counts CPU in clock ticks of 10 ms (USER_HZ 100)
    return String.format(Locale.ROOT, "%s (%s; its JVM %.1f%% of one core, JIT %d ms"
        + " compiling, elapsed)", summary, what, (LoadBenchmark.cpuTicks("self") - cpuBefore) * 10.0
        / 10 / seconds, jit.getTotalCompilationTime() - jitBefore);
  }

  /** One attack of {@code seconds} on connections of its own; returns its summary line. */
  private static String attack(String uri, String token, int seconds, int loops,
      int unreadStreams, long callsPerLoop) throws InterruptedException {
    ClientFactory own = ClientFactory.builder().build();
    ClientFactory ownStreams = ClientFactory.builder().build();
    HostileClient attacker = new HostileClient(uri, token, own, ownStreams, loops, callsPerLoop);
    long start = System.nanoTime();
    attacker.start(unreadStreams);
    TimeUnit.SECONDS.sleep(seconds);
    attacker.stop();
    String summary = attacker.summary((System.nanoTime() - start) / 1e9);
    own.close();
    ownStreams.close();
    return summary;
  }

  void stop() {
    calls.stop();
  }

  String summary(double secs) {
    return String.format(Locale.ROOT, "attacker         %10.0f calls/s answered (%.0f MB/s sent),"
        + " %d calls refused whole, %d events/outcomes refused one by one",
        calls.answered() / secs, calls.bytesSent() / 1e6 / secs, calls.refusedCalls(),
        calls.refusedEvents());
  }
}
