package io.datcp.shuffle.agent;

import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import java.io.Closeable;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Sends shuffle events to the agent (its Forward rpc or its events socket, through a
 * {@link ReportTransport}) from one background thread, in batches with increasing batch ids,
 * so a retried batch is applied once. The shuffle never waits: offer() drops the event and
 * counts it when the bounded queue is full (agent slow or absent).
 */
public final class EventForwarder implements Closeable {
  private static final long RETRY_DELAY_MS = 200;
  /** close() waits this long for a connecting forwarder's client before it drops the queue. */
  private static final long CONNECT_WAIT_MS = 30_000;

  private final AgentConfig config;
  /** Built by the sender thread when the forwarder connects on its own (see connecting). */
  private final Supplier<? extends ReportTransport> connect;
  private final boolean ownsAgent;
  private volatile ReportTransport agent;
  /** Counted down once the sender thread has built its client, or failed to. */
  private final CountDownLatch connected = new CountDownLatch(1);
  private final String reporterHost;
  private final String reporterId = UUID.randomUUID().toString();
  private final BlockingQueue<ShuffleEvent> queue;
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong delivered = new AtomicLong();
  private final Thread sender;
  private volatile boolean stopping;
  private long nextBatchId = 1;

  public EventForwarder(AgentClient agent, String reporterHost) {
    this(agent.config(), () -> agent, false, reporterHost);
  }

  /** {@code connect} runs on the sender thread; the forwarder closes its client if it owns it. */
  EventForwarder(AgentConfig config, Supplier<? extends ReportTransport> connect,
      boolean ownsAgent, String reporterHost) {
    this.config = config;
    this.connect = connect;
    this.ownsAgent = ownsAgent;
    this.reporterHost = reporterHost;
    this.queue = new ArrayBlockingQueue<>(config.reportQueueSize());
    this.sender = new Thread(this::run, "datcp-event-forwarder");
    sender.setDaemon(true);
    sender.start();
  }

  /**
   * A reduce task's forwarder: an {@link EventsClient} on the agent's events socket (no gRPC or
   * Netty in the reduce JVM), built on the sender thread and closed with the forwarder, so the
   * shuffle never waits for it; events offered meanwhile wait in the queue.
   */
  public static EventForwarder connecting(AgentConfig config, String who, String reporterHost) {
    return new EventForwarder(config, () -> new EventsClient(config, who), true, reporterHost);
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
    ReportTransport client;
    try {
      client = connect.get();
    } catch (RuntimeException e) {
      // no client, no reports: the shuffle is Hadoop's, unchanged; offers count as drops
      stopping = true;
      dropped.addAndGet(queue.size());
      queue.clear();
      connected.countDown();
      return;
    }
    agent = client;
    connected.countDown();
    List<ShuffleEvent> batch = new ArrayList<>();
    int failuresWhileStopping = 0;
    while (!stopping || !queue.isEmpty() || !batch.isEmpty()) {
      try {
        if (batch.isEmpty()) {
          ShuffleEvent first = queue.poll(100, TimeUnit.MILLISECONDS);
          if (first == null) {
            continue;
          }
          batch.add(first);
          queue.drainTo(batch, config.reportBatchSize() - 1);
        }
        ShuffleReport report = ShuffleReport.newBuilder()
            .setReporterHost(reporterHost).setReporterId(reporterId).setBatchId(nextBatchId)
            .addAllEvents(batch).build();
        try {
          client.forward(report);
          delivered.addAndGet(batch.size());
          nextBatchId++;
          batch.clear();
          failuresWhileStopping = 0;
        } catch (RuntimeException e) {
          // same batch id again: the agent drops a duplicate
          if (!stopping) {
            Thread.sleep(RETRY_DELAY_MS);
          } else if (++failuresWhileStopping > 1) {
            dropped.addAndGet(batch.size());
            batch.clear();
            failuresWhileStopping = 0;
          }
        }
      } catch (InterruptedException e) {
        dropped.addAndGet(batch.size() + queue.size());
        return;
      }
    }
  }

  /**
   * Stops taking events; the sender goes on with what is queued, and once stopping a batch
   * that fails is sent again at once and dropped on its second failure. Waits for that at
   * most two rpc timeouts, then drops what is left; closes the agent client if this forwarder
   * built it. (Cancelling the call in flight after one rpc timeout lost a short reduce's first
   * batch, ShuffleFinished with it, when that call met a cold JVM on a busy host; dropping a
   * batch on its first failure once stopping lost it when that first call outlasted its own
   * deadline.)
   */
  @Override
  public void close() {
    try {
      // a short reduce can end before its client is up: what it reported must still go out
      connected.await(CONNECT_WAIT_MS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    stopping = true;
    long rpcMs = config.rpcTimeout().toMillis();
    try {
      sender.join(2 * rpcMs);
      if (sender.isAlive()) {
        sender.interrupt(); // past the bound: the sender counts what it drops
        sender.join(rpcMs);
      }
    } catch (InterruptedException e) {
      sender.interrupt();
      Thread.currentThread().interrupt();
    }
    ReportTransport client = agent;
    if (ownsAgent && client != null) {
      client.close();
    }
  }
}
