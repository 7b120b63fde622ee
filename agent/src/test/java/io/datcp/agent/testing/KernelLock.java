package io.datcp.agent.testing;

import com.sun.jna.Library;
import com.sun.jna.Native;
import io.datcp.agent.kernel.DatcpKernel;
import io.datcp.agent.kernel.KernelException;
import java.io.IOException;

/**
 * The machine-wide lock every process takes around loading datcp, writing its maps or
 * configuring switch ports: flock(2) on /tmp/datcp-kernel.lock, exactly what
 * `flock /tmp/datcp-kernel.lock CMD` takes. (Java's FileChannel.lock() takes an fcntl record
 * lock, which on Linux does not exclude flock(2) holders, so it is not used.) On release it
 * unloads datcp unless flows or switch ports of someone else remain. Test classes take it through
 * {@link KernelLockExtension}.
 */
public final class KernelLock implements AutoCloseable {
  private static final String LOCK = "/tmp/datcp-kernel.lock";
  private static final int O_WRONLY = 01;
  private static final int O_CREAT = 0100;
  private static final int O_CLOEXEC = 02000000;
  private static final int LOCK_EX = 2;

  /** The libc calls the lock needs. */
  interface LibC extends Library {
    LibC INSTANCE = Native.load("c", LibC.class);

    int open(String path, int flags, int mode);

    int flock(int fd, int op);

    int close(int fd);
  }

  private final int fd;

  private KernelLock(int fd) {
    this.fd = fd;
  }

  /** Blocks until the lock is held. */
  static KernelLock acquire() throws IOException {
    int fd = LibC.INSTANCE.open(LOCK, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
      throw new IOException("cannot open " + LOCK + ": errno " + Native.getLastError());
    }
    if (LibC.INSTANCE.flock(fd, LOCK_EX) != 0) {
      LibC.INSTANCE.close(fd);
      throw new IOException("flock " + LOCK + ": errno " + Native.getLastError());
    }
    return new KernelLock(fd);
  }

  /** libdatcp built by make -C kmod (surefire passes its path). */
  public static String library() {
    return System.getProperty("datcp.lib");
  }

  @Override
  public void close() {
    try {
      DatcpKernel.attach(library()).unloadIfUnused();
    } catch (KernelException e) {
      System.err.println("KernelLock: unload: " + e.getMessage());
    } finally {
      LibC.INSTANCE.close(fd); // releases the flock
    }
  }
}
