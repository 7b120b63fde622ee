package io.datcp.shuffle.agent;

import io.datcp.proto.v1.ShuffleEvent;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Instant;

/** Small helpers shared by both sides of the plugin. */
public final class Events {
  private Events() { }

  /** An event builder stamped with the current time (nanoseconds since the Unix epoch). */
  public static ShuffleEvent.Builder now() {
    Instant t = Instant.now();
    return ShuffleEvent.newBuilder().setTimeUnixNanos(t.getEpochSecond() * 1_000_000_000L + t.getNano());
  }

  /** This host's name as the scheduler knows NodeManagers. */
  public static String localHostName() {
    try {
      return InetAddress.getLocalHost().getCanonicalHostName();
    } catch (UnknownHostException e) {
      return "localhost";
    }
  }
}
