package io.datcp.agent.flows;

import io.datcp.agent.kernel.FlowTuple;

/**
 * One sending socket (4-tuple) and its epoch counter: a kept-alive connection carries several
 * flows in turn, and the kernel starts a new flow only when the epoch changes. Its monitor
 * guards its flows' state and the kernel entry on its tuple.
 */
final class Connection {
  final FlowTuple tuple;
  int lastEpoch;
  Flow current;
  long lastUsedMonoNanos;

  Connection(FlowTuple tuple) {
    this.tuple = tuple;
  }

  /** The epoch after the last one, skipping 0 (the kernel's "none") on wrap-around. */
  int nextEpoch() {
    int e = lastEpoch + 1;
    return e == 0 ? 1 : e;
  }
}
