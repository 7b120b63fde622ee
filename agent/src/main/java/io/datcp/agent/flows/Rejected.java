package io.datcp.agent.flows;

/** A registration (or an end) refused as a whole; nothing was changed. */
public final class Rejected extends Exception {

  /** Why, as the gRPC status the adapter answers with. */
  public enum Reason {
    INVALID_ARGUMENT, ALREADY_EXISTS, RESOURCE_EXHAUSTED, PERMISSION_DENIED
  }

  private final Reason reason;

  Rejected(Reason reason, String message) {
    super(message, null, false, false);
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }
}
