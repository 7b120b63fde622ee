package io.datcp.scheduler.common;

/**
 * A bound on what peers may make the scheduler hold is reached (a capacity, global or of one
 * peer, is full); adapters answer RESOURCE_EXHAUSTED. The message names the limit's config key
 * and value, so an operator seeing it in an agent's log knows what to raise.
 */
public final class LimitReachedException extends RuntimeException {
  public LimitReachedException(String key, long limit, String what) {
    // No stack trace: thrown for each refused event of a peer's batch, where it is the answer,
    // not a fault; a hostile peer's batches made filling in stack traces a tenth of the
    // scheduler's allocation (JFR, hostile-load benchmark).
    super(key + " (" + limit + ") reached: " + what, null, false, false);
  }
}
