package io.datcp.scheduler.api.grpc;

import com.linecorp.armeria.common.util.SafeCloseable;
import com.linecorp.armeria.server.ServiceRequestContext;
import io.datcp.scheduler.common.ReceivedMessage;
import io.grpc.Attributes;
import io.grpc.Context;
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
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Parses and handles request messages of {@link #LARGE_BYTES} or more on worker threads instead
 * of the event loop that read them; smaller ones inline, as before (a thread hop costs more than
 * a small message does).
 *
 * <p>Why: an event loop serves its connections' calls in turn, so a call waits for whatever runs
 * before it on its loop. A node may send reports of up to reports.maxMessageBytes within its
 * byte budget, and a 1 MB report took its loop 2-4 ms to parse and apply: in the hostile-load
 * benchmark (issue 18) honest calls queued behind an attacker's admitted reports and their p99
 * rose up to 3.4x. Off the loops, a large message delays only the large ones queued after it.
 *
 * <p>Bounded: at most {@code maxQueued} large calls wait for or run on the workers; beyond that a
 * large message is parsed on its loop as before (slower for the calls behind it, nothing
 * refused). A call's callbacks after its first offloaded one follow it in order.
 */
public final class LargeRequests implements AutoCloseable {
  static final int LARGE_BYTES = 64 * 1024;

  private static final MethodDescriptor.Marshaller<ReceivedMessage> RECEIVED =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(ReceivedMessage message) {
          return new ByteArrayInputStream(message.bytes());
        }

        @Override
        public ReceivedMessage parse(InputStream in) {
          try {
            return new ReceivedMessage(in.readAllBytes());
          } catch (IOException e) {
            throw Status.INTERNAL.withDescription("reading the request: " + e.getMessage())
                .asRuntimeException();
          }
        }
      };

  private final ExecutorService workers;
  private final Semaphore slots;

  /**
   * @param threads worker threads
   * @param maxQueued large calls that may wait for or run on them at once
   */
  public LargeRequests(int threads, int maxQueued) {
    AtomicInteger n = new AtomicInteger();
    this.workers = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "scheduler-large-requests-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    this.slots = new Semaphore(maxQueued);
  }

  /** {@code service} with its requests received whole and parsed where their size says. */
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
        method.toBuilder(RECEIVED, method.getResponseMarshaller()).build(),
        (call, headers) -> new Call<>(call, method, def.getServerCallHandler(), headers));
  }

  @Override
  public void close() {
    workers.shutdownNow();
  }

  /** One call's listener: parses its messages and passes every callback to the service's. */
  private final class Call<Q, A> extends ServerCall.Listener<ReceivedMessage> {
    private final ServerCall<ReceivedMessage, A> call;
    private final MethodDescriptor.Marshaller<Q> parser;
    private final ServerCall.Listener<Q> handler;
    /** The last offloaded callback; null while none was. Written on the call's event loop. */
    private CompletableFuture<Void> tail;
    /** Set before the first callback is offloaded, then read and cleared by them in turn. */
    private boolean holdsSlot;
    private boolean failed;

    Call(ServerCall<ReceivedMessage, A> call, MethodDescriptor<Q, A> method,
        ServerCallHandler<Q, A> next, Metadata headers) {
      this.call = call;
      this.parser = method.getRequestMarshaller();
      this.handler = next.startCall(new Parsed<>(call, method), headers);
    }

    @Override
    public void onMessage(ReceivedMessage message) {
      if (tail == null) {
        if (message.size() < LARGE_BYTES || !slots.tryAcquire()) {
          handler.onMessage(parser.parse(new ByteArrayInputStream(message.bytes())));
          return;
        }
        holdsSlot = true; // before the first offloaded callback, which then sees it
      }
      later(() -> handler.onMessage(parser.parse(new ByteArrayInputStream(message.bytes()))));
    }

    @Override
    public void onHalfClose() {
      run(() -> {
        handler.onHalfClose();
        release();
      });
    }

    @Override
    public void onCancel() {
      run(() -> {
        handler.onCancel();
        release();
      });
    }

    @Override
    public void onComplete() {
      run(() -> {
        handler.onComplete();
        release();
      });
    }

    @Override
    public void onReady() {
      run(handler::onReady);
    }

    private void run(Runnable callback) {
      if (tail == null) {
        callback.run();
      } else {
        later(callback);
      }
    }

    /** Runs {@code callback} on a worker after the call's earlier ones, in the call's contexts. */
    private void later(Runnable callback) {
      Context grpc = Context.current();
      ServiceRequestContext ctx = ServiceRequestContext.currentOrNull();
      Runnable task = () -> {
        if (failed) {
          return;
        }
        Context previous = grpc.attach();
        try (SafeCloseable ignored = ctx == null ? () -> {} : ctx.push()) {
          callback.run();
        } catch (RuntimeException | Error e) {
          // as Armeria does for a callback that throws on its loop
          failed = true;
          release();
          call.close(Status.fromThrowable(e), new Metadata());
        } finally {
          grpc.detach(previous);
        }
      };
      tail = tail == null ? CompletableFuture.runAsync(task, workers)
          : tail.thenRunAsync(task, workers);
    }

    private void release() {
      if (holdsSlot) {
        holdsSlot = false;
        slots.release();
      }
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
