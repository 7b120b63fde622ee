package io.datcp.scheduler.jobs;

/**
 * When the planner expected a job's last map to end, by the rule it plans with and by the rule it
 * used before it knew when the running maps started, so that both can be held against the real
 * end (issue 19 item 8). Times are nanoseconds since the Unix epoch, durations nanoseconds.
 *
 * @param madeUnixNanos when the planner made the estimate (scheduler time of the report)
 * @param mapsDone maps done then
 * @param mapsRunning maps running then; -1 when no report said
 * @param runningMapsSinceUnixNanos when the earliest running map started; 0 when unknown
 * @param medianMapNanos median map run time then
 * @param waves waves of maps not yet started, after the running ones (map-wave rule)
 * @param mapWaveUnixNanos the map-wave estimate the planner uses (§2.2): the running maps end a
 *     median after the earliest of them started, the maps not started in waves after that;
 *     equal to {@code lastCompletionUnixNanos} when the running maps' start is unknown
 * @param lastCompletionUnixNanos the rule without the running maps' start: the last map
 *     completion plus the maps left in waves of the median over the job's slots
 */
public record MapEndEstimate(long madeUnixNanos, int mapsDone, int mapsRunning,
    long runningMapsSinceUnixNanos, long medianMapNanos, long waves, long mapWaveUnixNanos,
    long lastCompletionUnixNanos) {

  /** Whether both rules give the same ends as {@code other}, whenever it was made. */
  public boolean sameEnds(MapEndEstimate other) {
    return other != null && mapWaveUnixNanos == other.mapWaveUnixNanos
        && lastCompletionUnixNanos == other.lastCompletionUnixNanos;
  }
}
