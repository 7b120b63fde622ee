package io.datcp.scheduler.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.scheduler.jobs.Job;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobLimits;
import io.datcp.scheduler.jobs.JobRegistry;
import io.datcp.scheduler.plan.Replanner.Decision;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The planner's decisions as the metrics count them (datcp_planner_decisions_total): each one
 * handed to the agents, named by what changed for the job on the reducer's downlink.
 */
class PlanDecisionsTest {
  private static final long T0 = 1_700_000_000_000_000_000L;
  private static final long S = 1_000_000_000L;
  private static final long MB = 1_000_000L;
  private static final String HOST = "node1";
  private static final JobConf CONF = new JobConf("q", "u", "n", JobPriority.NORMAL);

  private final JobRegistry registry = new JobRegistry(10, true,
      new JobLimits(10_000, 100_000, 10_000, 1_000, 2_000_000, 500_000, 1_000));
  private final Replanner planner = new Replanner(registry, 100_000_000L, 0.8, false);
  private final List<Decision> decisions = new ArrayList<>();

  PlanDecisionsTest() {
    planner.onDecision(decisions::add);
  }

  private void apply(JobEvent e, long now) {
    Job job = registry.apply(e, new HashSet<>(), now);
    planner.publishDemands(job, null, now);
    planner.replan(Set.of(HOST), now, (j, h, d, n) -> { });
  }

  @Test
  void aJobsFirstPlanThenFirstInOrderThenOvertakenByASmallerShuffle() {
    // a job is planned on a host once bytes for it are known there
    apply(new JobEvent.ReduceStarted(T0, "a", 0, HOST, 2, 1, CONF, T0), T0);
    apply(new JobEvent.MapOutputIndexed(T0 + S, "a", 0, "m0", List.of(100 * MB)), T0 + S);
    apply(new JobEvent.MapCompleted(T0 + S, "a", 0, 0, "m0", S, -1, -1), T0 + S);
    assertThat(planner.planned(HOST, "a").waiting()).isTrue();
    assertThat(decisions).containsExactly(Decision.NEW);

    decisions.clear();
    long last = T0 + 2 * S;
    apply(new JobEvent.MapOutputIndexed(last, "a", 1, "m1", List.of(100 * MB)), last);
    apply(new JobEvent.MapCompleted(last, "a", 0, 1, "m1", S, -1, -1), last);
    assertThat(planner.planned(HOST, "a").waiting()).isFalse();
    assertThat(planner.planned(HOST, "a").first()).isTrue();
    // becoming first is named before stopping to wait: importance follows from it
    assertThat(decisions).containsExactly(Decision.FIRST);

    decisions.clear();
    long t = T0 + 3 * S;
    apply(new JobEvent.ReduceStarted(t, "b", 0, HOST, 1, 1, CONF, t), t);
    apply(new JobEvent.MapOutputIndexed(t, "b", 0, "m9", List.of(MB)), t);
    apply(new JobEvent.MapCompleted(t, "b", 0, 0, "m9", S, -1, -1), t);
    // b's 1 MB goes before a's 200 MB: smallest remaining shuffle first
    assertThat(planner.planned(HOST, "b").first()).isTrue();
    assertThat(planner.planned(HOST, "a").first()).isFalse();
    // b is first from its first plan on: that decision is named new
    assertThat(decisions).containsExactlyInAnyOrder(Decision.NEW, Decision.NOT_FIRST);
  }
}
