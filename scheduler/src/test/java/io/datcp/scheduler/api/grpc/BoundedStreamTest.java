package io.datcp.scheduler.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Update streams respect the client's readiness and stay bounded (issue 9 item 9). */
class BoundedStreamTest {
  /** A transport whose readiness the test sets, recording what was written. */
  static final class FakeCall extends ServerCallStreamObserver<String> {
    boolean ready;
    Runnable onReady = () -> {};
    final List<String> sent = new ArrayList<>();
    Throwable error;

    void becomeReady() {
      ready = true;
      onReady.run();
    }

    @Override
    public boolean isReady() {
      return ready;
    }

    @Override
    public void setOnReadyHandler(Runnable r) {
      onReady = r;
    }

    @Override
    public boolean isCancelled() {
      return false;
    }

    @Override
    public void setOnCancelHandler(Runnable r) {}

    @Override
    public void setCompression(String c) {}

    @Override
    public void disableAutoInboundFlowControl() {}

    @Override
    public void request(int n) {}

    @Override
    public void setMessageCompression(boolean enable) {}

    @Override
    public void onNext(String value) {
      sent.add(value);
    }

    @Override
    public void onError(Throwable t) {
      error = t;
    }

    @Override
    public void onCompleted() {}
  }

  @Test
  void messagesWaitWhileTheClientIsNotReadyAndGoOutOnReady() {
    FakeCall call = new FakeCall();
    BoundedStream<String> s = new BoundedStream<>(call, 3, false, () -> {});
    s.send("a");
    s.send("b");
    assertThat(call.sent).isEmpty();
    assertThat(s.queued()).isEqualTo(2);

    call.becomeReady();
    assertThat(call.sent).containsExactly("a", "b");
    s.send("c");
    assertThat(call.sent).containsExactly("a", "b", "c");
  }

  @Test
  void aStreamTooFarBehindIsClosedWithResourceExhausted() {
    FakeCall call = new FakeCall();
    AtomicInteger overflows = new AtomicInteger();
    BoundedStream<String> s = new BoundedStream<>(call, 3, false, overflows::incrementAndGet);
    for (int i = 0; i < 10; i++) {
      s.send("u" + i);
    }
    assertThat(overflows).hasValue(1);
    assertThat(s.closed()).isTrue();
    assertThat(s.queued()).isZero();
    assertThat(Status.fromThrowable(call.error).getCode())
        .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    call.becomeReady();
    assertThat(call.sent).isEmpty();
  }

  @Test
  void aWholeStateStreamKeepsOnlyTheNewestMessage() {
    FakeCall call = new FakeCall();
    BoundedStream<String> s = new BoundedStream<>(call, 1, true, () -> {});
    s.send("v1");
    s.send("v2");
    s.send("v3");
    call.becomeReady();
    assertThat(call.sent).containsExactly("v3");
    assertThat(call.error).isNull();
  }
}
