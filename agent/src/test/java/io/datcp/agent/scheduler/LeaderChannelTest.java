package io.datcp.agent.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.datcp.agent.testing.FakeScheduler;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.PolicyLookup;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The agent's side of the scheduler's HA mode: calls move to the leader a follower names in its
 * refusal (trailer datcp-leader), past a scheduler that is down, and stay where they succeed; a
 * scheduler that fell silent or failed for the transport is held against a follower's word.
 */
class LeaderChannelTest {
  private final List<FakeScheduler> schedulers = new ArrayList<>();
  private LeaderChannel channel;

  @AfterEach
  void stop() throws Exception {
    if (channel != null) {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
    }
    for (FakeScheduler s : schedulers) {
      s.close();
    }
  }

  private FakeScheduler scheduler() throws Exception {
    FakeScheduler s = new FakeScheduler().start();
    schedulers.add(s);
    return s;
  }

  private LeaderChannel channel(String... targets) {
    channel = new LeaderChannel(List.of(targets),
        t -> NettyChannelBuilder.forTarget(t).usePlaintext().build(), 10_000);
    return channel;
  }

  /** With a clock the test moves ({@code now}, nanoseconds). */
  private LeaderChannel channel(AtomicLong now, long holdMillis, String... targets) {
    channel = new LeaderChannel(List.of(targets),
        t -> NettyChannelBuilder.forTarget(t).usePlaintext().build(), holdMillis, now::get);
    return channel;
  }

  private static PolicyLookup lookup() {
    return PolicyLookup.newBuilder().setAgentHost("node1").setJobId("job_1700000000000_0001")
        .setBytes(1).build();
  }

  private void lookupOn(LeaderChannel c) {
    FlowPolicyServiceGrpc.newBlockingStub(c).withDeadlineAfter(30, TimeUnit.SECONDS)
        .lookupPolicy(lookup());
  }

