package io.datcp.scheduler.flows;

import static io.datcp.scheduler.common.InvalidFieldException.require;

/**
 * How one shuffle flow ended, as an agent saw it. Times are nanoseconds since the Unix epoch.
 *
 * @param deadlineUnixNanos 0 = the flow had no deadline
 * @param finishUnixNanos 0 = never finished (killed)
 * @param flow the flow's full identity (epoch, 4-tuple) when the agent knew it, else null
 */
public record FlowOutcome(String jobId, int reduceId, String sourceHost, String destinationHost,
    long bytes, long startUnixNanos, long deadlineUnixNanos, long finishUnixNanos, boolean met,
    QuenchOutcome quench, FlowKey flow) {

  /** Checks every field, naming the first bad one under {@code prefix}. */
  public void validate(String prefix) {
    require(jobId != null && !jobId.isEmpty() && jobId.length() <= 128, prefix, "jobId",
        "must be a job id of 1-128 characters");
    require(reduceId >= 0, prefix, "reduceId", "must be >= 0");
    require(sourceHost != null && sourceHost.length() <= 255, prefix, "sourceHost",
        "longer than 255 characters");
    require(destinationHost != null && destinationHost.length() <= 255,
        prefix, "destinationHost", "longer than 255 characters");
    require(bytes >= 0, prefix, "bytes", "must be >= 0 (bytes)");
    require(startUnixNanos > 0, prefix, "startUnixNanos",
        "must be nanoseconds since the epoch");
    require(deadlineUnixNanos >= 0, prefix, "deadlineUnixNanos", "must be >= 0");
    require(finishUnixNanos == 0 || finishUnixNanos >= startUnixNanos, prefix, "finishUnixNanos",
        "must be 0 (never finished) or not before startUnixNanos");
    require(quench != null, prefix, "quench", "is required");
    if (flow != null) {
      flow.validate(prefix + "flow.");
      require(flow.jobId().equals(jobId) && flow.reduceId() == reduceId, prefix, "flow",
          "names job " + flow.jobId() + " reduce " + flow.reduceId() + ", not the outcome's");
    }
  }
}
