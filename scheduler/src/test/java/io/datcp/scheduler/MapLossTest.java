package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.scheduler.ingest.Ack;
import io.datcp.scheduler.ingest.Caller;
import io.datcp.scheduler.ingest.Refused;
import io.datcp.scheduler.jobs.JobEvent;
import io.datcp.scheduler.jobs.JobView;
import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A map output lost after its map completed (its attempt failed, was killed or went obsolete,
 * e.g. with its NodeManager): the map is not done, and its bytes not waiting for the reduces,
 * until a new attempt completes, as Hadoop's reduce (ShuffleSchedulerImpl.obsoleteMapOutput)
 * treats it.
 */
class MapLossTest {
  private static final long MB = 1_000_000L;
  private static final long S = 1_000_000_000L;
  private static final String JOB = "job_1_0001";
  private static final JobConf CONF = new JobConf("q", "u", "n", JobPriority.NORMAL);

  @TempDir Path dir;
  private final MutableClock clock = new MutableClock(Instant.parse("2026-01-01T00:00:00Z"));

  /** {@code maps} maps, reduces 0 on node1 and 1 on node2, nothing done. */
  private SchedulerService job(int maps) {
    SchedulerService s = TestServices.create(dir, clock, TestServices.dev());
    long t = clock.nanos();
    s.report("node1", List.of(new JobEvent.ReduceStarted(t, JOB, 0, "node1", maps, 2, CONF, 0)));
    s.report("node2", List.of(new JobEvent.ReduceStarted(t, JOB, 1, "node2", maps, 2, CONF, 0)));
    return s;
  }

  private JobEvent done(int reduce, int map, String host, int attempt) {
    return new JobEvent.MapCompleted(clock.nanos(), JOB, reduce, map, host, 0, 10 * MB, -1,
        attempt);
  }

  private JobEvent lost(int reduce, int map, String host, int attempt) {
    return new JobEvent.MapLost(clock.nanos(), JOB, reduce, map, host, attempt);
  }

  private JobView view(SchedulerService s) {
    return s.job(JOB).orElseThrow();
  }

  private long remaining(SchedulerService s, int reduce) {
    return view(s).reduces().stream().filter(r -> r.id() == reduce).findFirst().orElseThrow()
        .remainingBytes();
  }

  @Test
  void aLostMapIsNotDoneNorWaitedForUntilANewAttemptCompletesElsewhere() {
    SchedulerService s = job(2);
    s.report("node1", List.of(done(0, 0, "m1", 0), done(0, 1, "m1", 0)));
    assertThat(view(s).mapsDone()).isEqualTo(2);
    assertThat(remaining(s, 0)).isEqualTo(20 * MB);

    s.report("node1", List.of(lost(0, 0, "m1", 0)));

    assertThat(view(s).mapsDone()).isEqualTo(1);
    assertThat(remaining(s, 0)).isEqualTo(10 * MB);

    s.report("node1", List.of(done(0, 0, "m2", 1)));

    assertThat(view(s).mapsDone()).isEqualTo(2);
    assertThat(remaining(s, 0)).isEqualTo(20 * MB);
  }

  @Test
  void aLostMapsIndexFromItsHostIsForgotten() {
    SchedulerService s = job(1);
    s.report("m1", List.of(new JobEvent.MapOutputIndexed(clock.nanos(), JOB, 0, "m1",
        List.of(3 * MB, 4 * MB))));
    assertThat(view(s).mapsDone()).isEqualTo(1);
    assertThat(remaining(s, 1)).isEqualTo(4 * MB);

    s.report("node2", List.of(lost(1, 0, "m1", 0)));

    assertThat(view(s).mapsDone()).isZero();
    assertThat(remaining(s, 1)).isZero();

    s.report("m2", List.of(new JobEvent.MapOutputIndexed(clock.nanos(), JOB, 0, "m2",
        List.of(3 * MB, 4 * MB))));

    assertThat(view(s).mapsDone()).isEqualTo(1);
    assertThat(remaining(s, 1)).isEqualTo(4 * MB);
  }

  @Test
  void aLateLossOfAnAttemptThatIsNotTheOneCountedChangesNothing() {
    SchedulerService s = job(2);
    s.report("node1", List.of(done(0, 0, "m1", 0), done(0, 1, "m1", 0), lost(0, 0, "m1", 0),
        done(0, 0, "m2", 1)));
    // reduce 1 learns the same events later: its loss of attempt 0 comes after attempt 1's
    // success, and a speculative attempt of map 1 on map 1's own host is killed after map 1
    // succeeded
    s.report("node2", List.of(done(1, 0, "m1", 0), lost(1, 0, "m1", 0), lost(1, 1, "m1", 1)));

    assertThat(view(s).mapsDone()).isEqualTo(2);
    assertThat(remaining(s, 0)).isEqualTo(20 * MB);
  }

  @Test
  void aSuccessOfALostAttemptReportedLateDoesNotMarkTheMapDoneAgain() {
    SchedulerService s = job(1);
    s.report("node1", List.of(done(0, 0, "m1", 0), lost(0, 0, "m1", 0)));

    // reduce 1 is behind: it learns of attempt 0's success only now, its loss after
    s.report("node2", List.of(done(1, 0, "m1", 0)));

    assertThat(view(s).mapsDone()).isZero();
    assertThat(remaining(s, 0)).isZero();
  }

  @Test
  void aNodeWithoutAReduceOfTheJobCannotUnmarkItsMaps() {
    SchedulerService s = TestServices.create(dir, clock, TestServices.dev());
    long t = clock.nanos();
    Caller node1 = new Caller("node1", true);
    Caller node3 = new Caller("node3", true);
    Caller m1 = new Caller("m1", true);
    s.report(node1, "", 0, List.of(new JobEvent.ReduceStarted(t, JOB, 0, "node1", 1, 1, CONF, 0),
        done(0, 0, "m1", 0)));
    // node3 runs a reduce of another job only
    s.report(node3, "", 0, List.of(
        new JobEvent.ReduceStarted(t, "job_1_0002", 0, "node3", 1, 1, CONF, 0)));

    Ack fromNode3 = s.report(node3, "", 0, List.of(lost(0, 0, "m1", 0)));
    Ack fromMapHost = s.report(m1, "", 0, List.of(lost(0, 0, "m1", 0)));

    for (Ack ack : List.of(fromNode3, fromMapHost)) {
      assertThat(ack.accepted()).isZero();
      assertThat(ack.refused()).singleElement().satisfies(r -> {
        assertThat(r.reason()).isEqualTo(Refused.Reason.NOT_PERMITTED);
        assertThat(r.message()).contains("reduce 0 of " + JOB);
      });
    }
    assertThat(view(s).mapsDone()).isEqualTo(1);
    assertThat(remaining(s, 0)).isEqualTo(10 * MB);
  }
}
