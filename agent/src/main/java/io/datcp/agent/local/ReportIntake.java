package io.datcp.agent.local;

import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * What the agent does with a plugin's ShuffleReport, whichever way it came (the Forward rpc or
 * the events socket): checks the limits, answers a batch it has applied before as a duplicate
 * (by reporter_id and batch_id: the plugin resends a batch whose answer it did not get, with the
 * same id), and hands the events to the scheduler queue.
 */
final class ReportIntake {
  /** Most events in one report (the scheduler's batch bound). */
  static final int MAX_EVENTS = 1000;
  /**
   * Reporters whose last batch id is remembered, least recently heard forgotten first: a
   * reporter is one plugin forwarder (a reduce task attempt, a NodeManager), so this is far
   * more than a host has at once; one forgotten long ago that resends could be applied twice.
   */
  static final int MAX_REPORTERS = 4096;

  /** Which door a report came in by (the metrics' {@code via} tag). */
  enum Via { GRPC, EVENTS }

  /** A report refused whole; the message names the field. */
  static final class Refused extends Exception {
    Refused(String message) {
      super(message);
    }
  }

  private final Function<List<ShuffleEvent>, Integer> forward;
  /** Highest batch id applied per reporter (reporter_host + reporter_id); guarded by itself. */
  private final Map<String, Long> lastBatch = new LinkedHashMap<>(64, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
      return size() > MAX_REPORTERS;
    }
  };
  private final Map<Via, Counter> accepted = new EnumMap<>(Via.class);
  private final Map<Via, Counter> duplicates = new EnumMap<>(Via.class);
  private final Map<Via, Counter> invalid = new EnumMap<>(Via.class);

  /**
   * @param forward queues events for the scheduler, returns how many were queued
   */
  ReportIntake(Function<List<ShuffleEvent>, Integer> forward, MeterRegistry meters) {
    this.forward = forward;
    for (Via via : Via.values()) {
      accepted.put(via, counter(meters, via, "accepted"));
      duplicates.put(via, counter(meters, via, "duplicate"));
      invalid.put(via, counter(meters, via, "invalid"));
    }
  }

  private static Counter counter(MeterRegistry meters, Via via, String result) {
    return Counter.builder("datcp.agent.forward.reports")
        .tag("via", via.name().toLowerCase(Locale.ROOT)).tag("result", result)
        .description("plugin reports (Forward calls and events-socket messages)")
        .register(meters);
  }

  /**
   * Queues the report's events unless its batch was applied before (then nothing is queued and
   * the answer says duplicate). Batch ids of one reporter increase (proto: ShuffleReport), so a
   * batch id at or below the highest applied one is a resend. No reporter_id or batch_id 0:
   * no dedup.
   */
  ReportAck accept(ShuffleReport report, Via via) throws Refused {
    int n = report.getEventsCount();
    if (n > MAX_EVENTS) {
      invalid.get(via).increment();
      throw new Refused("events: " + n + " events, at most " + MAX_EVENTS + " per call");
    }
    for (int i = 0; i < n; i++) {
      if (report.getEvents(i).getEventCase() == ShuffleEvent.EventCase.EVENT_NOT_SET) {
        invalid.get(via).increment();
        throw new Refused("events[" + i + "]: no event set");
      }
    }
    if (!firstTime(report)) {
      duplicates.get(via).increment();
      return ReportAck.newBuilder().setDuplicate(true).build();
    }
    accepted.get(via).increment();
    return ReportAck.newBuilder().setAccepted(forward.apply(report.getEventsList())).build();
  }

  private boolean firstTime(ShuffleReport report) {
    long id = report.getBatchId();
    if (report.getReporterId().isEmpty() || id == 0) {
      return true;
    }
    String reporter = report.getReporterHost() + "\n" + report.getReporterId();
    synchronized (lastBatch) {
      Long last = lastBatch.get(reporter);
      if (last != null && Long.compareUnsigned(id, last) <= 0) {
        return false;
      }
      lastBatch.put(reporter, id);
      return true;
    }
  }
}