  private static void refusedUnavailable(Runnable call) {
    assertThatThrownBy(call::run).isInstanceOfSatisfying(StatusRuntimeException.class,
        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE));
  }

  @Test
  void aFollowersRefusalMovesCallsToTheLeaderItNames() throws Exception {
    FakeScheduler follower = scheduler();
    FakeScheduler other = scheduler();
    FakeScheduler leader = scheduler();
    follower.followerOf = leader.target();
    LeaderChannel c = channel(follower.target(), other.target(), leader.target());

    refusedUnavailable(() -> lookupOn(c));
    assertThat(c.currentTarget()).isEqualTo(leader.target());
    lookupOn(c);
    lookupOn(c);
    assertThat(leader.lookups).hasSize(2);
    assertThat(follower.lookups).isEmpty();
    assertThat(other.lookups).isEmpty();
  }

  @Test
  void aSchedulerThatIsDownOrNamesNoListedLeaderMovesCallsToTheNext() throws Exception {
    FakeScheduler down = scheduler();
    down.close();
    FakeScheduler stranger = scheduler();
    stranger.followerOf = "elsewhere.example:9090";
    FakeScheduler leader = scheduler();
    LeaderChannel c = channel(down.target(), stranger.target(), leader.target());

    refusedUnavailable(() -> lookupOn(c));
    assertThat(c.currentTarget()).isEqualTo(stranger.target());
    refusedUnavailable(() -> lookupOn(c));
    assertThat(c.currentTarget()).isEqualTo(leader.target());
    lookupOn(c);
    assertThat(leader.lookups).hasSize(1);
  }

  @Test
  void aSchedulerThatAnswersNothingWithinTheDeadlineMovesCallsToTheNext() throws Exception {
    // a scheduler killed with its container: the connection stays up and nothing comes back
    FakeScheduler silent = scheduler();
    silent.answerAfter(2_000);
    FakeScheduler leader = scheduler();
    LeaderChannel c = channel(silent.target(), leader.target());
    assertThatThrownBy(() -> FlowPolicyServiceGrpc.newBlockingStub(c)
        .withDeadlineAfter(200, TimeUnit.MILLISECONDS).lookupPolicy(lookup()))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> assertThat(
            e.getStatus().getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED));
    assertThat(c.currentTarget()).isEqualTo(leader.target());
    lookupOn(c);
    assertThat(leader.lookups).hasSize(1);
  }

  @Test
  void aSilentSchedulerIsHeldAgainstAFollowerNamingItUntilTheHoldEnds() throws Exception {
    FakeScheduler silent = scheduler();
    FakeScheduler follower = scheduler();
    follower.followerOf = silent.target(); // its election outlives it for a while
    AtomicLong now = new AtomicLong();
    channel(now, 4_000, silent.target(), follower.target());

    channel.silent(silent.target());
    assertThat(channel.currentTarget()).isEqualTo(follower.target());
    refusedUnavailable(() -> lookupOn(channel));
    assertThat(channel.currentTarget()).as("held: the follower's word is not followed")
        .isEqualTo(follower.target());

    now.addAndGet(TimeUnit.MILLISECONDS.toNanos(4_001));
    refusedUnavailable(() -> lookupOn(channel));
    assertThat(channel.currentTarget()).as("the hold is over").isEqualTo(silent.target());
  }

  @Test
  void aLeaderWhoseProcessDiedIsHeldAgainstAFollowerNamingItUntilItListensAgain()
      throws Exception {
    FakeScheduler leader = scheduler();
    FakeScheduler follower = scheduler();
    follower.followerOf = leader.target(); // the dead leader's election outlives it for a while
    AtomicLong now = new AtomicLong(); // never advances: no hold ends by time here
    channel(now, 10_000, leader.target(), follower.target());
    lookupOn(channel);

    leader.stop(); // its port closed: the call fails for the transport, no scheduler's trailer
    refusedUnavailable(() -> lookupOn(channel));
    assertThat(channel.currentTarget()).isEqualTo(follower.target());
    for (int i = 0; i < 3; i++) {
      refusedUnavailable(() -> lookupOn(channel));
      assertThat(channel.currentTarget()).as("held: the follower's word is not followed")
          .isEqualTo(follower.target());
    }

    leader.start(); // restarted on its port: once its channel connects, the hold ends
    Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50))
        .until(() -> {
          if (channel.currentTarget().equals(follower.target())) {
            refusedUnavailable(() -> lookupOn(channel));
          }
          return channel.currentTarget().equals(leader.target());
        });
    lookupOn(channel);
    assertThat(leader.lookups).hasSize(2);
  }

  @Test
  void aFollowerThatKnowsNoLeaderYetIsNotHeld() throws Exception {
    // both follow while the election runs; the second's refusal is a live scheduler's answer
    FakeScheduler first = scheduler();
    FakeScheduler second = scheduler();
    first.followerOf = "";
    second.followerOf = "";
    AtomicLong now = new AtomicLong();
    channel(now, 10_000, first.target(), second.target());
    refusedUnavailable(() -> lookupOn(channel));
    assertThat(channel.currentTarget()).isEqualTo(second.target());

    first.followerOf = null; // elected
    second.followerOf = first.target();
    refusedUnavailable(() -> lookupOn(channel));
    assertThat(channel.currentTarget()).as("the named leader is followed at once")
        .isEqualTo(first.target());
    lookupOn(channel);
    assertThat(first.lookups).hasSize(1);
  }

  @Test
  void otherFailuresAndOneAddressLeaveCallsWhereTheyAre() throws Exception {
    FakeScheduler first = scheduler();
    FakeScheduler second = scheduler();
    first.answer = l -> {
      throw new IllegalStateException("a scheduler bug: the call ends UNKNOWN");
    };
    LeaderChannel c = channel(first.target(), second.target());
    assertThatThrownBy(() -> lookupOn(c)).isInstanceOfSatisfying(StatusRuntimeException.class,
        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN));
    assertThat(c.currentTarget()).isEqualTo(first.target());

    channel.shutdownNow();
    FakeScheduler only = scheduler();
    only.followerOf = second.target();
    LeaderChannel single = channel(only.target());
    refusedUnavailable(() -> lookupOn(single));
    assertThat(single.currentTarget()).isEqualTo(only.target());
  }
}
