package io.datcp.scheduler.api.grpc;

import io.datcp.scheduler.InvalidFieldException;
import io.datcp.scheduler.limits.RateLimitedException;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.function.Supplier;

/** Runs a unary call against the domain service and maps its failures onto gRPC statuses. */
final class GrpcCalls {
  private GrpcCalls() {}

  static <T> void unary(StreamObserver<T> out, Supplier<T> call) {
    T result;
    try {
      result = call.get();
    } catch (InvalidFieldException e) {
      out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    } catch (RateLimitedException e) {
      out.onError(Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    out.onNext(result);
    out.onCompleted();
  }
}
