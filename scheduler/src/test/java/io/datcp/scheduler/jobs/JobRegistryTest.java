package io.datcp.scheduler.jobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.scheduler.policy.JobConf;
import io.datcp.scheduler.policy.JobPriority;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The per-host index of shuffling jobs (issue 9 item 7) and which hosts events re-plan. */
class JobRegistryTest {
  /** The defaults of the jobs.* and flows.maxMapIds keys. */
  private static final JobLimits LIMITS = new JobLimits(10_000, 100_000, 10_000, 1_000,
      2_000_000, 500_000, 1_000);

  private static final long T = 1_700_000_000_000_000_000L;
  private static final JobConf CONF = new JobConf("q", "u", "n", JobPriority.NORMAL);

  @Test
  void aJobWithTwoReducesOnOneHostIsIndexedOnceAndLeavesWhenItFinishes() {
    JobRegistry r = new JobRegistry(10, true, LIMITS);
    r.apply(new JobEvent.ReduceStarted(T, "j", 0, "node1", 2, 2, CONF, 0), new HashSet<>(), T);
    r.apply(new JobEvent.ReduceStarted(T, "j", 1, "node1", 2, 2, CONF, 0), new HashSet<>(), T);

    assertThat(r.shufflingOn("node1")).hasSize(1);

    r.apply(new JobEvent.JobFinished(T + 1, "j", true), new HashSet<>(), T + 1);
    assertThat(r.shufflingOn("node1")).isEmpty();
  }

  @Test
  void theJobStaysIndexedUntilItsLastReduceOnTheHostFinishesItsShuffle() {
    JobRegistry r = new JobRegistry(10, true, LIMITS);
    r.apply(new JobEvent.ReduceStarted(T, "j", 0, "node1", 2, 2, CONF, 0), new HashSet<>(), T);
    r.apply(new JobEvent.ReduceStarted(T, "j", 1, "node1", 2, 2, CONF, 0), new HashSet<>(), T);

    r.apply(new JobEvent.ShuffleFinished(T, "j", 0), new HashSet<>(), T);
    assertThat(r.shufflingOn("node1")).hasSize(1);
    r.apply(new JobEvent.ShuffleFinished(T, "j", 1), new HashSet<>(), T);
    assertThat(r.shufflingOn("node1")).isEmpty();
  }

  @Test
  void mapOutputsIndexedBeforeAnyReduceStartedAreKeptForTheJob() {
    JobRegistry r = new JobRegistry(10, true, LIMITS);
    r.apply(new JobEvent.MapOutputIndexed(T, "j", 0, "m0", List.of(7L, 9L)), new HashSet<>(), T);
    Job job = r.apply(new JobEvent.ReduceStarted(T, "j", 1, "node1", 2, 2, CONF, 0),
        new HashSet<>(), T);

    assertThat(job.remainingBytes(job.reduce(1))).isEqualTo(9L);
  }

  /**
   * Issue 19 item 10: after an outage the agents send again what a new leader needs to plan a
   * running job (the reduces' start, maps and fetches, the map side's indexes and container
   * counts) under new batch ids, so a scheduler that had it all applies it again: it must change
   * nothing, fetched bytes above all (a fetch is sent again with 0 bytes).
   */
  @Test
  void whatTheAgentsSendAgainAfterAnOutageChangesNothingOnASchedulerThatHasIt() {
    JobRegistry r = new JobRegistry(10, true, LIMITS);
    List<JobEvent> sentAgain = List.of(
        new JobEvent.ReduceStarted(T, "j", 0, "node1", 3, 2, CONF, 0),
        new JobEvent.ReduceStarted(T, "j", 1, "node1", 3, 2, CONF, 0),
        new JobEvent.MapCompleted(T, "j", 0, 0, "m0", 0, -1, 1, 1, 0, List.of()),
        new JobEvent.MapOutputIndexed(T, "j", 0, "m0", List.of(7L, 9L)),
        new JobEvent.MapOutputIndexed(T, "j", 1, "m1", List.of(4L, 6L)),
        new JobEvent.ContainersRunning(T, "j", "m1", 2),
        new JobEvent.FetchFinished(T, "j", 0, "m0", List.of(0), 0, 0));
    sentAgain.forEach(e -> r.apply(e, "node1", new HashSet<>(), T));
    Job job = r.apply(new JobEvent.FetchFinished(T, "j", 0, "m1", List.of(1), 4, 1_000),
        "node1", new HashSet<>(), T);
    long left = job.remainingBytes(job.reduce(0));
    long entries = r.shuffleEntries();
    int done = job.mapsDone();
    assertThat(left).as("map 2 not done, maps 0 and 1 fetched").isZero();
    assertThat(job.reduce(0).fetchedBytes()).isEqualTo(4);

    sentAgain.forEach(e -> r.apply(e, "node1", new HashSet<>(), T + 1));

    assertThat(job.remainingBytes(job.reduce(0))).isEqualTo(left);
    assertThat(job.reduce(0).fetchedBytes()).as("fetched bytes count once").isEqualTo(4);
    assertThat(r.shuffleEntries()).isEqualTo(entries);
    assertThat(job.mapsDone()).isEqualTo(done);
    assertThat(job.remainingBytes(job.reduce(1))).as("reduce 1's share of maps 0 and 1")
        .isEqualTo(15);
  }

