package io.datcp.scheduler.serve;

import io.datcp.scheduler.flows.FlowKey;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.QuenchMode;

/**
 * What an agent writes into the kernel for one shuffle flow.
 *
 * @param deadlineUnixNanos absolute deadline, nanoseconds since the Unix epoch; 0 = none
 * @param deadlineNanos deadline relative to the answer, nanoseconds; 0 = none
 * @param desiredRateBitsPerSecond R_desired = size / deadline (§3.1), bits/s; 0 = none
 * @param importance I of Algorithm 1, dimensionless in [0, 10]
 * @param phi share of importance in precedence, in [0, 1]
 * @param reason why the planner chose this deadline
 * @param rule the operator rule that set importance/phi/mode/quench, empty for defaults
 * @param flow the flow's full identity when the lookup named one, else null
 */
public record FlowPolicy(String jobId, int reduceId, long deadlineUnixNanos, long deadlineNanos,
    long desiredRateBitsPerSecond, double importance, double phi, FlowMode mode,
    QuenchMode quenchMode, String reason, String rule, FlowKey flow) {}
