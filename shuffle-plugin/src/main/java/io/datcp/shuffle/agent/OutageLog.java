package io.datcp.shuffle.agent;

import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One log line when the agent becomes unreachable and one when it is back, never one per call. */
final class OutageLog {
  private static final Logger LOG = LoggerFactory.getLogger(OutageLog.class);
  private final AtomicBoolean down = new AtomicBoolean();
  private final String what;

  OutageLog(String what) {
    this.what = what;
  }

  /** Returns true when this failure began an outage (and was logged). */
  boolean failed(Throwable cause) {
    if (down.compareAndSet(false, true)) {
      LOG.warn("DATCP agent unreachable ({}): {}; plain Hadoop shuffle until it is back", what,
          cause.toString());
      return true;
    }
    return false;
  }

  /** Returns true when this success ended an outage (and was logged). */
  boolean succeeded() {
    if (down.compareAndSet(true, false)) {
      LOG.info("DATCP agent reachable again ({})", what);
      return true;
    }
    return false;
  }

  boolean isDown() {
    return down.get();
  }
}