  /**
   * A new leader that heard only the reducer's agent (the map nodes' agents have not found the
   * old leader dead yet): the size of a map fetched alone, sent again as its completion's
   * output_bytes, lets it estimate the maps left to fetch, so the job has bytes to plan.
   */
  @Test
  void theSizeOfAFetchedMapSentAgainGivesANewLeaderBytesOfTheMapsLeft() {
    JobRegistry r = new JobRegistry(10, true, LIMITS);
    r.apply(new JobEvent.ReduceStarted(T, "j", 0, "node1", 3, 1, CONF, 0), "node1",
        new HashSet<>(), T);
    for (int m = 0; m < 3; m++) {
      r.apply(new JobEvent.MapCompleted(T, "j", 0, m, "m" + m, 0, -1, -1, 1, 0, List.of()),
          "node1", new HashSet<>(), T);
    }
    Job job = r.running("j");
    assertThat(job.remainingBytes(job.reduce(0))).as("no size known").isZero();

    r.apply(new JobEvent.MapCompleted(T, "j", 0, 0, "m0", 0, 42, -1, 0, 0, List.of()), "node1",
        new HashSet<>(), T);
    r.apply(new JobEvent.FetchFinished(T, "j", 0, "m0", List.of(0), 0, 0), "node1",
        new HashSet<>(), T);

    assertThat(job.remainingBytes(job.reduce(0))).as("maps 1 and 2 at map 0's size")
        .isEqualTo(84);
  }

  @Test
  void aReduceStartedAfterTheJobEndedStartsNoNewJobButOneAfterAnIdleTimeoutDoes() {
    JobRegistry r = new JobRegistry(10, true, LIMITS);
    r.apply(new JobEvent.ReduceStarted(T, "ended", 0, "node1", 1, 2, CONF, 0), new HashSet<>(),
        T);
    r.apply(new JobEvent.JobFinished(T + 1, "ended", true), new HashSet<>(), T + 1);
    Job idle = r.apply(new JobEvent.ReduceStarted(T, "idle", 0, "node1", 1, 2, CONF, 0),
        new HashSet<>(), T);
    r.expireIfIdle(idle, T + 10, 5, new HashSet<>());

    Set<String> touched = new HashSet<>();
    assertThat(r.apply(new JobEvent.ReduceStarted(T + 2, "ended", 1, "node2", 1, 2, CONF, 0),
        touched, T + 2)).isNull();
    r.apply(new JobEvent.MapOutputIndexed(T + 2, "ended", 0, "m0", List.of(7L, 9L)), touched,
        T + 2);
    assertThat(touched).isEmpty();
    assertThat(r.running("ended")).isNull();
    assertThat(r.find("ended").finished()).isTrue();
    // a job that timed out may still be running: its next reduce starts it again
    assertThat(r.apply(new JobEvent.ReduceStarted(T + 11, "idle", 1, "node2", 1, 2, CONF, 0),
        new HashSet<>(), T + 11)).isNotNull();
    assertThat(r.running("idle")).isNotNull();
  }

  @Test
  void onlyTheFirstReportOfAMapReplansEveryHostOfTheJob() {
    JobRegistry r = new JobRegistry(10, true, LIMITS);
    for (int reduce = 0; reduce < 3; reduce++) {
      r.apply(new JobEvent.ReduceStarted(T, "j", reduce, "node" + reduce, 2, 3, CONF, 0),
          new HashSet<>(), T);
    }
    Set<String> first = new HashSet<>();
    r.apply(new JobEvent.MapCompleted(T, "j", 0, 0, "m0", 5, 100, 1), first, T);
    assertThat(first).containsExactlyInAnyOrder("node0", "node1", "node2");

    // Every reduce reports every map; the later reports change only their own reduce's bytes
    // (issue 9 item 10: re-planning all hosts on each made a map cost O(reduces^2)).
    Set<String> later = new HashSet<>();
    r.apply(new JobEvent.MapCompleted(T, "j", 1, 0, "m0", 5, 100, 1), later, T);
    assertThat(later).containsExactly("node1");

    // A new running map count moves every host's estimate of the last map's end.
    Set<String> running = new HashSet<>();
    r.apply(new JobEvent.MapCompleted(T, "j", 2, 0, "m0", 5, 100, 0), running, T);
    assertThat(running).containsExactlyInAnyOrder("node0", "node1", "node2");
  }

  @Test
  void jobsDroppedFromTheHistoryAreDrainedOnce() {
    JobRegistry r = new JobRegistry(1, true, LIMITS);
    for (String job : List.of("j1", "j2", "j3")) {
      r.apply(new JobEvent.ReduceStarted(T, job, 0, "node1", 1, 1, CONF, 0), new HashSet<>(), T);
      r.apply(new JobEvent.JobFinished(T + 1, job, true), new HashSet<>(), T + 1);
    }

    assertThat(r.drainEvicted()).containsExactly("j1", "j2");
    assertThat(r.drainEvicted()).isEmpty();
    assertThat(r.finishedJobs()).extracting(Job::id).containsExactly("j3");
  }
}
