package io.datcp.scheduler.policy;

/**
 * What the operator's rules say about a job's flows.
 *
 * @param rule name of the matching rule, or empty when the defaults applied
 */
public record PolicyDecision(double importance, double phi, FlowMode mode, QuenchMode quenchMode,
    String rule) {}
