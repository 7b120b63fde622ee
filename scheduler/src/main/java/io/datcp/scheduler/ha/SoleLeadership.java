package io.datcp.scheduler.ha;

import java.util.Optional;

/** One scheduler with its local store (the default): it always leads. */
public final class SoleLeadership implements Leadership {
  private volatile String address;

  @Override
  public void start(String address) {
    this.address = address;
  }

  @Override
  public boolean isLeader() {
    return true;
  }

  @Override
  public Optional<String> leader() {
    return Optional.ofNullable(address);
  }

  @Override
  public void onLoss(Runnable listener) {
    // A sole scheduler leads as long as it runs.
  }

  @Override
  public String mode() {
    return "single";
  }

  @Override
  public void close() {
    address = null;
  }
}
