package io.datcp.scheduler.ha;

import java.util.Optional;

/**
 * Whether this scheduler is the one that plans and serves agents and plugins: always, for a
 * single scheduler ({@link SoleLeadership}); while it holds the ZooKeeper election, in the HA
 * mode ({@link ZooKeeperLeadership}).
 */
public interface Leadership extends AutoCloseable {
  /** Joins as {@code address} (host:port of the gRPC port, what followers name to clients). */
  void start(String address);

  boolean isLeader();

  /** The current leader's gRPC address; empty while none is elected or known. */
  Optional<String> leader();

  /** Runs {@code listener} each time this scheduler stops leading (never for a sole one). */
  void onLoss(Runnable listener);

  /** "single" or "zookeeper", as /metrics and /api/v1/ha show it. */
  String mode();

  /** Leaves the election; with a clean close another scheduler leads at once. */
  @Override
  void close();
}
