package io.datcp.shuffle.reduceside;

import io.datcp.proto.v1.MapCompleted;
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
 * Passes every umbilical call through unchanged and reports each succeeded map the reduce learns
 * of (getMapCompletionEvents) as MapCompleted.
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
        if (e.getTaskStatus() == TaskCompletionEvent.Status.SUCCEEDED) {
          events.offer(Events.now().setMapCompleted(MapCompleted.newBuilder()
              .setJobId(jobId).setReduceId(reduce)
              .setMapId(e.getTaskAttemptId().getTaskID().getId())
              .setHost(host(e.getTaskTrackerHttp()))
              // 0 on YARN (the AM's events reach the reduce without it): "unknown"
              .setRunTimeNanos(TimeUnit.MILLISECONDS.toNanos(e.getTaskRunTime()))
              .setOutputBytes(-1).setMapsRunning(-1)).build());
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
