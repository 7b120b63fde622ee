package io.datcp.scheduler.jobs;

import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.policy.PolicyDecision;
import java.util.List;

/**
 * A job as the REST API and dashboard show it. Times are nanoseconds since the Unix epoch,
 * durations nanoseconds, sizes bytes; 0 means "not yet".
 *
 * @param completionTimeNanos from submission (or first report) to finish; 0 while running
 * @param shuffleTimeNanos from the first reduce's shuffle start to the last one's end (so far)
 * @param deadlineMetRatio share of this job's flows that met their deadline; -1 before any ended
 * @param firstMapEndEstimate the planner's first estimate of the last map's end, by the map-wave
 *     rule and the last-completion rule; null when it made none (no map of known length done
 *     while maps were left and a reduce shuffled)
 * @param latestMapEndEstimate its latest estimate that moved an end; null when none
 * @param mapEndEstimates every estimate that moved an end, oldest first (at most 64: beyond,
 *     the latest replaces the one before)
 */
public record JobView(String id, String name, String user, String queue, JobPriority priority,
    String state, int totalMaps, int mapsDone, int totalReduces, long startUnixNanos,
    long finishUnixNanos, long completionTimeNanos, long shuffleTimeNanos, long flows,
    long flowsMet, double deadlineMetRatio, PolicyDecision policy, List<ReduceView> reduces,
    MapEndEstimate firstMapEndEstimate, MapEndEstimate latestMapEndEstimate,
    List<MapEndEstimate> mapEndEstimates) {

  /**
   * One reduce and the deadline its flows currently get.
   *
   * @param remainingBytes map-output bytes still to fetch from maps that are done
   * @param deadlineUnixNanos the planner's current deadline for this job on the reduce's host
   */
  public record ReduceView(int id, String host, long shuffleStartUnixNanos,
      long shuffleFinishUnixNanos, long fetchedBytes, long remainingBytes,
      long deadlineUnixNanos, String deadlineReason) {}
}
