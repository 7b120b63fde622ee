package io.datcp.scheduler.policy;

import static io.datcp.scheduler.policy.PolicyRuleTest.rule;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.store.PolicyStore;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PolicyBookTest {
  @TempDir Path dir;
  private PolicyStore store;
  private PolicyBook book;

  @BeforeEach
  void open() {
    store = PolicyStore.open(dir, new ObjectMapper());
    book = new PolicyBook(store, FlowMode.DATCP, QuenchMode.SUSPEND);
  }

  @AfterEach
  void close() {
    store.close();
  }

  @Test
  void jobsMatchingNoRuleGetNoImportanceAndTheDefaults() {
    PolicyDecision d = book.decide(new JobConf("q", "u", "n", JobPriority.NORMAL));
    assertThat(d).isEqualTo(new PolicyDecision(0, 0, FlowMode.DATCP, QuenchMode.SUSPEND, ""));
  }

  @Test
  void theLowestOrderedMatchingRuleWins() {
    book.put(new PolicyRule("prod", 10, "prod", null, null, null, 3.0, 0.5, FlowMode.DATCP,
        QuenchMode.SUSPEND));
    book.put(new PolicyRule("prod-etl", 5, "prod", null, "etl-.*", null, 5.0, 0.25,
        FlowMode.PD2TCP, QuenchMode.KILL));

    assertThat(book.decide(new JobConf("prod", "u", "etl-1", JobPriority.NORMAL)))
        .isEqualTo(new PolicyDecision(5.0, 0.25, FlowMode.PD2TCP, QuenchMode.KILL, "prod-etl"));
    assertThat(book.decide(new JobConf("prod", "u", "report", JobPriority.NORMAL)).rule())
        .isEqualTo("prod");
  }

  @Test
  void aUserCannotRaiseTheirOwnImportanceThroughTheirJob() {
    book.put(new PolicyRule("gold", 1, "gold", null, null, null, 8.0, 0.5, FlowMode.DATCP,
        QuenchMode.SUSPEND));
    // Top priority and a name that shouts importance: still no rule for this queue.
    PolicyDecision d = book.decide(
        new JobConf("adhoc", "mallory", "importance=10 gold", JobPriority.VERY_HIGH));
    assertThat(d.importance()).isZero();
    assertThat(d.rule()).isEmpty();
  }

  @Test
  void rulesSurviveReopeningTheStore() {
    book.put(rule("a", 1));
    book.put(rule("b", 2));
    book.delete("a");
    store.close();

    store = PolicyStore.open(dir, new ObjectMapper());
    PolicyBook reopened = new PolicyBook(store, FlowMode.DATCP, QuenchMode.SUSPEND);
    assertThat(reopened.list()).extracting(PolicyRule::name).containsExactly("b");
  }

  @Test
  void anInvalidRuleInAReplacementChangesNothing() {
    book.put(rule("keep", 1));
    PolicyRule bad = new PolicyRule("bad", 2, null, null, null, null, 1.0, 7.0, FlowMode.DATCP,
        QuenchMode.SUSPEND);

    assertThatThrownBy(() -> book.replaceAll(List.of(rule("new", 1), bad)))
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("rules[1].phi"));
    assertThat(book.list()).extracting(PolicyRule::name).containsExactly("keep");
    assertThat(store.loadAll()).extracting(PolicyRule::name).containsExactly("keep");
  }

  @Test
  void duplicateNamesInAReplacementAreRejected() {
    assertThatThrownBy(() -> book.replaceAll(List.of(rule("x", 1), rule("x", 2))))
        .isInstanceOfSatisfying(InvalidFieldException.class,
            e -> assertThat(e.field()).isEqualTo("rules[1].name"));
  }

  @Test
  void changesBumpTheVersionSoCachedDecisionsAreDropped() {
    long v = book.version();
    book.put(rule("a", 1));
    assertThat(book.version()).isGreaterThan(v);
  }
}
