package io.datcp.scheduler.flows;

/**
 * A changed flow policy pushed to an agent, or the end of a job.
 *
 * @param timeUnixNanos when the change was decided, nanoseconds since the Unix epoch
 * @param jobFinished true: the job is over, drop its cache entries
 */
public record PolicyUpdate(long timeUnixNanos, FlowPolicy policy, boolean jobFinished) {}
