package io.datcp.scheduler.api.rest;

import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.linecorp.armeria.common.HttpRequest;
import com.linecorp.armeria.common.HttpResponse;
import com.linecorp.armeria.common.HttpStatus;
import com.linecorp.armeria.server.ServiceRequestContext;
import com.linecorp.armeria.server.annotation.ExceptionHandlerFunction;
import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.ingest.RateLimitedException;

/** Maps domain failures and JSON binding errors to 4xx answers that name the field. */
public final class RestErrors implements ExceptionHandlerFunction {

  @Override
  public HttpResponse handleException(ServiceRequestContext ctx, HttpRequest req, Throwable cause) {
    if (cause instanceof InvalidFieldException e) {
      return HttpResponse.ofJson(HttpStatus.BAD_REQUEST, new ApiError(e.getMessage(), e.field()));
    }
    if (cause instanceof NotFoundException e) {
      return HttpResponse.ofJson(HttpStatus.NOT_FOUND, new ApiError(e.getMessage(), e.field()));
    }
    if (cause instanceof RateLimitedException e) {
      return HttpResponse.ofJson(HttpStatus.TOO_MANY_REQUESTS, new ApiError(e.getMessage(), null));
    }
    JsonMappingException json = jsonCause(cause);
    if (json != null) {
      String field = path(json);
      String detail = json instanceof UnrecognizedPropertyException
          ? "unknown field" : rootMessage(json);
      return HttpResponse.ofJson(HttpStatus.BAD_REQUEST,
          new ApiError((field.isEmpty() ? "body" : field) + ": " + detail,
              field.isEmpty() ? "body" : field));
    }
    return ExceptionHandlerFunction.fallthrough();
  }

  private static JsonMappingException jsonCause(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof JsonMappingException j) {
        return j;
      }
    }
    return null;
  }

  /** "rules[0].mode" from Jackson's reference path. */
  private static String path(JsonMappingException e) {
    StringBuilder sb = new StringBuilder();
    for (JsonMappingException.Reference ref : e.getPath()) {
      if (ref.getFieldName() != null) {
        if (sb.length() > 0) {
          sb.append('.');
        }
        sb.append(ref.getFieldName());
      } else if (ref.getIndex() >= 0) {
        sb.append('[').append(ref.getIndex()).append(']');
      }
    }
    return sb.toString();
  }

  private static String rootMessage(Throwable t) {
    Throwable c = t;
    while (c.getCause() != null && c.getCause() != c) {
      c = c.getCause();
    }
    String m = c instanceof JsonMappingException j ? j.getOriginalMessage() : c.getMessage();
    return m == null ? "malformed value" : m.lines().findFirst().orElse(m);
  }
}
