package io.datcp.agent.kernel;

/**
 * A flow's statistics as the congestion control last published them (struct
 * datcp_flow_stats, the fields the agent uses).
 *
 * @param bytesAcked bytes acknowledged since the epoch began
 * @param startNs CLOCK_MONOTONIC time the kernel first saw the epoch
 * @param fctNs completion time, nanoseconds; 0 while unfinished
 * @param epoch the epoch these statistics belong to
 * @param precedence precedence P of Algorithm 1
 * @param quenchState 0 none, 1 suspended, 2 killed
 * @param finished every byte acknowledged
 * @param met finished by the deadline (or no deadline)
 */
public record FlowStats(long bytesAcked, long startNs, long fctNs, int epoch, double precedence,
    int quenchState, boolean finished, boolean met) {}
