package io.datcp.scheduler.api.grpc;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.ArrayDeque;

/**
 * A server stream that respects the client's flow control: messages go out only while the
 * transport is ready ({@link ServerCallStreamObserver#isReady}), the rest wait in a queue of at
 * most {@code max} messages, sent on the next onReady. A full queue either closes the stream
 * with RESOURCE_EXHAUSTED (the client reconnects and resyncs) or, for streams whose every
 * message replaces the previous one whole, keeps only the newest.
 */
final class BoundedStream<T> {
  private final ServerCallStreamObserver<T> out;
  private final ArrayDeque<T> queue = new ArrayDeque<>();
  private final int max;
  private final boolean keepNewest;
  private final Runnable onOverflow;
  private boolean closed;

  /**
   * @param keepNewest on a full queue drop the queued messages instead of closing the stream
   * @param onOverflow run once when the stream is closed for being too slow
   */
  BoundedStream(ServerCallStreamObserver<T> out, int max, boolean keepNewest,
      Runnable onOverflow) {
    this.out = out;
    this.max = max;
    this.keepNewest = keepNewest;
    this.onOverflow = onOverflow;
    out.setOnReadyHandler(this::drain);
  }

  /** Queues one message and sends what the transport takes now; never blocks. */
  synchronized void send(T message) {
    if (closed || out.isCancelled()) {
      return;
    }
    if (queue.size() >= max) {
      if (keepNewest) {
        queue.clear();
      } else {
        closed = true;
        queue.clear();
        out.onError(Status.RESOURCE_EXHAUSTED.withDescription("update stream fell " + max
            + " messages behind: reconnect with resync").asRuntimeException());
        onOverflow.run();
        return;
      }
    }
    queue.add(message);
    drain();
  }

  /**
   * Sends {@code message} only when nothing is queued: a stream that is behind has messages on
   * their way already, and a message that only says "alive" must not close it for overflow.
   * Returns false once the stream ended (closed, ended or cancelled by the client).
   */
  synchronized boolean sendIfIdle(T message) {
    if (closed || out.isCancelled()) {
      return false;
    }
    if (queue.isEmpty()) {
      send(message);
    }
    return true;
  }

  /**
   * Ends the stream with {@code error} unless it already ended; returns whether it did (queued
   * messages are dropped: the client resyncs where it reconnects).
   */
  synchronized boolean end(StatusRuntimeException error) {
    if (closed || out.isCancelled()) {
      return false;
    }
    closed = true;
    queue.clear();
    out.onError(error);
    return true;
  }

  /** Whether the stream was closed for being too slow or ended. */
  synchronized boolean closed() {
    return closed;
  }

  /** Messages waiting for the transport. */
  synchronized int queued() {
    return queue.size();
  }

  private synchronized void drain() {
    while (!closed && !queue.isEmpty() && out.isReady() && !out.isCancelled()) {
      out.onNext(queue.poll());
    }
  }
}
