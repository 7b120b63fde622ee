package io.datcp.scheduler.store;

/** The policy store could not be read or written. */
public final class StoreException extends RuntimeException {
  StoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
