package io.datcp.scheduler.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class JobSlotsTest {
  private static final long MS = 1_000_000L;

  @Test
  void measuringKeepsTheSlotsAlreadyHandedOutAheadOfNow() {
    JobSlots slots = new JobSlots(50, 0);
    // four workers took the slots at 0, 20, 40 and 60 ms and wait on the timer
    for (int i = 0; i < 4; i++) {
      slots.delay(0);
    }
    slots.measureFrom(10 * MS);
    // the next job goes after them (80 ms), not at 10 ms beside the ones already waiting: the
    // rate the window measures is the set one, not twice it for its first slots
    assertEquals(70 * MS, slots.delay(10 * MS));
  }

  @Test
  void measuringForgivesTheJobsTheWarmUpFellBehindOn() {
    JobSlots slots = new JobSlots(50, 0);
    slots.delay(0);
    slots.measureFrom(1_000 * MS);
    // behind by almost a second: the window starts the next job now and owes no catch-up
    assertEquals(0, slots.delay(1_000 * MS));
    assertEquals(20 * MS, slots.delay(1_000 * MS));
    assertEquals(0, slots.lagNanos());
  }

  @Test
  void lagCountsOnlyTheMeasuredSlots() {
    JobSlots slots = new JobSlots(50, 0);
    slots.delay(500 * MS); // late by 500 ms during the warm-up: not the window's
    slots.measureFrom(500 * MS);
    slots.delay(530 * MS); // the 500 ms slot, 30 ms late
    assertEquals(30 * MS, slots.lagNanos());
  }
}
