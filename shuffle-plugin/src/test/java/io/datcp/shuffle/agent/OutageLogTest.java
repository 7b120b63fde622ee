package io.datcp.shuffle.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class OutageLogTest {
  @Test
  void logsOncePerOutageNotPerFailure() {
    OutageLog log = new OutageLog("test");
    assertThat(log.succeeded()).as("no outage yet").isFalse();
    int logged = 0;
    for (int i = 0; i < 100; i++) {
      logged += log.failed(new IOException("connection refused")) ? 1 : 0;
    }
    assertThat(logged).isEqualTo(1);
    assertThat(log.isDown()).isTrue();
    assertThat(log.succeeded()).isTrue();
    assertThat(log.succeeded()).isFalse();
    assertThat(log.failed(new IOException("again"))).as("a new outage").isTrue();
  }
}
