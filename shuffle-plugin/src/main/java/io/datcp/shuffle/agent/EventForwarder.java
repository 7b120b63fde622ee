package io.datcp.shuffle.agent;

import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import java.io.Closeable;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Sends shuffle events to the agent's Forward rpc from one background thread, in batches with
 * increasing batch ids, so a retried batch is applied once. The shuffle never waits: offer()
 * drops the event and counts it when the bounded queue is full (agent slow or absent).
 */
public final class EventForwarder implements Closeable {
  private static final long RETRY_DELAY_MS = 200;

  private final AgentClient agent;
  private final String reporterHost;
  private final String reporterId = UUID.randomUUID().toString();
  private final BlockingQueue<ShuffleEvent> queue;
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong delivered = new AtomicLong();
  private final Thread sender;
  private final Object idle = new Object();
  private volatile boolean stopping;
  private long nextBatchId = 1;
  private int inFlight;

  public EventForwarder(AgentClient agent, String reporterHost) {
    this.agent = agent;
    this.reporterHost = reporterHost;
    this.queue = new ArrayBlockingQueue<>(agent.config().reportQueueSize());
    this.sender = new Thread(this::run, "datcp-event-forwarder");
    sender.setDaemon(true);
    sender.start();
  }

  /** Queues an event; never blocks. Returns false when it was dropped. */
  public boolean offer(ShuffleEvent event) {
    if (stopping || !queue.offer(event)) {
      dropped.incrementAndGet();
      return false;
    }
    return true;
  }

  public long dropped() {
    return dropped.get();
  }

  public long delivered() {
    return delivered.get();
  }

  private void run() {
    List<ShuffleEvent> batch = new ArrayList<>();
    while (!stopping || !queue.isEmpty() || !batch.isEmpty()) {
      try {
        if (batch.isEmpty()) {
          ShuffleEvent first = queue.poll(100, TimeUnit.MILLISECONDS);
          if (first == null) {
            continue;
          }
          batch.add(first);
          queue.drainTo(batch, agent.config().reportBatchSize() - 1);
          synchronized (idle) {
            inFlight = batch.size();
          }
        }
        ShuffleReport report = ShuffleReport.newBuilder()
            .setReporterHost(reporterHost).setReporterId(reporterId).setBatchId(nextBatchId)
            .addAllEvents(batch).build();
        try {
          agent.forward(report);
          delivered.addAndGet(batch.size());
          nextBatchId++;
          batch.clear();
        } catch (RuntimeException e) {
          if (stopping) {
            dropped.addAndGet(batch.size());
            batch.clear();
          } else {
            Thread.sleep(RETRY_DELAY_MS); // same batch id again: the agent drops a duplicate
          }
        }
        synchronized (idle) {
          inFlight = batch.size();
          idle.notifyAll();
        }
      } catch (InterruptedException e) {
        dropped.addAndGet(batch.size() + queue.size());
        return;
      }
    }
  }

  /** Waits at most timeoutMs for queued events to go out. */
  public void flush(long timeoutMs) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    synchronized (idle) {
      while (!queue.isEmpty() || inFlight > 0) {
        long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
        if (left <= 0) {
          return;
        }
        idle.wait(Math.min(left, 50));
      }
    }
  }

  /** Sends what is queued (bounded by the rpc timeout), then stops. */
  @Override
  public void close() {
    try {
      if (!agent.isDown()) {
        flush(agent.config().rpcTimeout().toMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    stopping = true;
    sender.interrupt();
  }
}
