package io.datcp.scheduler.jobs;

/**
 * When the planner expected a job's last map to end, by the rule it plans with and by the rules
 * it used before it knew each running map's start, so that all can be held against the real end
 * (issue 19 item 8). Times are nanoseconds since the Unix epoch, durations nanoseconds.
 *
 * @param madeUnixNanos when the planner made the estimate (scheduler time of the report)
 * @param mapsDone maps done then
 * @param mapsRunning maps running then; -1 when no report said
 * @param runningMapsSinceUnixNanos when the earliest running map started; 0 when unknown
 * @param medianMapNanos median map run time then
 * @param waves rounds of maps not yet started over the slots, after the running ones
 * @param mapWaveUnixNanos the estimate the planner uses (§2.2), by {@code rule}
 * @param lastCompletionUnixNanos the rule without the running maps' start: the last map
 *     completion plus the maps left in waves of the median over the job's slots
 * @param earliestStartUnixNanos the rule with only the earliest running map's start: the
 *     running maps end a median after it, the maps not started in waves after that; 0 when that
 *     start is unknown
 * @param rule which rule {@code mapWaveUnixNanos} follows
 */
public record MapEndEstimate(long madeUnixNanos, int mapsDone, int mapsRunning,
    long runningMapsSinceUnixNanos, long medianMapNanos, long waves, long mapWaveUnixNanos,
    long lastCompletionUnixNanos, long earliestStartUnixNanos, Rule rule) {

  /** How the planner's estimate was made, from what the reports told. */
  public enum Rule {
    /**
     * Each running map's start known: each ends a median after its start (not before now), the
     * maps not started take the slot that frees first, one median each (list scheduling).
     */
    EACH_START,
    /** Only the earliest running map's start known: all slots free a median after it. */
    EARLIEST_START,
    /** No start known: the maps left run in waves after the last completion. */
    LAST_COMPLETION
  }

  /** Whether every rule gives the same end as in {@code other}, whenever it was made. */
  public boolean sameEnds(MapEndEstimate other) {
    return other != null && mapWaveUnixNanos == other.mapWaveUnixNanos
        && lastCompletionUnixNanos == other.lastCompletionUnixNanos
        && earliestStartUnixNanos == other.earliestStartUnixNanos;
  }
}
