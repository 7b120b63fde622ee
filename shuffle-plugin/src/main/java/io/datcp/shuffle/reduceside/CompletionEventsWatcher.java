package io.datcp.shuffle.reduceside;

import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapLost;
import io.datcp.shuffle.agent.EventForwarder;
import io.datcp.shuffle.agent.Events;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URI;
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
 */
final class CompletionEventsWatcher implements InvocationHandler {
  private final TaskUmbilicalProtocol umbilical;
  private final EventForwarder events;
  private final String jobId;
  private final int reduce;

  CompletionEventsWatcher(TaskUmbilicalProtocol umbilical, EventForwarder events, String jobId,
      int reduce) {
    this.umbilical = umbilical;
    this.events = events;
    this.jobId = jobId;
    this.reduce = reduce;
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    Object result;
    try {
      result = method.invoke(umbilical, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
    if (result instanceof MapTaskCompletionEventsUpdate update) {
      for (TaskCompletionEvent e : update.getMapTaskCompletionEvents()) {
        switch (e.getTaskStatus()) {
          case SUCCEEDED -> events.offer(Events.now().setMapCompleted(MapCompleted.newBuilder()
              .setJobId(jobId).setReduceId(reduce)
              .setMapId(e.getTaskAttemptId().getTaskID().getId())
              .setHost(host(e.getTaskTrackerHttp()))
              .setAttempt(e.getTaskAttemptId().getId())
              // 0 on YARN (the AM's events reach the reduce without it): "unknown"
              .setRunTimeNanos(TimeUnit.MILLISECONDS.toNanos(e.getTaskRunTime()))
              .setOutputBytes(-1).setMapsRunning(-1)).build());
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
    return result;
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
