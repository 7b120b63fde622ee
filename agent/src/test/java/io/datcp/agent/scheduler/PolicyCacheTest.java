package io.datcp.agent.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.proto.v1.FlowPolicy;
import java.util.List;
import org.junit.jupiter.api.Test;

class PolicyCacheTest {
  private static FlowPolicy policy(String job, int reduce, long deadline) {
    return FlowPolicy.newBuilder().setJobId(job).setReduceId(reduce)
        .setDeadlineUnixNanos(deadline).build();
  }

  /**
   * A lookup answered while a resync's snapshot was on its way is newer than what the resync
   * replaces: it must survive it (the next flow of that reduce started with the default
   * instead, LocalAgentServiceTest failed in a CI run when the watch's snapshot ended after
   * the lookup's answer).
   */
  @Test
  void aResyncReplacesWhatWasCachedBeforeItBeganAndKeepsWhatCameSince() {
    PolicyCache cache = new PolicyCache();
    cache.put(policy("job_1_0001", 0, 10), 0);
    long resync = cache.mark();
    cache.put(policy("job_1_0002", 0, 20), 0); // a lookup answered during the resync
    cache.put(policy("job_1_0003", 0, 30), 0); // answered during it, also in the snapshot

    cache.replaceAll(List.of(policy("job_1_0003", 0, 33)), 1_000, resync);

    assertThat(cache.get("job_1_0001", 0)).as("cached before the resync, not in it").isNull();
    assertThat(cache.get("job_1_0002", 0).getDeadlineUnixNanos()).isEqualTo(20);
    assertThat(cache.get("job_1_0003", 0).getDeadlineUnixNanos()).as("the snapshot's decision")
        .isEqualTo(33);
  }
}
