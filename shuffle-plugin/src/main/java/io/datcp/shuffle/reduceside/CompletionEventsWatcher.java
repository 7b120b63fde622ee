package io.datcp.shuffle.reduceside;

import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapLost;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.shuffle.agent.EventForwarder;
import io.datcp.shuffle.agent.Events;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URI;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.mapred.MapTaskCompletionEventsUpdate;
import org.apache.hadoop.mapred.TaskCompletionEvent;
import org.apache.hadoop.mapred.TaskUmbilicalProtocol;

/**
 * Passes every umbilical call through unchanged and reports the map outputs the reduce learns of
 * (getMapCompletionEvents): each succeeded map attempt as MapCompleted, and each attempt that
 * FAILED, was KILLED or went OBSOLETE as MapLost, the statuses Hadoop's reduce takes as "this
 * output is gone" (ShuffleSchedulerImpl.resolve: obsoleteMapOutput). TIPFAILED (the whole map
 * failed, so the job does) is not reported.
 *
 * <p>On YARN the events reach the reduce without the attempt's run time (Hadoop's TypeConverter
 * leaves it 0). Given {@link JobFacts}, each poll's events are reported on {@code asker}, never
 * on the shuffle's event-fetcher thread, in order, with what the AM knows: each map's run time
 * and finish (the event's time), the job's running maps, when the first of them started and
 * when each did.
 */
final class CompletionEventsWatcher implements InvocationHandler {
  private final TaskUmbilicalProtocol umbilical;
  private final EventForwarder events;
  private final String jobId;
  private final int reduce;
  /** Null: report as the events come, without asking YARN. */
  private final JobFacts facts;
  private final Executor asker;

  CompletionEventsWatcher(TaskUmbilicalProtocol umbilical, EventForwarder events, String jobId,
      int reduce) {
    this(umbilical, events, jobId, reduce, null, null);
  }

  CompletionEventsWatcher(TaskUmbilicalProtocol umbilical, EventForwarder events, String jobId,
      int reduce, JobFacts facts, Executor asker) {
    this.umbilical = umbilical;
    this.events = events;
    this.jobId = jobId;
    this.reduce = reduce;
    this.facts = facts;
    this.asker = asker;
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    Object result;
    try {
      result = method.invoke(umbilical, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
    if (result instanceof MapTaskCompletionEventsUpdate update
        && update.getMapTaskCompletionEvents().length > 0) {
      List<TaskCompletionEvent> polled = List.of(update.getMapTaskCompletionEvents());
      if (facts == null) {
        report(polled, null);
      } else {
        try {
          asker.execute(() -> report(polled, facts.runningMaps()));
        } catch (RejectedExecutionException e) {
          // the shuffle closed (or is closing): Hadoop's call must still succeed, unreported
        }
      }
    }
    return result;
  }

  /** {@code running}: null when unknown. */
  private void report(List<TaskCompletionEvent> polled, JobFacts.RunningMaps running) {
    for (TaskCompletionEvent e : polled) {
      switch (e.getTaskStatus()) {
        case SUCCEEDED -> events.offer(completed(e, running));
        case FAILED, KILLED, OBSOLETE -> {
          // an attempt killed before it had a container names no host: it left no output
          if (e.getTaskTrackerHttp() != null && !e.getTaskTrackerHttp().isEmpty()) {
            events.offer(Events.now().setMapLost(MapLost.newBuilder()
                .setJobId(jobId).setReduceId(reduce)
                .setMapId(e.getTaskAttemptId().getTaskID().getId())
                .setHost(host(e.getTaskTrackerHttp()))
                .setAttempt(e.getTaskAttemptId().getId())).build());
          }
        }
        default -> { }
      }
    }
  }

  private ShuffleEvent completed(TaskCompletionEvent e, JobFacts.RunningMaps running) {
    ShuffleEvent.Builder event = Events.now();
    // 0 on YARN (TypeConverter drops it): "unknown", unless the AM tells it
    long runMillis = e.getTaskRunTime();
    JobFacts.AttemptTimes times = facts == null ? null : facts.attempt(e.getTaskAttemptId());
    if (times != null) {
      runMillis = times.runMillis();
      event.setTimeUnixNanos(TimeUnit.MILLISECONDS.toNanos(times.finishMillis()));
    }
    MapCompleted.Builder map = MapCompleted.newBuilder();
    if (running != null) {
      running.startsMillis().forEach(ms -> map.addRunningMapStartsUnixNanos(
          TimeUnit.MILLISECONDS.toNanos(ms)));
    }
    return event.setMapCompleted(map
        .setJobId(jobId).setReduceId(reduce)
        .setMapId(e.getTaskAttemptId().getTaskID().getId())
        .setHost(host(e.getTaskTrackerHttp()))
        .setAttempt(e.getTaskAttemptId().getId())
        .setRunTimeNanos(TimeUnit.MILLISECONDS.toNanos(runMillis))
        // a reduce learns its partition's size only when it fetches it: the map side's
        // MapOutputIndexed tells the scheduler every partition's size before that
        .setOutputBytes(-1).setMapsRunning(running == null ? -1 : running.count())
        .setRunningMapsSinceUnixNanos(running == null ? 0
            : TimeUnit.MILLISECONDS.toNanos(running.sinceMillis()))).build();
  }

  private static String host(String trackerHttp) {
    try {
      String h = URI.create(trackerHttp).getHost();
      return h == null ? trackerHttp : h;
    } catch (IllegalArgumentException | NullPointerException e) {
      return String.valueOf(trackerHttp);
    }
  }
}
