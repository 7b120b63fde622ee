package io.datcp.agent.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.failopen.Outage;
import io.datcp.agent.testing.WarningLog;
import io.datcp.proto.v1.RefusedEvent;
import io.datcp.proto.v1.ReportAck;
import io.grpc.Status;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A refusal is not an outage: what the scheduler refuses (events one by one in its answer, or a
 * whole batch from a scheduler that refuses whole batches) is dropped, counted and logged once
 * per cause, and the reports queued behind it go out (the trace replay's hosts retried one
 * refused batch for the rest of the round, and none of their later reports arrived).
 */
class BatchSenderTest {
  private static final String NOT_ON_IT =
      "the reporting host may not report reduce 1 of job_1_1, which does not run on it";

  private final Logger log = Logger.getLogger("test.BatchSenderTest");
  private final Logger senderLog = Logger.getLogger(BatchSender.class.getName());
  private final WarningLog capture = new WarningLog();
  private final List<LogRecord> lines = capture.records;
  private final MeterRegistry meters = new SimpleMeterRegistry();
  private final Outage outage = new Outage(log, "scheduler", "reports queue");
  /** Every batch the transport was asked to send, in order (retries included). */
  private final List<List<String>> calls = new CopyOnWriteArrayList<>();
  private BatchSender<String> sender;

  @BeforeEach
  void capture() {
    log.addHandler(capture);
    senderLog.addHandler(capture);
  }

  @AfterEach
  void stop() {
    if (sender != null) {
      sender.close();
    }
    log.removeHandler(capture);
    senderLog.removeHandler(capture);
  }

  private void start(Function<List<String>, ReportAck> scheduler) {
    sender = new BatchSender<>("shuffle-reports", (batch, id) -> {
      calls.add(List.copyOf(batch));
      return scheduler.apply(batch);
    }, outage, 100, 10, 20, new Backoff(10, 50), meters);
  }

  /** Sends each event alone, waiting until the transport saw it. */
  private void offerOneByOne(String... events) {
    for (String e : events) {
      int before = calls.size();
      sender.offer(List.of(e));
      await().atMost(Duration.ofSeconds(5)).until(() -> calls.size() > before);
    }
  }

  private List<String> sent() {
    List<String> all = new ArrayList<>();
    calls.forEach(all::addAll);
    return all;
  }

  private double refused(String reason) {
    var c = meters.find("datcp.agent.reports.refused").tag("queue", "shuffle-reports")
        .tag("reason", reason).counter();
    return c == null ? 0 : c.count();
  }

  private long logged(String text) {
    return lines.stream().filter(r -> format(r).contains(text)).count();
  }

  private static String format(LogRecord r) {
    return new java.util.logging.SimpleFormatter().formatMessage(r);
  }

  private static ReportAck accepted(int n) {
    return ReportAck.newBuilder().setAccepted(n).build();
  }

  @Test
  void aBatchRefusedWholeIsDroppedOnceAndTheReportsBehindItGoOut() {
    // a scheduler that refuses a batch whole when one event may not be reported
    start(batch -> {
      if (batch.stream().anyMatch(e -> e.startsWith("bad"))) {
        throw Status.PERMISSION_DENIED.withDescription(NOT_ON_IT).asRuntimeException();
      }
      return accepted(batch.size());
    });

    offerOneByOne("bad-1", "good-1", "bad-2", "good-2");

    await().atMost(Duration.ofSeconds(5)).until(() -> sent().contains("good-2"));
    assertThat(calls).containsExactly(List.of("bad-1"), List.of("good-1"), List.of("bad-2"),
        List.of("good-2"));
    assertThat(refused("not_permitted")).isEqualTo(2);
    assertThat(outage.count()).isZero();
    assertThat(logged("unavailable")).isZero();
    assertThat(logged("refused")).isEqualTo(1);
    assertThat(logged(NOT_ON_IT)).isEqualTo(1);
  }

  @Test
  void eventsTheSchedulerRefusesOneByOneAreCountedAndLoggedOncePerCause() {
    start(batch -> {
      ReportAck.Builder ack = ReportAck.newBuilder();
      for (int i = 0; i < batch.size(); i++) {
        if (batch.get(i).startsWith("bad")) {
          ack.addRefused(RefusedEvent.newBuilder().setIndex(i)
              .setCode(Status.Code.PERMISSION_DENIED.value()).setMessage(NOT_ON_IT));
        } else if (batch.get(i).startsWith("invalid")) {
          ack.addRefused(RefusedEvent.newBuilder().setIndex(i)
              .setCode(Status.Code.INVALID_ARGUMENT.value())
              .setMessage("events[" + i + "].mapId: must be >= 0"));
        }
      }
      return ack.setAccepted(batch.size() - ack.getRefusedCount()).build();
    });

    offerOneByOne("bad-1", "good-1", "bad-2", "invalid-1", "good-2");

    assertThat(calls).hasSize(5); // nothing sent again
    assertThat(refused("not_permitted")).isEqualTo(2);
    assertThat(refused("invalid")).isEqualTo(1);
    assertThat(meters.find("datcp.agent.reports.sent").tag("queue", "shuffle-reports")
        .counter().count()).isEqualTo(2);
    assertThat(outage.count()).isZero();
    assertThat(logged(NOT_ON_IT)).isEqualTo(1);
    assertThat(logged("mapId: must be >= 0")).isEqualTo(1);
    assertThat(logged("unavailable")).isZero();
  }

  @Test
  void aBatchRefusedAsInvalidIsDroppedAndLoggedOncePerCause() {
    start(batch -> {
      if (batch.contains("big")) {
        throw Status.INVALID_ARGUMENT.withDescription("events: batch of 1001 exceeds the limit"
            + " of 1000").asRuntimeException();
      }
      return accepted(batch.size());
    });

    offerOneByOne("big", "big", "good");

    await().atMost(Duration.ofSeconds(5)).until(() -> sent().contains("good"));
    assertThat(calls).hasSize(3);
    assertThat(refused("invalid")).isEqualTo(2);
    assertThat(logged("exceeds the limit")).isEqualTo(1);
    assertThat(outage.count()).isZero();
  }

  @Test
  void anUnreachableSchedulerIsStillAnOutageAndTheBatchWaitsForIt() {
    AtomicBoolean up = new AtomicBoolean();
    start(batch -> {
      if (!up.get()) {
        throw Status.UNAVAILABLE.withDescription("connection refused").asRuntimeException();
      }
      return accepted(batch.size());
    });

    sender.offer(List.of("kept"));
    await().atMost(Duration.ofSeconds(5)).until(() -> calls.size() >= 3);
    up.set(true);

    await().atMost(Duration.ofSeconds(5)).until(() -> !outage.isDown() && sender.queued() == 0
        && calls.get(calls.size() - 1).equals(List.of("kept")));
    assertThat(calls).allMatch(b -> b.equals(List.of("kept")));
    assertThat(outage.count()).isEqualTo(1);
    assertThat(logged("unavailable")).isEqualTo(1);
    assertThat(refused("invalid") + refused("not_permitted")).isZero();
  }
}
