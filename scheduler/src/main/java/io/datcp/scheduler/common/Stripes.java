package io.datcp.scheduler.common;

import java.util.concurrent.locks.ReentrantLock;

/**
 * A fixed set of locks striped by key (job id or host name): calls about different keys rarely
 * share a lock, calls about one key always do. A holder takes one key's stripe at a time (a
 * batch naming many jobs holding all of theirs stalled every call on them). Locks are
 * reentrant.
 */
public final class Stripes {
  private final ReentrantLock[] locks;

  /** @param count number of locks, a power of two */
  public Stripes(int count) {
    if (Integer.bitCount(count) != 1) {
      throw new IllegalArgumentException("count must be a power of two: " + count);
    }
    locks = new ReentrantLock[count];
    for (int i = 0; i < count; i++) {
      locks[i] = new ReentrantLock();
    }
  }

  /** Held stripes; closing releases them. */
  public interface Held extends AutoCloseable {
    @Override
    void close();
  }

  /** Locks the stripe of {@code key}. */
  public Held hold(String key) {
    ReentrantLock lock = locks[index(key)];
    lock.lock();
    return lock::unlock;
  }

  private int index(String key) {
    int h = key.hashCode();
    // Spread the high bits down, as HashMap does: similar ids differ mostly in their last chars.
    return (h ^ (h >>> 16)) & (locks.length - 1);
  }
}
