package io.datcp.scheduler.ingest;

/**
 * An authenticated node asked for something only another node may do (report for another host,
 * or for a reduce or job it does not run); adapters answer PERMISSION_DENIED or 403.
 */
public final class NotPermittedException extends RuntimeException {
  public NotPermittedException(String message) {
    super(message, null, false, false);
  }
}
