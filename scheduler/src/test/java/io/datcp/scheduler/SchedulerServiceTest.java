package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.ingest.Ack;
import io.datcp.scheduler.ingest.Caller;
import io.datcp.scheduler.ingest.Refused;
import io.datcp.scheduler.config.SchedulerConf;
import io.datcp.scheduler.flows.FlowOutcome;
import io.datcp.scheduler.flows.QuenchOutcome;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.policy.FlowMode;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import io.datcp.scheduler.policy.PolicyRule;
import io.datcp.scheduler.policy.QuenchMode;
import io.datcp.scheduler.serve.FlowPolicy;
import io.datcp.scheduler.serve.PolicyUpdate;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Domain-service behaviour beyond the job A/B scenario. */
class SchedulerServiceTest {
  private static final long MB = 1_000_000L;
  private static final long S = 1_000_000_000L;

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));

  private SchedulerService startedJob(SchedulerConf conf) {
    SchedulerService s = TestServices.create(dir, clock, conf);
    long t = clock.nanos();
    s.report("node1", List.of(
        new JobEvent.ReduceStarted(t, "etl_1", 0, "node1", 1, 1,
            new JobConf("prod", "bob", "etl-daily", JobPriority.HIGH), 0),
        new JobEvent.MapCompleted(t, "etl_1", 0, 0, "m1", S, 10 * MB, 0)));
    return s;
  }

  @Test
  void anOperatorRuleChangePushesTheNewImportanceToAgentsWithFlowsInFlight() {
    // rules alone set importance here (the job would otherwise be first in its host's order)
    SchedulerService s = startedJob(TestServices.dev(
        java.util.Map.of("planner.firstJobImportance", "0")));
    List<PolicyUpdate> updates = new CopyOnWriteArrayList<>();
    s.watch("m1", false, updates::add);
    assertThat(s.lookup("m1", "etl_1", 0, 10 * MB).importance()).isZero();

    s.putPolicy(new PolicyRule("prod", 1, "prod", null, null, null, 4.0, 0.5, FlowMode.DATCP,
        QuenchMode.KILL));

    assertThat(updates).singleElement().satisfies(u -> {
      assertThat(u.policy().importance()).isEqualTo(4.0);
      assertThat(u.policy().quenchMode()).isEqualTo(QuenchMode.KILL);
      assertThat(u.policy().rule()).isEqualTo("prod");
    });
  }

  @Test
  void modeOffLeavesTheFlowToPlainTcp() {
    SchedulerService s = startedJob(TestServices.dev());
    s.putPolicy(new PolicyRule("hands-off", 1, null, "bob", null, null, 0.0, 0.0, FlowMode.OFF,
        QuenchMode.SUSPEND));

    FlowPolicy p = s.lookup("m1", "etl_1", 0, 10 * MB);
    assertThat(p.mode()).isEqualTo(FlowMode.OFF);
    assertThat(p.deadlineUnixNanos()).isZero();
    assertThat(p.reason()).contains("mode off", "hands-off");
  }

  @Test
  void flowsOfUnknownJobsFailOpenWithoutADeadline() {
    SchedulerService s = TestServices.create(dir, clock, TestServices.dev());
    FlowPolicy p = s.lookup("m1", "job_never_reported", 0, 10 * MB);

    assertThat(p.deadlineUnixNanos()).isZero();
    assertThat(p.desiredRateBitsPerSecond()).isZero();
    assertThat(p.mode()).isEqualTo(FlowMode.DATCP);
    assertThat(p.reason()).contains("not known");
  }

  @Test
  void theDefaultModeAndQuenchModeComeFromTheConfiguration() {
    // firstJobImportance 0: the lone job is first in its host's order, which would turn
    // quenching off for its flows
    SchedulerService s = startedJob(TestServices.dev(Map.of(
        "policy.defaultMode", "dctcp", "policy.defaultQuenchMode", "kill",
        "planner.firstJobImportance", "0")));
    FlowPolicy p = s.lookup("m1", "etl_1", 0, 10 * MB);

    assertThat(p.mode()).isEqualTo(FlowMode.DCTCP);
    assertThat(p.quenchMode()).isEqualTo(QuenchMode.KILL);
  }

  @Test
  void aFlowIsNeverAskedToBeatItsOwnSizeAtTheUsableRate() {
    SchedulerService s = startedJob(TestServices.dev());
    // The model knows 10 MB are left; this flow carries 40 MB (e.g. several map outputs).
    FlowPolicy p = s.lookup("m1", "etl_1", 0, 40 * MB);

    assertThat(p.deadlineNanos()).isEqualTo(4 * S);
    assertThat(p.reason()).contains("raised to this flow's own transfer time");
  }

  @Test
  void lookupsNameTheirBadField() {
    SchedulerService s = TestServices.create(dir, clock, TestServices.dev());
    assertThatThrownBy(() -> s.lookup("m1", "j", 0, -1))
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("bytes"));
    assertThatThrownBy(() -> s.lookup("", "j", 0, 1))
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("agentHost"));
  }

  @Test
  void finishedJobsBeyondTheRetentionAreForgottenWithTheirFlows() {
    SchedulerService s = TestServices.create(dir, clock,
        TestServices.dev(Map.of("jobs.retainFinished", "1")));
    long t = clock.nanos();
    JobConf conf = new JobConf("q", "u", "n", JobPriority.NORMAL);
    for (String job : List.of("j1", "j2")) {
      s.report("node1", List.of(new JobEvent.ReduceStarted(t, job, 0, "node1", 1, 1, conf, 0),
          new JobEvent.JobFinished(t + S, job, true)));
    }

    assertThat(s.job("j1")).isEmpty();
    assertThat(s.job("j2")).get().satisfies(j -> assertThat(j.state()).isEqualTo("succeeded"));
  }

  @Test
  void twoReducesOfOneJobOnOneHostCountTheJobsBytesOnce() {
    SchedulerService s = TestServices.create(dir, clock, TestServices.dev());
    long t = clock.nanos();
    JobConf conf = new JobConf("q", "u", "two", JobPriority.NORMAL);
    s.report("node1", List.of(
        new JobEvent.ReduceStarted(t, "two_1", 0, "node1", 1, 2, conf, 0),
        new JobEvent.ReduceStarted(t, "two_1", 1, "node1", 1, 2, conf, 0),
        new JobEvent.MapCompleted(t, "two_1", 0, 0, "m1", S, 10 * MB, 0),
        new JobEvent.MapCompleted(t, "two_1", 1, 0, "m1", S, 10 * MB, 0)));

    // 20 MB for both reduces at 80 Mbit/s usable: 2.0 s (counting the job twice gave 4.0 s).
    assertThat(s.lookup("m1", "two_1", 0, 10 * MB).deadlineNanos()).isEqualTo(2 * S);
  }

  @Test
  void anInvalidOutcomeIsRefusedOnItsOwnNamedByItsPositionAndField() {
    // names are joined only when a check fails (issue 9 item 10), so check the joined name
    SchedulerService s = startedJob(TestServices.dev());
    long t = clock.nanos();
    FlowOutcome ok = new FlowOutcome("etl_1", 0, "m1", "node1", MB, t, 0, t + S, true,
        QuenchOutcome.NONE, null);
    FlowOutcome negative = new FlowOutcome("etl_1", 0, "m1", "node1", -1, t, 0, t + S, true,
        QuenchOutcome.NONE, null);

    Ack ack = s.reportOutcomes(new Caller("m1", false), "", 0, List.of(ok, negative));

    assertThat(ack.accepted()).isEqualTo(1);
    assertThat(ack.refused()).singleElement().satisfies(r -> {
      assertThat(r.index()).isEqualTo(1);
      assertThat(r.reason()).isEqualTo(Refused.Reason.INVALID);
      assertThat(r.message()).startsWith("outcomes[1].bytes: ");
    });
  }
}
