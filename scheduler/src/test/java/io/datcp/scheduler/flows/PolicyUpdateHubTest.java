package io.datcp.scheduler.flows;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The resync gate: no live update reaches a stream before its snapshot has ended. */
class PolicyUpdateHubTest {
  private static PolicyUpdate update(long time, boolean snapshotEnd) {
    return new PolicyUpdate(time, null, false, snapshotEnd);
  }

  @Test
  void liveUpdatesWaitBehindTheSnapshotThenFollowInOrder() {
    PolicyUpdateHub hub = new PolicyUpdateHub();
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
    PolicyUpdateHub hub = new PolicyUpdateHub();
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
}
