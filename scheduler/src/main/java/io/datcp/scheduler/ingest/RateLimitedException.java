package io.datcp.scheduler.ingest;

/** A host sent reports faster than its limit; the batch was refused whole. */
public final class RateLimitedException extends RuntimeException {
  public RateLimitedException(String host) {
    super("report rate limit exceeded for host '" + host + "'; retry later", null, false, false);
  }
}
