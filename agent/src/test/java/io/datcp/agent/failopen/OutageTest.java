package io.datcp.agent.failopen;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.agent.testing.WarningLog;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class OutageTest {
  private final Logger log = Logger.getLogger("test.OutageTest");
  private final WarningLog warnings = new WarningLog();
  /** The INFO lines: an outage's end. */
  private final List<LogRecord> backLines = new CopyOnWriteArrayList<>();
  private final Handler backCapture = new Handler() {
    @Override
    public void publish(LogRecord r) {
      if (r.getLevel() == Level.INFO) {
        backLines.add(r);
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };
  /** Odd: the outage marks its start with the low bit set. */
  private final AtomicLong now = new AtomicLong(TimeUnit.HOURS.toNanos(1) + 1);
  private Outage outage;

  @BeforeEach
  void attach() {
    log.addHandler(warnings);
    log.addHandler(backCapture);
    outage = new Outage(log, "scheduler at s:9090", "flows get the default policy", now::get);
  }

  @AfterEach
  void detach() {
    log.removeHandler(warnings);
    log.removeHandler(backCapture);
  }

  private void advanceSeconds(long s) {
    now.addAndGet(TimeUnit.SECONDS.toNanos(s));
  }

  private static String text(LogRecord r) {
    return new SimpleFormatter().formatMessage(r);
  }

  @Test
  void oneOutageIsOneLineWhenItStartsAndOneWhenItEnds() {
    assertThat(outage.down("DEADLINE_EXCEEDED")).isTrue();
    assertThat(outage.down("DEADLINE_EXCEEDED")).isFalse();
    advanceSeconds(3);
    outage.up();
    outage.up();
    assertThat(warnings.records).singleElement()
        .satisfies(r -> assertThat(text(r)).contains("scheduler at s:9090 unavailable"));
    assertThat(backLines).singleElement()
        .satisfies(r -> assertThat(text(r)).contains("is back after 3000 ms"));
    assertThat(outage.count()).isEqualTo(1);
  }

  /**
   * A dependency that fails now and then under load (the replay's agents: a lookup over its
   * deadline, the next one answered) makes one outage per failure; logged each time, that was
   * 74 warnings a round. Outages that begin within a minute of the last one logged are
   * counted, and the next line logged says how many.
   */
  @Test
  void outagesThatFollowEachOtherWithinAMinuteAreCountedNotLogged() {
    outage.down("DEADLINE_EXCEEDED");
    outage.up();
    for (int i = 0; i < 5; i++) {
      advanceSeconds(5);
      assertThat(outage.down("DEADLINE_EXCEEDED")).isTrue();
      outage.up();
    }
    assertThat(outage.count()).isEqualTo(6);
    assertThat(warnings.records).hasSize(1);
    assertThat(backLines).hasSize(1);

    advanceSeconds(61);
    outage.down("UNAVAILABLE");
    assertThat(warnings.records).hasSize(2);
    assertThat(text(warnings.records.get(1))).contains("unavailable (UNAVAILABLE)")
        .contains("5 outages since the last one logged");
    advanceSeconds(2);
    outage.up();
    assertThat(backLines).hasSize(2);
  }
}
