package io.datcp.agent.flows;

import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.PolicyLookup;
import java.util.function.Consumer;
import java.util.function.Supplier;

/** Where flow policies come from: a cache and asynchronous lookups (the scheduler). */
public interface PolicySource {
  /** The last known policy of the job's reduce, or null. Never blocks. */
  FlowPolicy cached(String jobId, int reduceId);

  /**
   * Asks for the flow's policy without blocking: lookup is built and sent on another thread
   * (the registration path only hands it over), and the answer, if any, goes to onAnswer on
   * another thread. Skipped (no answer) while the scheduler is away or too many are pending.
   */
  void lookup(Supplier<PolicyLookup> lookup, Consumer<FlowPolicy> onAnswer);

  /** No scheduler: every flow keeps the default policy. */
  PolicySource NONE = new PolicySource() {
    @Override
    public FlowPolicy cached(String jobId, int reduceId) {
      return null;
    }

    @Override
    public void lookup(Supplier<PolicyLookup> lookup, Consumer<FlowPolicy> onAnswer) {}
  };
}
