package io.datcp.agent.testing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;

/**
 * A log handler that keeps the WARNING and SEVERE records published to it: tests that an
 * outage or a refusal is logged once add it to the loggers concerned (held strongly by the test:
 * the log manager keeps loggers only weakly) and read {@link #records}.
 */
public final class WarningLog extends Handler {
  public final List<LogRecord> records = new CopyOnWriteArrayList<>();

  @Override
  public void publish(LogRecord r) {
    if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
      records.add(r);
    }
  }

  @Override
  public void flush() {}

  @Override
  public void close() {}
}
