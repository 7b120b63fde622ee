package io.datcp.agent.scheduler;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ConnectivityState;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/**
 * Calls to whichever of the configured schedulers leads (scheduler.target lists them, HA mode):
 * one channel per address, calls sent on the current one. A call that ends UNAVAILABLE moves the
 * current one: to the address a follower names in the trailer {@code datcp-leader} when it is one
 * of the list, else (a scheduler down, or a follower that knows no leader yet) to the next in the
 * list. So does a call past its deadline: a scheduler that died without closing its connections
 * (killed with its container or host, a partition) answers nothing, not even a reset, so its calls
 * end DEADLINE_EXCEEDED for as long as TCP keeps the connection; a leader that is merely slow costs
 * one call refused by the follower, which names it. The failed call itself is not repeated here:
 * the client's own retries (report batches keep their ids, the update stream reconnects, the
 * next lookup) go to the new one.
 *
 * <p>A dead leader keeps its election, and is named by the follower, until its ZooKeeper session
 * expires. So an address is held against a follower's word for scheduler.silentHoldMillis (calls
 * stay on the follower and are tried again until it leads) in two cases:
 *
 * <ul>
 *   <li>its update stream fell silent ({@link #silent}): killed with its host, its calls would
 *       each wait for their deadline;
 *   <li>a call to it failed for the transport: UNAVAILABLE without a live scheduler's {@code
 *       datcp-role} trailer (its process killed, its port closed). Followed back, every other
 *       call would fail there. Such a hold ends early once the channel to it is connected again
 *       (a restarted leader; an UNAVAILABLE that the leader itself sent, over a connection that
 *       never dropped, is not held past the next look).
 * </ul>
 */
final class LeaderChannel extends Channel {
  /** Set by a follower scheduler on its refusals: host:port of the leader's gRPC port. */
  static final Metadata.Key<String> LEADER_TRAILER =
      Metadata.Key.of("datcp-leader", Metadata.ASCII_STRING_MARSHALLER);
  /** Set by a live scheduler on its refusals ("follower"): the refusal is no transport failure. */
  static final Metadata.Key<String> ROLE_TRAILER =
      Metadata.Key.of("datcp-role", Metadata.ASCII_STRING_MARSHALLER);
  private static final Logger LOG = Logger.getLogger(LeaderChannel.class.getName());

  private final List<String> targets;
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final AtomicInteger current = new AtomicInteger();
  /** Per address: until when (nanoTime) it is held; 0 = not held. Guards the one below. */
  private final long[] heldUntil;
  /** Per address: its hold ends once its channel is connected (held for the transport). */
  private final boolean[] untilReconnected;
  private final long holdNanos;
  private final LongSupplier nanoTime;

  /**
   * @param open builds the (lazily connecting) channel to one address
   * @param holdMillis scheduler.silentHoldMillis
   */
  LeaderChannel(List<String> targets, Function<String, ManagedChannel> open, long holdMillis) {
    this(targets, open, holdMillis, System::nanoTime);
  }

  LeaderChannel(List<String> targets, Function<String, ManagedChannel> open, long holdMillis,
      LongSupplier nanoTime) {
    this.targets = List.copyOf(targets);
    for (String t : this.targets) {
      channels.add(open.apply(t));
    }
    heldUntil = new long[this.targets.size()];
    untilReconnected = new boolean[this.targets.size()];
    holdNanos = TimeUnit.MILLISECONDS.toNanos(holdMillis);
    this.nanoTime = nanoTime;
  }

  /** The address calls go to now. */
  String currentTarget() {
    return targets.get(current.get());
  }

