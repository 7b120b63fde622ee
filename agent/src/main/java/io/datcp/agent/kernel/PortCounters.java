package io.datcp.agent.kernel;

import java.util.List;

/**
 * Counters of one emulated switch port (struct datcp_port_state).
 *
 * @param peakQueueBytes highest virtual queue of the whole port, bytes
 * @param bands per strict-priority band, band 0 first
 */
public record PortCounters(long peakQueueBytes, List<Band> bands) {

  /**
   * Counters of one band (struct datcp_band_counters) and its current virtual queue.
   *
   * @param bytes bytes enqueued
   * @param packets packets enqueued
   * @param marks packets marked CE
   * @param drops packets dropped (buffer full)
   * @param peakQueueBytes highest virtual queue of the band, bytes
   * @param queueBytes virtual queue now, bytes
   */
  public record Band(long bytes, long packets, long marks, long drops, long peakQueueBytes,
      long queueBytes) {}
}
