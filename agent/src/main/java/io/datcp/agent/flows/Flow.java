package io.datcp.agent.flows;

import io.datcp.agent.kernel.FlowMeta;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.proto.v1.FlowKey;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowRegistration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One registered flow: one fetch response on one connection (one epoch). Mutable state is
 * guarded by its {@link Connection}'s monitor.
 */
final class Flow {
  final long id;
  final FlowTuple tuple;
  final int epoch;
  final FlowRegistration registration;
  /** The process that registered it: the only one that may end it. */
  final Owner owner;
  final long startUnixNanos;
  final long startMonoNanos;

  /** The policy in force (the default until the scheduler answers). */
  FlowPolicy policy;
  /** What is written in the kernel; null when the write failed (plain TCP). */
  FlowMeta meta;
  /** The plugin called EndFlow. */
  boolean ended;
  long endedMonoNanos;
  /** The kernel reported the last byte acknowledged; the outcome is reported. */
  boolean finished;
  volatile boolean suspended;
  long suspendedMonoNanos;
  /** Resumed after a suspension: its quench order stays cleared. */
  boolean resumed;
  boolean killed;
  /** Flows this one yielded to when it was suspended (DATCP Algorithm 2). */
  final Set<Flow> yieldedTo = ConcurrentHashMap.newKeySet();

  Flow(long id, FlowTuple tuple, int epoch, FlowRegistration registration, Owner owner,
      long startUnixNanos, long startMonoNanos, FlowPolicy policy) {
    this.id = id;
    this.tuple = tuple;
    this.epoch = epoch;
    this.registration = registration;
    this.owner = owner;
    this.startUnixNanos = startUnixNanos;
    this.startMonoNanos = startMonoNanos;
    this.policy = policy;
  }

  /** Sending, or sent but not yet acknowledged: it owns its 4-tuple. */
  boolean live() {
    return !finished && !ended;
  }

  boolean hasDeadline() {
    return meta != null && meta.deadlineNs() != 0;
  }

  FlowKey key(String sourceHost) {
    return FlowKey.newBuilder().setJobId(registration.getJobId())
        .setReduceId(registration.getReduceId()).setSourceHost(sourceHost)
        .addAllMapIds(registration.getMapIdsList())
        .setSourceAddress(registration.getSourceAddress())
        .setSourcePort(registration.getSourcePort())
        .setDestinationAddress(registration.getDestinationAddress())
        .setDestinationPort(registration.getDestinationPort()).setEpoch(epoch).build();
  }
}
