package io.datcp.agent.scheduler;

import io.grpc.CallCredentials;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The node credential from scheduler.tokenFile, sent as "authorization: Bearer" on every
 * scheduler call. The scheduler may mint a new token for this host (a scheduler started on new
 * data, an operator's re-mint) and then refuses the old one (UNAUTHENTICATED): the file is read
 * again on refusal, so the token the operator put there is used without restarting the agent.
 * One log line when a refusal episode starts, one when the file gives a new token, one when the
 * scheduler accepts again; the calls refused in between are not logged.
 */
final class NodeToken {
  private static final Logger LOG = Logger.getLogger(NodeToken.class.getName());
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  /** During a refusal episode the file is read at most this often, however many calls fail. */
  private static final long MIN_REREAD_NANOS = 100_000_000L;

  private final Path file;
  private volatile String token;
  private volatile Metadata headers;
  /** Bumped whenever a new token is taken from the file: a call refused under an older one
   *  may be retried at once. */
  private final AtomicLong generation = new AtomicLong();
  private volatile boolean refusing;
  private boolean unreadableLogged;
  private long lastReadNanos;

  private NodeToken(Path file, String token) {
    this.file = file;
    use(token);
  }

  /**
   * Reads the token at start-up.
   *
   * @throws IllegalArgumentException naming scheduler.tokenFile when it is unreadable or does
   *     not hold one token line
   */
  static NodeToken read(String file) {
    Path p = Path.of(file);
    try {
      return new NodeToken(p, parse(p));
    } catch (IOException e) {
      throw new IllegalArgumentException("configuration key 'scheduler.tokenFile': cannot read "
          + file + " (" + e.getMessage() + ")");
    }
  }

  private static String parse(Path p) throws IOException {
    String t = Files.readString(p, StandardCharsets.UTF_8).trim();
    if (t.isEmpty() || t.contains("\n")) {
      throw new IOException(p + " must hold one non-empty token line");
    }
    return t;
  }

  private void use(String t) {
    Metadata h = new Metadata();
    h.put(AUTHORIZATION, "Bearer " + t);
    token = t;
    headers = h;
    generation.incrementAndGet();
  }

  /** Credentials that send the current token (the latest read from the file). */
  CallCredentials credentials() {
    return new CallCredentials() {
      @Override
      public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier a) {
        a.apply(headers);
      }
    };
  }

  long generation() {
    return generation.get();
  }

  /**
   * Watches every call's result: UNAUTHENTICATED reads the file again, an answer ends a refusal
   * episode. Covers lookups, both watch streams and the report batches alike.
   */
  ClientInterceptor interceptor() {
    return new ClientInterceptor() {
      @Override
      public <Q, A> ClientCall<Q, A> interceptCall(MethodDescriptor<Q, A> method,
          CallOptions options, Channel next) {
        return new ForwardingClientCall.SimpleForwardingClientCall<>(
            next.newCall(method, options)) {
          @Override
          public void start(Listener<A> listener, Metadata h) {
            super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(
                listener) {
              @Override
              public void onHeaders(Metadata responseHeaders) {
                accepted(); // the scheduler checks the credential before it answers
                super.onHeaders(responseHeaders);
              }

              @Override
              public void onClose(Status status, Metadata trailers) {
                if (status.getCode() == Status.Code.UNAUTHENTICATED) {
                  refused(status.getDescription());
                } else if (status.isOk()) {
                  accepted();
                }
                super.onClose(status, trailers);
              }
            }, h);
          }
        };
      }
    };
  }

  /** The scheduler refused the token: read the file again (rate-limited). */
  synchronized void refused(String why) {
    if (!refusing) {
      refusing = true;
      LOG.log(Level.WARNING, "scheduler refused the node token from {0} ({1}); reading the file"
          + " again on refusals until it holds a token the scheduler accepts; meanwhile flows"
          + " get the cached or default policy and reports queue", new Object[] {file, why});
    }
    long now = System.nanoTime();
    if (now - lastReadNanos < MIN_REREAD_NANOS && lastReadNanos != 0) {
      return;
    }
    lastReadNanos = now;
    String t;
    try {
      t = parse(file);
    } catch (IOException e) {
      if (!unreadableLogged) {
        unreadableLogged = true;
        LOG.log(Level.WARNING, "cannot read the node token again ({0}); keeping the old one",
            e.getMessage());
      }
      return;
    }
    if (!t.equals(token)) {
      use(t);
      LOG.log(Level.INFO, "node token in {0} changed; calls use the new one", file);
    }
  }

  /** A call got through: a refusal episode, if any, is over. */
  void accepted() {
    if (!refusing) {
      return; // the common case, without the lock
    }
    synchronized (this) {
      if (refusing) {
        refusing = false;
        unreadableLogged = false;
        lastReadNanos = 0;
        LOG.log(Level.INFO, "scheduler accepts the node token from {0} again", file);
      }
    }
  }
}
