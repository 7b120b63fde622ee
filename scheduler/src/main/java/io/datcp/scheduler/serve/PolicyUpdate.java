package io.datcp.scheduler.serve;

/**
 * A changed flow policy pushed to an agent, or the end of a job.
 *
 * @param timeUnixNanos when the change was decided, nanoseconds since the Unix epoch
 * @param jobFinished true: the job is over, drop its cache entries
 * @param snapshotEnd true on the message that ends a resync snapshot (policy null)
 */
public record PolicyUpdate(long timeUnixNanos, FlowPolicy policy, boolean jobFinished,
    boolean snapshotEnd) {
  /** A live update of one flow's policy. */
  public static PolicyUpdate of(long timeUnixNanos, FlowPolicy policy) {
    return new PolicyUpdate(timeUnixNanos, policy, false, false);
  }
}
