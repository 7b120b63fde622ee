package io.datcp.agent.kernel;

/** A libdatcp call failed: the negative errno and libdatcp's message for a person. */
public final class KernelException extends Exception {
  private final int errno;

  public KernelException(int errno, String message) {
    super(message + " (errno " + errno + ")");
    this.errno = errno;
  }

  /** The positive errno (e.g. 2 for ENOENT). */
  public int errno() {
    return errno;
  }
}
