package io.datcp.scheduler.api.rest;

/** The named resource does not exist; answered with 404. */
final class NotFoundException extends RuntimeException {
  private final String field;

  NotFoundException(String field, String message) {
    super(message);
    this.field = field;
  }

  String field() {
    return field;
  }
}
