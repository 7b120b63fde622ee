package io.datcp.scheduler.common;

/** Invalid input, naming the offending field; adapters answer 400 or INVALID_ARGUMENT. */
public final class InvalidFieldException extends IllegalArgumentException {
  private final String field;

  public InvalidFieldException(String field, String message) {
    super(field + ": " + message);
    this.field = field;
  }

  /** No stack trace: a peer's invalid input is the answer, not a fault (see LimitReachedException). */
  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }

  public String field() {
    return field;
  }

  /** Throws when {@code ok} is false. */
  public static void require(boolean ok, String field, String message) {
    if (!ok) {
      throw new InvalidFieldException(field, message);
    }
  }

  /**
   * Throws when {@code ok} is false, naming field {@code prefix + field}. Every event and outcome
   * of every report is validated: joining the name only on failure keeps a dozen string
   * concatenations per event off the request path.
   */
  public static void require(boolean ok, String prefix, String field, String message) {
    if (!ok) {
      throw new InvalidFieldException(prefix + field, message);
    }
  }
}
