package io.datcp.scheduler.common;

import java.util.Arrays;
import java.util.Collection;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A fixed set of locks striped by key (job id or host name): calls about different keys rarely
 * share a lock, calls about one key always do. Several keys are locked in ascending stripe
 * order, so two holders of overlapping key sets cannot deadlock. Locks are reentrant.
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

  /** Locks the stripes of all {@code keys}, lowest index first. */
  public Held hold(Collection<String> keys) {
    if (keys.size() == 1) {
      return hold(keys.iterator().next());
    }
    int[] wanted = new int[keys.size()];
    int k = 0;
    for (String key : keys) {
      wanted[k++] = index(key);
    }
    Arrays.sort(wanted);
    int[] taken = new int[wanted.length];
    int n = 0;
    for (int i = 0; i < wanted.length; i++) {
      if (i == 0 || wanted[i] != wanted[i - 1]) {
        locks[wanted[i]].lock();
        taken[n++] = wanted[i];
      }
    }
    int count = n;
    return () -> {
      for (int i = count - 1; i >= 0; i--) {
        locks[taken[i]].unlock();
      }
    };
  }

  private int index(String key) {
    int h = key.hashCode();
    // Spread the high bits down, as HashMap does: similar ids differ mostly in their last chars.
    return (h ^ (h >>> 16)) & (locks.length - 1);
  }
}
