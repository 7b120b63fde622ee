package io.datcp.scheduler.ingest;

/**
 * An event (or flow outcome) of a batch refused on its own; the batch's others were applied.
 *
 * @param index position in the batch, from 0
 * @param message names the field, or what the reporting host may not report
 */
public record Refused(int index, Reason reason, String message) {
  public enum Reason {
    /** A field out of range (a call would be INVALID_ARGUMENT). */
    INVALID,
    /** The reporting host may not report it (a call would be PERMISSION_DENIED). */
    NOT_PERMITTED,
    /** A bound on what peers may make the scheduler hold is reached (RESOURCE_EXHAUSTED). */
    LIMIT
  }
}
