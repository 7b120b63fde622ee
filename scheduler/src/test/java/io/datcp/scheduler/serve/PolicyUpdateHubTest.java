package io.datcp.scheduler.serve;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The resync gate: no live update reaches a stream before its snapshot has ended; interest is
 * found by job and reduce.
 */
class PolicyUpdateHubTest {
  private static PolicyUpdate update(long time, boolean snapshotEnd) {
    return new PolicyUpdate(time, null, false, snapshotEnd);
  }

  @Test
  void liveUpdatesWaitBehindTheSnapshotThenFollowInOrder() {
    PolicyUpdateHub hub = new PolicyUpdateHub(20_000, 1_000_000, 8);
    List<PolicyUpdate> got = new ArrayList<>();
    PolicyUpdateHub.Gate gate = hub.watch("m1", got::add, true);
    PolicyUpdateHub.Outbox live = new PolicyUpdateHub.Outbox();
    hub.queue(live, "m1", update(2, false));
    hub.queue(live, "m1", update(3, false));

    hub.deliver(live);
    gate.sendDirect(update(1, false));
    gate.sendDirect(update(4, true));
    assertThat(got).extracting(PolicyUpdate::timeUnixNanos).containsExactly(1L, 4L);

    gate.open();
    hub.deliver(live);
    assertThat(got).extracting(PolicyUpdate::timeUnixNanos).containsExactly(1L, 4L, 2L, 3L, 2L,
        3L);
  }

  @Test
  void aStoppedStreamGetsNothingMore() {
    PolicyUpdateHub hub = new PolicyUpdateHub(20_000, 1_000_000, 8);
    List<PolicyUpdate> got = new ArrayList<>();
    PolicyUpdateHub.Gate gate = hub.watch("m1", got::add, false);
    PolicyUpdateHub.Outbox out = new PolicyUpdateHub.Outbox();
    hub.queue(out, "m1", update(1, false));
    hub.deliver(out);

    gate.stop();
    PolicyUpdateHub.Outbox later = new PolicyUpdateHub.Outbox();
    hub.queue(later, "m1", update(2, false));
    hub.deliver(later);

    assertThat(got).extracting(PolicyUpdate::timeUnixNanos).containsExactly(1L);
    assertThat(hub.watcherCount()).isZero();
    assertThat(later.updates()).isEmpty();
  }

  @Test
  void interestIsKeptPerReduceSoARePlanOfOneHostReadsOnlyItsFlows() {
    PolicyUpdateHub hub = new PolicyUpdateHub(20_000, 1_000_000, 8);
    PolicyUpdateHub.FlowRef toReduce0 = new PolicyUpdateHub.FlowRef(0, null);
    PolicyUpdateHub.FlowRef toReduce1 = new PolicyUpdateHub.FlowRef(1, null);
    hub.interested("m1", "j", toReduce0, 10);
    hub.interested("m2", "j", toReduce0, 20);
    hub.interested("m1", "j", toReduce1, 30);

    assertThat(hub.interestIn("j", 0)).containsOnlyKeys("m1", "m2");
    assertThat(hub.interestIn("j", 1)).containsOnlyKeys("m1");
    assertThat(hub.interestIn("m1", "j", toReduce1)).isEqualTo(30L);

    hub.notInterested("m1", "j", 0, f -> true);
    assertThat(hub.interestIn("j", 0)).containsOnlyKeys("m2");
    assertThat(hub.interestIn("m1", "j", toReduce1)).isEqualTo(30L);
    assertThat(hub.interestOf("m1")).containsExactly(new PolicyUpdateHub.Interest("j", toReduce1,
        30));

    hub.notInterested("m2", "j", 0, f -> true);
    hub.notInterested("m1", "j", 1, f -> true);
    assertThat(hub.interestIn("j", 0)).isEmpty();
    assertThat(hub.interestOf("m1")).isEmpty();
  }
}
