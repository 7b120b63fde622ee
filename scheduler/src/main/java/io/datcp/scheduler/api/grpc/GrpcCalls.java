package io.datcp.scheduler.api.grpc;

import io.datcp.scheduler.ingest.Caller;
import io.datcp.scheduler.auth.NodeAuthInterceptor;
import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.common.LimitReachedException;
import io.datcp.scheduler.ingest.NotPermittedException;
import io.datcp.scheduler.ingest.RateLimitedException;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
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
    T result;
    try {
      result = call.get();
    } catch (InvalidFieldException e) {
      out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return;
    } catch (NotPermittedException e) {
      out.onError(Status.PERMISSION_DENIED.withDescription(e.getMessage()).asRuntimeException());
      return;
    } catch (RateLimitedException | LimitReachedException e) {
      out.onError(Status.RESOURCE_EXHAUSTED.withDescription(e.getMessage()).asRuntimeException());
      return;
    }
    out.onNext(result);
    out.onCompleted();
  }
}
