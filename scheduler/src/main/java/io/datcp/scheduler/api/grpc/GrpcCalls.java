package io.datcp.scheduler.api.grpc;

import io.datcp.scheduler.auth.NodeAuthInterceptor;
import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.common.LimitReachedException;
import io.datcp.scheduler.ingest.Caller;
import io.datcp.scheduler.ingest.NotPermittedException;
import io.datcp.scheduler.ingest.RateLimitedException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

/** Runs a unary call against the domain service and maps its failures onto gRPC statuses. */
final class GrpcCalls {
  private GrpcCalls() {}

  /**
   * The caller of a reporter's or agent's call: the host of its node credential, which a host
   * the message names must equal; without a credential (development) the message's host.
   */
  static Caller caller(String messageHost, String field) {
    String host = NodeAuthInterceptor.HOST.get();
    if (host == null) {
      return new Caller(messageHost, false);
    }
    if (!messageHost.isEmpty() && !messageHost.equals(host)) {
      throw new NotPermittedException(field + ": '" + messageHost
          + "' is not the host of the node credential ('" + host + "')");
    }
    return new Caller(host, true);
  }

  static <T> void unary(StreamObserver<T> out, Supplier<T> call) {
    unaryAsync(out, () -> CompletableFuture.completedFuture(call.get()));
  }

  /**
   * A unary call whose answer may wait (for the ResourceManager): completed when the future
   * completes, on whatever thread completes it, so no event loop blocks.
   */
  static <T> void unaryAsync(StreamObserver<T> out, Supplier<CompletableFuture<T>> call) {
    CompletableFuture<T> answer;
    try {
      answer = call.get();
    } catch (InvalidFieldException | NotPermittedException | RateLimitedException
        | LimitReachedException e) {
      out.onError(status(e));
      return;
    }
    answer.whenComplete((result, failure) -> {
      if (failure == null) {
        out.onNext(result);
        out.onCompleted();
        return;
      }
      Throwable cause = failure instanceof CompletionException && failure.getCause() != null
          ? failure.getCause() : failure;
      out.onError(cause instanceof InvalidFieldException || cause instanceof NotPermittedException
          || cause instanceof RateLimitedException || cause instanceof LimitReachedException
          ? status((RuntimeException) cause) : Status.fromThrowable(cause).asRuntimeException());
    });
  }

  private static StatusRuntimeException status(RuntimeException e) {
    Status s = e instanceof InvalidFieldException ? Status.INVALID_ARGUMENT
        : e instanceof NotPermittedException ? Status.PERMISSION_DENIED
        : Status.RESOURCE_EXHAUSTED;
    return s.withDescription(e.getMessage()).asRuntimeException();
  }
}
