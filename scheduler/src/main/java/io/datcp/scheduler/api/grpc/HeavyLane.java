package io.datcp.scheduler.api.grpc;

import com.linecorp.armeria.common.util.SafeCloseable;
import com.linecorp.armeria.server.ServiceRequestContext;
import io.datcp.scheduler.auth.NodeAuthInterceptor;
import io.datcp.scheduler.auth.NodeByteBudget;
import io.datcp.scheduler.common.ReceivedMessage;
import io.grpc.Attributes;
import io.grpc.Context;
import io.grpc.KnownLength;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.SecurityLevel;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * Runs the node calls of heavy hosts, and every request message of {@link #LARGE_BYTES} or
 * more, on one worker thread instead of the event loop that read them; everything else inline,
 * as before (a thread hop costs more than a small message does).
 *
 * <p>Why: an event loop serves its connections' calls in turn, so a call waits for whatever runs
 * before it on its loop. In the hostile-load benchmark (issue 18) a node sending the largest
 * valid messages within its byte budget kept its loop busy for milliseconds at a time, and the
 * honest calls that shared the loop waited behind it: their p99 rose from under a millisecond to
 * 30 ms. Here a host that sends more than its light share (see {@code heavy}) only delays its
 * own calls and the other heavy hosts', and the event loops stay free for the hosts that send
 * little. The worker serves the hosts with work in turn, one message or callback each, so two
 * heavy hosts share it evenly, and rests beyond {@link #SHARE} of a core, so that heavy hosts
 * together take at most that from the light ones. A small message is parsed where it arrives,
 * without a copy; only a large one is kept as bytes for the worker to parse.
 *
 * <p>Bounded: at most {@code maxPerHost} messages of a host, and {@code maxQueued} in all, wait
 * for the worker to parse them. A heavy host's call beyond that is refused with
 * RESOURCE_EXHAUSTED, unread when the lane is full as it starts; a large message of a light host is handled on its loop (slower for its
 * neighbours, nothing refused). A call's callbacks after its first offloaded one follow it in
 * order.
 */
public final class HeavyLane implements AutoCloseable {
  static final int LARGE_BYTES = 64 * 1024;
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  /** The share of one core the lane may use, sustained: what heavy hosts take from the rest. */
  static final double SHARE = 0.1;
  /** What the lane may run at once above its share after being idle, nanoseconds. */
  static final long BURST_NANOS = 50_000_000L;
  /** How long a refusal for a full lane is held back: the lane frees room no faster. */
  private static final Duration REFUSAL_HOLD = Duration.ofMillis(100);
  /** The queue key of calls without a node credential (auth.nodes.required=false). */
  private static final String NO_HOST = "";

  /**
   * Receives a request message: a small one parsed at once, as it would be without this lane, a
   * large one as its bytes, copied once, for the lane to parse.
   */
  private static <Q> MethodDescriptor.Marshaller<ReceivedMessage> receiving(
      MethodDescriptor.Marshaller<Q> parser) {
    return new MethodDescriptor.Marshaller<>() {
      @Override
      public InputStream stream(ReceivedMessage message) {
        throw new UnsupportedOperationException("requests are only received");
      }

      @Override
      public ReceivedMessage parse(InputStream in) {
        try {
          int size = in.available();
          if (size < LARGE_BYTES) {
            return new ReceivedMessage(parser.parse(new Known(in)), null, size);
          }
          byte[] bytes = new byte[size];
          int read = in.readNBytes(bytes, 0, size);
          int next = in.read();
          if (read < size || next >= 0) { // a stream that did not know its length after all
            ByteArrayOutputStream all = new ByteArrayOutputStream(size + 1);
            all.write(bytes, 0, read);
            if (next >= 0) {
              all.write(next);
              in.transferTo(all);
            }
            bytes = all.toByteArray();
          }
          return new ReceivedMessage(null, bytes, bytes.length);
        } catch (IOException e) {
          throw Status.INTERNAL.withDescription("reading the request: " + e.getMessage())
              .asRuntimeException();
        }
      }
    };
  }

  /**
   * A message's stream that says it knows its length: gRPC's protobuf marshaller then reads it
   * into a buffer it keeps per thread instead of a new decoder's buffer per message.
   */
  private static final class Known extends FilterInputStream implements KnownLength {
    Known(InputStream in) {
      super(in);
    }
  }

  private final Predicate<String> heavy;
  private final LongSupplier nanoTime;
  private final LongSupplier cpuTime;
  private final int maxPerHost;
  private final int maxQueued;
  private final Thread worker;
  /** Guards the fields below. */
  private final Object lock = new Object();
  /** Each host's tasks in order; a host is here while it has any. */
  private final Map<String, ArrayDeque<Runnable>> queues = new HashMap<>();
  /** Hosts with tasks, in the order the worker serves them. */
  private final ArrayDeque<String> turns = new ArrayDeque<>();
  /** Messages waiting for the worker to parse them, per host and in all. */
  private final Map<String, Integer> messages = new HashMap<>();
  private int queued;
  private boolean closed;

  /**
   * @param heavy whether an authenticated host sends more than its light share now
   * @param maxPerHost messages of one host that may wait for the worker at once
   * @param maxQueued messages of all hosts that may
   * @param nanoTime monotonic clock, nanoseconds
   * @param cpuTime the CPU time of the thread that calls it, nanoseconds ({@link
   *     #workerCpuNanos}): what a task is charged, so that time the machine spent on other work
   *     while the task ran does not make the lane rest
   */
  public HeavyLane(Predicate<String> heavy, int maxPerHost, int maxQueued,
      LongSupplier nanoTime, LongSupplier cpuTime) {
    this.heavy = heavy;
    this.nanoTime = nanoTime;
    this.cpuTime = cpuTime;
    this.maxPerHost = maxPerHost;
    this.maxQueued = maxQueued;
    this.worker = new Thread(this::serve, "scheduler-heavy-lane");
    worker.setDaemon(true);
    worker.start();
  }

  /** {@code service} with its requests received whole and parsed where their host says. */
  public ServerServiceDefinition offload(ServerServiceDefinition service) {
    List<ServerMethodDefinition<ReceivedMessage, ?>> methods = new ArrayList<>();
    service.getMethods().forEach(m -> methods.add(received(m)));
    ServiceDescriptor old = service.getServiceDescriptor();
    ServiceDescriptor.Builder descriptor = ServiceDescriptor.newBuilder(old.getName())
        .setSchemaDescriptor(old.getSchemaDescriptor());
    methods.forEach(m -> descriptor.addMethod(m.getMethodDescriptor()));
    ServerServiceDefinition.Builder b = ServerServiceDefinition.builder(descriptor.build());
    methods.forEach(b::addMethod);
    return b.build();
  }

  private <Q, A> ServerMethodDefinition<ReceivedMessage, A> received(
      ServerMethodDefinition<Q, A> def) {
    MethodDescriptor<Q, A> method = def.getMethodDescriptor();
    return ServerMethodDefinition.create(
        method.toBuilder(receiving(method.getRequestMarshaller()), method.getResponseMarshaller())
            .build(),
        (call, headers) -> {
          String host = NodeAuthInterceptor.HOST.get();
          if (host != null && heavy.test(host) && full(host)) {
            // refused before its message is read, as the byte budget refuses
            NodeByteBudget.holdRefusal(REFUSAL_HOLD);
            call.close(refusal(host), new Metadata());
            return new ServerCall.Listener<>() {};
          }
          return new Call<>(call, method, def.getServerCallHandler(), headers);
        });
  }

  private Status refusal(String host) {
    return Status.RESOURCE_EXHAUSTED.withDescription("host '" + host + "' has " + maxPerHost
        + " messages (or all hosts " + maxQueued + ") waiting for the heavy-host lane: call"
        + " refused; retry later");
  }

  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      lock.notifyAll();
    }
  }

  /**
   * The worker: one task of the next host with work, then the host goes to the back; it rests
   * whenever it has used more than {@link #SHARE} of its time (beyond a burst), so that heavy
   * hosts together take at most that share of a core from the light ones.
   */
  private void serve() {
    double credit = BURST_NANOS;
    long last = nanoTime.getAsLong();
    while (true) {
      long now = nanoTime.getAsLong();
      credit = Math.min(BURST_NANOS, credit + (now - last) * SHARE);
      last = now;
      if (credit < 0) {
        LockSupport.parkNanos((long) (-credit / SHARE) + 1);
        continue;
      }
      Runnable task;
      synchronized (lock) {
        while (turns.isEmpty() && !closed) {
          try {
            lock.wait();
          } catch (InterruptedException e) {
            return;
          }
        }
        if (closed) {
          return;
        }
        String host = turns.poll();
        ArrayDeque<Runnable> q = queues.get(host);
        task = q.poll();
        if (q.isEmpty()) {
          queues.remove(host);
        } else {
          turns.add(host);
        }
      }
      long start = cpuTime.getAsLong();
      task.run();
      credit -= cpuTime.getAsLong() - start;
    }
  }

  /** The calling thread's CPU time, nanoseconds (the JVM's thread CPU clock). */
  public static long workerCpuNanos() {
    return THREADS.getCurrentThreadCpuTime();
  }

  private void enqueue(String host, Runnable task) {
    synchronized (lock) {
      queues.computeIfAbsent(host, h -> {
        turns.add(h);
        return new ArrayDeque<>();
      }).add(task);
      lock.notifyAll();
    }
  }

  /** Messages waiting for the worker to parse them now. */
  int messagesInLane() {
    synchronized (lock) {
      return queued;
    }
  }

  /** Whether {@code host} holds the most messages it may in the lane, or all hosts do. */
  private boolean full(String host) {
    synchronized (lock) {
      return messages.getOrDefault(host, 0) >= maxPerHost || queued >= maxQueued;
    }
  }

  /** Counts a message of {@code host} into the lane; false when it holds the most it may. */
  private boolean admit(String host) {
    synchronized (lock) {
      if (full(host)) {
        return false;
      }
      messages.merge(host, 1, Integer::sum);
      queued++;
      return true;
    }
  }

  private void done(String host) {
    synchronized (lock) {
      messages.computeIfPresent(host, (h, n) -> n > 1 ? n - 1 : null);
      queued--;
    }
  }

  /** One call's listener: parses its messages and passes every callback to the service's. */
  private final class Call<Q, A> extends ServerCall.Listener<ReceivedMessage> {
    private final ServerCall<ReceivedMessage, A> call;
    private final MethodDescriptor.Marshaller<Q> parser;
    private final ServerCall.Listener<Q> handler;
    /** The calling node, null without a node credential. */
    private final String host;
    /** Whether a callback went to the worker: the later ones follow it there, in order. */
    private boolean offloaded;
    /** Set when the call was closed here; read by its later callbacks (on the worker). */
    private volatile boolean failed;

    Call(ServerCall<ReceivedMessage, A> call, MethodDescriptor<Q, A> method,
        ServerCallHandler<Q, A> next, Metadata headers) {
      this.call = call;
      this.parser = method.getRequestMarshaller();
      this.host = NodeAuthInterceptor.HOST.get();
      this.handler = next.startCall(new Parsed<>(call, method), headers);
    }

    @Override
    public void onMessage(ReceivedMessage message) {
      if (failed) {
        return;
      }
      boolean heavyHost = host != null && heavy.test(host);
      if (!offloaded && !heavyHost && message.size() < LARGE_BYTES) {
        handler.onMessage(parse(message));
        return;
      }
      String key = host == null ? NO_HOST : host;
      boolean admitted = admit(key);
      if (!admitted && heavyHost) {
        failed = true;
        call.close(refusal(host), new Metadata());
        return;
      }
      if (!admitted && !offloaded) {
        handler.onMessage(parse(message));
        return;
      }
      // Not admitted yet offloaded: its earlier callbacks are on the worker, so this follows.
      later(() -> {
        try {
          handler.onMessage(parse(message));
        } finally {
          if (admitted) {
            done(key);
          }
        }
      });
    }

    @SuppressWarnings("unchecked") // received(parser) parsed it with this call's own parser
    private Q parse(ReceivedMessage message) {
      return message.parsed() != null ? (Q) message.parsed()
          : parser.parse(new Known(new ByteArrayInputStream(message.bytes())));
    }

    @Override
    public void onHalfClose() {
      run(handler::onHalfClose);
    }

    @Override
    public void onCancel() {
      run(handler::onCancel);
    }

    @Override
    public void onComplete() {
      run(handler::onComplete);
    }

    @Override
    public void onReady() {
      run(handler::onReady);
    }

    private void run(Runnable callback) {
      if (failed) {
        return;
      }
      if (offloaded) {
        later(callback);
      } else {
        callback.run();
      }
    }

    /** Runs {@code callback} on the worker after the call's earlier ones, in the call's contexts. */
    private void later(Runnable callback) {
      offloaded = true;
      Context grpc = Context.current();
      ServiceRequestContext ctx = ServiceRequestContext.currentOrNull();
      enqueue(host == null ? NO_HOST : host, () -> {
        if (failed) {
          return;
        }
        Context previous = grpc.attach();
        try (SafeCloseable ignored = ctx == null ? () -> {} : ctx.push()) {
          callback.run();
        } catch (RuntimeException | Error e) {
          // as Armeria does for a callback that throws on its loop
          failed = true;
          call.close(Status.fromThrowable(e), new Metadata());
        } finally {
          grpc.detach(previous);
        }
      });
    }
  }

  /** The call as the service sees it: with its own method descriptor, receiving parsed messages. */
  private static final class Parsed<Q, A> extends ServerCall<Q, A> {
    private final ServerCall<ReceivedMessage, A> call;
    private final MethodDescriptor<Q, A> method;

    Parsed(ServerCall<ReceivedMessage, A> call, MethodDescriptor<Q, A> method) {
      this.call = call;
      this.method = method;
    }

    @Override
    public void request(int numMessages) {
      call.request(numMessages);
    }

    @Override
    public void sendHeaders(Metadata headers) {
      call.sendHeaders(headers);
    }

    @Override
    public void sendMessage(A message) {
      call.sendMessage(message);
    }

    @Override
    public boolean isReady() {
      return call.isReady();
    }

    @Override
    public void close(Status status, Metadata trailers) {
      call.close(status, trailers);
    }

    @Override
    public boolean isCancelled() {
      return call.isCancelled();
    }

    @Override
    public void setMessageCompression(boolean enabled) {
      call.setMessageCompression(enabled);
    }

    @Override
    public void setOnReadyThreshold(int numBytes) {
      call.setOnReadyThreshold(numBytes);
    }

    @Override
    public void setCompression(String compressor) {
      call.setCompression(compressor);
    }

    @Override
    public Attributes getAttributes() {
      return call.getAttributes();
    }

    @Override
    public String getAuthority() {
      return call.getAuthority();
    }

    @Override
    public SecurityLevel getSecurityLevel() {
      return call.getSecurityLevel();
    }

    @Override
    public MethodDescriptor<Q, A> getMethodDescriptor() {
      return method;
    }
  }
}
