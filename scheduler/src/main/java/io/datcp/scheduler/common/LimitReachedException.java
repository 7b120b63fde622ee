package io.datcp.scheduler.common;

/**
 * A bound on what peers may make the scheduler hold is reached (a capacity, global or of one
 * peer, is full); adapters answer RESOURCE_EXHAUSTED. The message names the limit's config key
 * and value, so an operator seeing it in an agent's log knows what to raise.
 */
public final class LimitReachedException extends RuntimeException {
  public LimitReachedException(String key, long limit, String what) {
    super(key + " (" + limit + ") reached: " + what);
  }
}
