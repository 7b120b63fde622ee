package io.datcp.scheduler.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The files through which the benchmark and an attacker in its own JVM agree on when to attack. */
class AttackSignalsTest {
  @TempDir Path dir;

  @Test
  void attackerWaitsForItsOwnRoundOnly() throws Exception {
    AttackSignals benchmark = new AttackSignals(dir);
    AttackSignals attacker = new AttackSignals(dir);
    Thread waiting = new Thread(() -> {
      try {
        attacker.awaitAttack(2);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    waiting.start();
    benchmark.startAttack(1);
    waiting.join(200);
    assertThat(waiting.isAlive()).as("attack 1's signal does not start attack 2").isTrue();
    benchmark.startAttack(2);
    waiting.join(TimeUnit.SECONDS.toMillis(30));
    assertThat(waiting.isAlive()).as("attack 2's signal ends the wait").isFalse();
  }

  @Test
  void signalSentBeforeTheAttackerWaitsIsNotMissed() throws Exception {
    new AttackSignals(dir).startAttack(1);
    new AttackSignals(dir).awaitAttack(1);
    assertThat(dir.resolve("attack-1")).exists();
  }

  @Test
  void summaryTravelsWholeAndReadyIsAFileTheScriptCanWaitFor() throws Exception {
    AttackSignals attacker = new AttackSignals(dir);
    attacker.ready();
    assertThat(dir.resolve("ready")).exists();
    attacker.attackSummary(1, "attacker 12 calls/s answered");
    assertThat(new AttackSignals(dir).awaitSummary(1, Duration.ofSeconds(5)))
        .isEqualTo("attacker 12 calls/s answered");
    try (var files = Files.list(dir)) {
      assertThat(files.map(p -> p.getFileName().toString()))
          .as("no file left half-written aside").containsExactlyInAnyOrder("ready", "summary-1");
    }
  }

  @Test
  void missingSummaryTimesOutNamingTheAttackersJvm() {
    assertThatThrownBy(() -> new AttackSignals(dir).awaitSummary(3, Duration.ofMillis(100)))
        .isInstanceOf(TimeoutException.class).hasMessageContaining("summary-3")
        .hasMessageContaining("ATTACKER_JVM");
  }
}
