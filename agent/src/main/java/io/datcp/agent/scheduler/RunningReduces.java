package io.datcp.agent.scheduler;

import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.ShuffleEvent;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a scheduler that lost its job state must hear again of the reduces still shuffling on
 * this host: a new leader after a failover, or a scheduler that restarted. Job state is soft and
 * a scheduler ignores reports of a job it did not see start, so without this a running job's
 * flows go without deadlines until it ends. Kept from the events the agent forwards: each
 * reduce's ReduceStarted, the maps it learnt of (MapCompleted, MapLost) and the maps it fetched
 * (FetchFinished, sent again with 0 bytes and 0 duration: the maps are marked fetched, their
 * bytes count once, on the scheduler they were first reported to). The size of a map a fetch
 * carried alone is its partition for the reduce, state a MapCompleted carries (output_bytes): it
 * is sent again as one, so a new leader that has not heard the map nodes yet estimates the
 * maps left to fetch from the sizes fetched (the scheduler's mean known output) and plans the
 * job. A scheduler applies each of these idempotently (a known reduce, a known map, a size
 * known, a map already fetched change nothing), so sending them again to one that did not lose
 * them is harmless. A reduce is forgotten at its
 * ShuffleFinished and with its job (JobFinished, or the scheduler's job_finished); beyond
 * {@link #MAX_EVENTS} the reduce heard from least recently goes first.
 */
final class RunningReduces {
  /** Events kept over all reduces: a reduce of a 1,000-map job holds about 1,000. */
  static final int MAX_EVENTS = 100_000;

  /** job_id/reduce_id -> event key -> event, reduce heard from least recently first. */
  private final LinkedHashMap<String, LinkedHashMap<String, ShuffleEvent>> reduces =
      new LinkedHashMap<>(16, 0.75f, true);
  private int events;

  /** Takes note of forwarded events. */
  synchronized void record(List<ShuffleEvent> batch) {
    for (ShuffleEvent e : batch) {
      switch (e.getEventCase()) {
        case REDUCE_STARTED -> {
          var s = e.getReduceStarted();
          reduces.computeIfAbsent(key(s.getJobId(), s.getReduceId()),
              k -> new LinkedHashMap<>());
          put(s.getJobId(), s.getReduceId(), "started", e);
        }
        case MAP_COMPLETED -> {
          var m = e.getMapCompleted();
          put(m.getJobId(), m.getReduceId(), "done " + m.getMapId() + " " + m.getAttempt(), e);
        }
        case MAP_LOST -> {
          var m = e.getMapLost();
          put(m.getJobId(), m.getReduceId(), "lost " + m.getMapId() + " " + m.getAttempt(), e);
        }
        case FETCH_FINISHED -> {
          FetchFinished f = e.getFetchFinished();
          if (f.getMapIdsCount() == 1 && f.getBytes() > 0) {
            put(f.getJobId(), f.getReduceId(), "size " + f.getMapIds(0), ShuffleEvent.newBuilder()
                .setTimeUnixNanos(e.getTimeUnixNanos()).setMapCompleted(MapCompleted.newBuilder()
                    .setJobId(f.getJobId()).setReduceId(f.getReduceId())
                    .setMapId(f.getMapIds(0)).setHost(f.getSourceHost())
                    .setOutputBytes(f.getBytes()).setMapsRunning(-1)).build());
          }
          put(f.getJobId(), f.getReduceId(), "fetched " + f.getMapIdsList(), e.toBuilder()
              .setFetchFinished(f.toBuilder().setBytes(0).setDurationNanos(0)).build());
        }
        case SHUFFLE_FINISHED -> {
          var f = e.getShuffleFinished();
          forget(reduces.remove(key(f.getJobId(), f.getReduceId())));
        }
        case JOB_FINISHED -> dropJob(e.getJobFinished().getJobId());
        default -> { }
      }
    }
    Iterator<LinkedHashMap<String, ShuffleEvent>> oldest = reduces.values().iterator();
    while (events > MAX_EVENTS && oldest.hasNext()) {
      events -= oldest.next().size();
      oldest.remove();
    }
  }

  /** An event of a reduce whose start was seen; others cannot be sent again usefully. */
  private void put(String job, int reduce, String what, ShuffleEvent e) {
    Map<String, ShuffleEvent> r = reduces.get(key(job, reduce));
    if (r != null && r.put(what, e) == null) {
      events++;
    }
  }

  private void forget(Map<String, ShuffleEvent> reduce) {
    if (reduce != null) {
      events -= reduce.size();
    }
  }

  /** Forgets every reduce of {@code jobId}. */
  synchronized void dropJob(String jobId) {
    Iterator<Map.Entry<String, LinkedHashMap<String, ShuffleEvent>>> it =
        reduces.entrySet().iterator();
    String prefix = jobId + "/";
    while (it.hasNext()) {
      Map.Entry<String, LinkedHashMap<String, ShuffleEvent>> r = it.next();
      if (r.getKey().startsWith(prefix)) {
        events -= r.getValue().size();
        it.remove();
      }
    }
  }

  /** The events to send again, each reduce's ReduceStarted before its other events. */
  synchronized List<ShuffleEvent> events() {
    List<ShuffleEvent> all = new ArrayList<>(events);
    reduces.values().forEach(r -> all.addAll(r.values()));
    return all;
  }

  private static String key(String job, int reduce) {
    return job + "/" + reduce;
  }
}
