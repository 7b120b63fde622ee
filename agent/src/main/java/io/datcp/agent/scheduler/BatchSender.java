package io.datcp.agent.scheduler;

import io.datcp.agent.failopen.Outage;
import io.datcp.proto.v1.RefusedEvent;
import io.datcp.proto.v1.ReportAck;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A bounded queue of events for the scheduler and the thread that sends them in batches. A
 * batch keeps its id until the scheduler acknowledges it, so a retry after a lost answer is
 * recognised as a duplicate. When the scheduler is away the queue fills; then the oldest events
 * are dropped and counted (the scheduler's job state is soft and rebuilt from later reports).
 * What the scheduler refuses (events named in its answer, or a batch refused whole) it would
 * refuse again: it is dropped, counted and logged once per cause, never retried, so it
 * cannot hold up the reports queued behind it; a refusal is an answer, not an outage.
 * With a {@link Resend}, after every outage (the scheduler may be a new leader or restarted,
 * without the job state the events sent before built) its events go out first, in batches of
 * their own, before anything else is sent.
 */
final class BatchSender<T> implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(BatchSender.class.getName());
  /** Refusal causes remembered for logging once; beyond it the oldest may be logged again. */
  private static final int MAX_CAUSES_LOGGED = 1024;

  /** Sends one batch and returns the scheduler's answer; throws StatusRuntimeException. */
  interface Transport<T> {
    ReportAck send(List<T> batch, long batchId);
  }

  /** Events to send again after each outage; see {@link RunningReduces}. */
  interface Resend<T> {
    /** Changes when an outage begins (the scheduler answering next may have lost state). */
    long epoch();

    /** What to send again, in order. */
    List<T> events();
  }

  private final String name;
  private final Transport<T> transport;
  private final Outage outage;
  private final int capacity;
  private final int maxBatch;
  private final long flushMillis;
  private final Backoff backoff;
  private final ArrayDeque<T> queue = new ArrayDeque<>();
  private final Counter dropped;
  private final Counter refusedInvalid;
  private final Counter refusedNotPermitted;
  private final Counter sent;
  private final Counter resent;
  private final Resend<T> resend;
  /** The epoch whose events were sent again; the sender thread's only. */
  private long resentEpoch;
  /** Refusal causes logged so far, oldest first; only the sender thread touches it. */
  private final LinkedHashSet<String> causesLogged = new LinkedHashSet<>();
  private final Thread thread;
  private long nextBatchId = 1;
  private volatile boolean closed;

  BatchSender(String name, Transport<T> transport, Outage outage, int capacity, int maxBatch,
      long flushMillis, Backoff backoff, MeterRegistry meters) {
    this(name, transport, null, outage, capacity, maxBatch, flushMillis, backoff, meters);
  }

  /** @param resend events to send again after each outage, or null */
  BatchSender(String name, Transport<T> transport, Resend<T> resend, Outage outage, int capacity,
      int maxBatch, long flushMillis, Backoff backoff, MeterRegistry meters) {
    this.name = name;
    this.resend = resend;
    resentEpoch = resend == null ? 0 : resend.epoch();
    this.transport = transport;
    this.outage = outage;
    this.capacity = capacity;
    this.maxBatch = maxBatch;
    this.flushMillis = flushMillis;
    this.backoff = backoff;
    dropped = Counter.builder("datcp.agent.reports.dropped").tag("queue", name)
        .description("events dropped because the queue to the scheduler was full")
        .register(meters);
    refusedInvalid = Counter.builder("datcp.agent.reports.refused").tag("queue", name)
        .tag("reason", "invalid").description("events the scheduler refused (dropped)")
        .register(meters);
    refusedNotPermitted = Counter.builder("datcp.agent.reports.refused").tag("queue", name)
        .tag("reason", "not_permitted").description("events the scheduler refused (dropped)")
        .register(meters);
    sent = Counter.builder("datcp.agent.reports.sent").tag("queue", name)
        .description("events the scheduler acknowledged").register(meters);
    resent = Counter.builder("datcp.agent.reports.resent").tag("queue", name)
        .description("events sent again after an outage (running reduces' state)")
        .register(meters);
    Gauge.builder("datcp.agent.reports.queued", this, BatchSender::queued).tag("queue", name)
        .register(meters);
    thread = new Thread(this::run, "datcp-" + name + "-sender");
    thread.setDaemon(true);
    thread.start();
  }

  /**
   * An outage began (the update stream found the scheduler silent): the events due to be sent
   * again go at once, not at the idle queue's next check (up to a second later).
   */
  void wake() {
    synchronized (queue) {
      queue.notifyAll();
    }
  }

  /** Queues events; drops the oldest beyond capacity. */
  void offer(List<T> events) {
    synchronized (queue) {
      for (T e : events) {
        if (queue.size() >= capacity) {
          queue.pollFirst();
          dropped.increment();
        }
        queue.addLast(e);
      }
      queue.notifyAll();
    }
  }

  int queued() {
    synchronized (queue) {
      return queue.size();
    }
  }

  long droppedCount() {
    return (long) dropped.count();
  }

  private void run() {
    List<T> batch = null;
    long batchId = 0;
    while (!closed) {
      try {
        if (batch == null) {
          batch = take();
          if (batch != null) {
            batchId = nextBatchId++;
          }
        }
        if (resendDue()) {
          resendAll();
        }
        if (batch == null) {
          continue;
        }
        sendOnce(batch, batchId, sent);
        batch = null;
      } catch (StatusRuntimeException e) {
        // no scheduler took the batch (a refusal is an answer: sendOnce counted it)
        if (e.getStatus().getCode() != Status.Code.RESOURCE_EXHAUSTED) {
          outage.down(e.getStatus().toString());
        }
        sleep(backoff.nextDelayMillis());
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private boolean resendDue() {
    return resend != null && resend.epoch() != resentEpoch;
  }

  /**
   * Sends the resend events in batches of their own ids; throws on an outage (the caller backs
   * off and comes back). Refusals of its events are dropped and counted as for any batch.
   */
  private void resendAll() {
    long epoch = resend.epoch();
    List<T> all = resend.events();
    for (int from = 0; from < all.size(); from += maxBatch) {
      sendOnce(all.subList(from, Math.min(all.size(), from + maxBatch)), nextBatchId++, resent);
    }
    resentEpoch = epoch;
  }

  /**
   * Sends one batch and settles it: the scheduler's answer ends any outage, the events it took
   * are counted in {@code taken}, those it refused (named in the answer, or the batch refused
   * whole) are dropped, counted and logged once per cause.
   *
   * @throws StatusRuntimeException when no scheduler took the batch (unavailable, past its
   *     deadline, over its rate); the caller backs off and sends it again with the same id
   */
  private void sendOnce(List<T> batch, long batchId, Counter taken) {
    int refusedEvents;
    try {
      ReportAck ack = transport.send(batch, batchId);
      for (RefusedEvent r : ack.getRefusedList()) {
        refused(Status.fromCodeValue(r.getCode()), r.getMessage(), 1);
      }
      refusedEvents = ack.getRefusedCount();
    } catch (StatusRuntimeException e) {
      Status.Code code = e.getStatus().getCode();
      if (code != Status.Code.INVALID_ARGUMENT && code != Status.Code.PERMISSION_DENIED) {
        throw e;
      }
      // a scheduler built before ReportAck.refused refuses the batch whole for one event,
      // today's only for a fault of the batch itself: either way it would again
      refused(e.getStatus(), e.getStatus().getDescription(), batch.size());
      refusedEvents = batch.size();
    }
    outage.up();
    backoff.reset();
    taken.increment(batch.size() - refusedEvents);
  }

  /**
   * Counts {@code events} refused with {@code status} (one named in an answer, or a batch
   * refused whole) and logs the first refusal of each cause.
   */
  private void refused(Status status, String why, int events) {
    (status.getCode() == Status.Code.PERMISSION_DENIED ? refusedNotPermitted : refusedInvalid)
        .increment(events);
    String cause = status.getCode() + ": " + why;
    if (!causesLogged.add(cause)) {
      return;
    }
    if (causesLogged.size() > MAX_CAUSES_LOGGED) {
      causesLogged.remove(causesLogged.iterator().next());
    }
    LOG.log(Level.WARNING, "scheduler refused {0} ({1}); dropped, not sent again; further"
        + " refusals of this cause are only counted (datcp_agent_reports_refused_total)",
        new Object[] {events == 1 ? "a " + name + " event"
            : "a " + name + " batch of " + events + " events whole", cause});
  }

  /**
   * Waits for events, then up to flushMillis more for a full batch; returns null without any,
   * when events are due to be sent again.
   */
  private List<T> take() throws InterruptedException {
    synchronized (queue) {
      while (queue.isEmpty() && !closed) {
        if (resendDue()) {
          return null;
        }
        queue.wait(1000);
      }
      long until = System.currentTimeMillis() + flushMillis;
      while (queue.size() < maxBatch && !closed) {
        long left = until - System.currentTimeMillis();
        if (left <= 0) {
          break;
        }
        queue.wait(left);
      }
      if (queue.isEmpty()) {
        return null;
      }
      List<T> batch = new ArrayList<>(Math.min(maxBatch, queue.size()));
      while (batch.size() < maxBatch && !queue.isEmpty()) {
        batch.add(queue.pollFirst());
      }
      return batch;
    }
  }

  private void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      closed = true;
    }
  }

  @Override
  public void close() {
    closed = true;
    thread.interrupt();
    try {
      thread.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
