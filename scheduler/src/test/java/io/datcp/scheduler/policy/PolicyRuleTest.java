package io.datcp.scheduler.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.scheduler.common.InvalidFieldException;
import org.junit.jupiter.api.Test;

class PolicyRuleTest {
  private static final JobConf JOB =
      new JobConf("prod", "alice", "etl-nightly-42", JobPriority.HIGH);

  static PolicyRule rule(String name, int order) {
    return new PolicyRule(name, order, null, null, null, null, 2.0, 0.5, FlowMode.DATCP,
        QuenchMode.SUSPEND);
  }

  @Test
  void anEmptyRuleMatchesEveryJob() {
    assertThat(rule("all", 1).matches(JOB)).isTrue();
  }

  @Test
  void everyCriterionMustMatch() {
    PolicyRule r = new PolicyRule("r", 1, "prod", "alice", "etl-.*", JobPriority.NORMAL, 3.0,
        0.5, FlowMode.DATCP, QuenchMode.SUSPEND);
    assertThat(r.matches(JOB)).isTrue();
    assertThat(r.matches(new JobConf("adhoc", "alice", "etl-x", JobPriority.HIGH))).isFalse();
    assertThat(r.matches(new JobConf("prod", "bob", "etl-x", JobPriority.HIGH))).isFalse();
    assertThat(r.matches(new JobConf("prod", "alice", "xetl-x", JobPriority.HIGH))).isFalse();
    assertThat(r.matches(new JobConf("prod", "alice", "etl-x", JobPriority.LOW))).isFalse();
    assertThat(r.matches(new JobConf("prod", "alice", "etl-x", null))).isFalse();
  }

  @Test
  void theJobNamePatternMustMatchTheWholeName() {
    PolicyRule r = new PolicyRule("r", 1, null, null, "etl", null, 1.0, 0.5, FlowMode.DATCP,
        QuenchMode.SUSPEND);
    assertThat(r.matches(JOB)).isFalse();
  }

  @Test
  void validationNamesTheBadField() {
    assertThatThrownBy(() -> rule("bad name!", 1).validate())
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("name"));
    assertThatThrownBy(() -> new PolicyRule("r", 1, null, null, "(", null, 1.0, 0.5,
        FlowMode.DATCP, QuenchMode.SUSPEND).validate())
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("jobNamePattern"));
    assertThatThrownBy(() -> new PolicyRule("r", 1, null, null, null, null, 11.0, 0.5,
        FlowMode.DATCP, QuenchMode.SUSPEND).validate())
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("importance"));
    assertThatThrownBy(() -> new PolicyRule("r", 1, null, null, null, null, 1.0, -0.1,
        FlowMode.DATCP, QuenchMode.SUSPEND).validate())
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("phi"));
    assertThatThrownBy(() -> new PolicyRule("r", 1, null, null, null, null, 1.0, 0.1,
        null, QuenchMode.SUSPEND).validate())
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("mode"));
    assertThatThrownBy(() -> new PolicyRule("r", null, null, null, null, null, 1.0, 0.1,
        FlowMode.DATCP, QuenchMode.KILL).validate())
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("order"));
  }
}