  @Override
  public <Q, A> ClientCall<Q, A> newCall(MethodDescriptor<Q, A> method, CallOptions options) {
    int used = current.get();
    return new ForwardingClientCall.SimpleForwardingClientCall<>(
        channels.get(used).newCall(method, options)) {
      @Override
      public void start(Listener<A> listener, Metadata headers) {
        super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(
            listener) {
          @Override
          public void onClose(Status status, Metadata trailers) {
            if (status.getCode() == Status.Code.UNAVAILABLE
                && trailers.get(ROLE_TRAILER) == null) {
              hold(used, true);
            }
            if (status.getCode() == Status.Code.UNAVAILABLE
                || status.getCode() == Status.Code.DEADLINE_EXCEEDED) {
              moveFrom(used, trailers.get(LEADER_TRAILER));
            }
            super.onClose(status, trailers);
          }
        }, headers);
      }
    };
  }

  /**
   * The update stream to {@code target} heard nothing (not even a heartbeat) for three
   * heartbeat intervals: the calls leave it for the next address that is not held, and it is
   * held for scheduler.silentHoldMillis.
   */
  void silent(String target) {
    int used = targets.indexOf(target);
    if (used < 0 || targets.size() < 2) {
      return;
    }
    hold(used, false);
    int next = nextNotHeld(used);
    if (next != used && current.compareAndSet(used, next)) {
      LOG.info("scheduler " + target + " silent (no heartbeat on the update stream): calls go to "
          + targets.get(next) + ", and not back to it on a follower's word for "
          + TimeUnit.NANOSECONDS.toMillis(holdNanos) + " ms");
    }
  }

  /**
   * After a refusal by {@code used}: to the leader it named if listed and not held, else to the
   * next address not held; only if no other call moved the current one since (calls failing
   * together move it once).
   */
  private void moveFrom(int used, String leader) {
    if (targets.size() < 2) {
      return;
    }
    int named = leader == null ? -1 : targets.indexOf(leader);
    boolean namedHeld = named >= 0 && held(named);
    int next = named >= 0 && !namedHeld ? named : nextNotHeld(used);
    if (next != used && current.compareAndSet(used, next)) {
      LOG.info("scheduler " + targets.get(used) + " unavailable" + (named >= 0
          ? ", it names the leader " + leader
              + (namedHeld ? " (held: it fell silent or failed)" : "")
          : leader == null ? "" : ", it names " + leader + " (not in scheduler.target)")
          + ": calls go to " + targets.get(next));
    }
  }

  /**
   * Holds {@code target} for scheduler.silentHoldMillis; {@code untilReconnected}: or until its
   * channel is connected again. A silent address's hold never ends early (its connection may
   * never have dropped).
   */
  private void hold(int target, boolean untilReconnected) {
    if (targets.size() < 2) {
      return;
    }
    synchronized (heldUntil) {
      boolean silentHold = heldUntil[target] != 0 && !this.untilReconnected[target];
      heldUntil[target] = (nanoTime.getAsLong() + holdNanos) | 1; // never 0, "not held"
      this.untilReconnected[target] = untilReconnected && !silentHold;
    }
  }

  /** The first address after {@code used} (in list order, round) not held; else used. */
  private int nextNotHeld(int used) {
    for (int i = 1; i < targets.size(); i++) {
      int next = (used + i) % targets.size();
      if (!held(next)) {
        return next;
      }
    }
    return used;
  }

  private boolean held(int target) {
    synchronized (heldUntil) {
      long until = heldUntil[target];
      if (until != 0 && nanoTime.getAsLong() - until >= 0) {
        heldUntil[target] = 0;
      }
      // asked after the failed call's close (a refusal elsewhere came since), when its channel
      // has long left READY if the failure was the connection's; asks an idle one to connect
      if (heldUntil[target] != 0 && untilReconnected[target]
          && channels.get(target).getState(true) == ConnectivityState.READY) {
        heldUntil[target] = 0;
      }
      return heldUntil[target] != 0;
    }
  }

  @Override
  public String authority() {
    return channels.get(current.get()).authority();
  }

  void shutdownNow() {
    channels.forEach(ManagedChannel::shutdownNow);
  }

  void awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
    long end = System.nanoTime() + unit.toNanos(timeout);
    for (ManagedChannel c : channels) {
      c.awaitTermination(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
    }
  }
}
