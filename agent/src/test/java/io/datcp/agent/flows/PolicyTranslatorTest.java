package io.datcp.agent.flows;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.kernel.FlowMeta;
import io.datcp.proto.v1.FlowMode;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.QuenchMode;
import org.junit.jupiter.api.Test;

class PolicyTranslatorTest {
  private final PolicyTranslator translator = new PolicyTranslator(AgentConf.defaults());

  private static FlowPolicy withDeadline(long unixNanos) {
    return FlowPolicy.newBuilder().setJobId("job_1_0001").setDeadlineUnixNanos(unixNanos)
        .setMode(FlowMode.FLOW_MODE_DATCP).setQuenchMode(QuenchMode.QUENCH_MODE_SUSPEND).build();
  }

  @Test
  void aDeadlineAheadKeepsItsDistanceOnTheMonotonicClock() {
    long nowUnix = 1_795_000_000_000_000_000L;
    FlowMeta m = translator.meta(withDeadline(nowUnix + 2_000_000_000L), 10, 1, 5_000_000_000L,
        6_000_000_000L, nowUnix);
    assertThat(m.deadlineNs()).isEqualTo(8_000_000_000L);
  }

  @Test
  void aDeadlineAlreadyPastBecomesAnOverdueDeadlineTheKernelAccepts() {
    // the scheduler's deadline passed 3 s ago: the kernel refuses deadlines in the past, so it
    // must land just after now (the kernel's overdue give-up), not 3 s before now
    long nowUnix = 1_795_000_000_000_000_000L;
    long nowMono = 6_000_000_000L;
    FlowMeta m = translator.meta(withDeadline(nowUnix - 3_000_000_000L), 10, 1, 5_000_000_000L,
        nowMono, nowUnix);
    assertThat(m.deadlineNs()).isGreaterThan(nowMono)
        .isLessThanOrEqualTo(nowMono + PolicyTranslator.OVERDUE_GRACE_NANOS);
  }
}
