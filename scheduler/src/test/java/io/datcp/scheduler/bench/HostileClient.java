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
   * The attacker in a JVM of its own (LoadBenchmark --hostile-jvm): the honest client's
   * latencies then exclude this JVM's allocation, collections and safepoints. Attacks for
   * {@code args[3]} seconds, then prints its summary line.
   *
   * @param args target URI, node token, closed loops per kind, seconds, unread streams, calls
   *     per loop (0: no limit)
   */
  public static void main(String[] args) throws InterruptedException {
    ClientFactory own = ClientFactory.builder().build();
    ClientFactory ownStreams = ClientFactory.builder().build();
    HostileClient attacker = new HostileClient(args[0], args[1], own, ownStreams,
        Integer.parseInt(args[2]), Long.parseLong(args[5]));
    long start = System.nanoTime();
    attacker.start(Integer.parseInt(args[4]));
    TimeUnit.SECONDS.sleep(Long.parseLong(args[3]));
    attacker.stop();
    System.out.println(attacker.summary((System.nanoTime() - start) / 1e9));
    own.close();
    ownStreams.close();
    System.exit(0);
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
