package io.datcp.scheduler.policy;

import java.util.List;
import java.util.function.Consumer;

/**
 * Where a {@link PolicyBook} keeps its rules durably: each write returns only once it is
 * committed. Implemented by {@code store.PolicyStore} (a local file, one scheduler) and
 * {@code store.ZooKeeperPolicyStore} (shared by the schedulers of the HA mode); declared here so
 * that the rules depend on no storage (the store depends on the rules, not the other way round).
 */
public interface RuleStore extends AutoCloseable {
  /** Every stored rule, in no particular order. */
  List<PolicyRule> loadAll();

  /** Creates or replaces one rule. */
  void put(PolicyRule rule);

  /** Replaces all rules in one transaction. */
  void replaceAll(List<PolicyRule> rules);

  /** Deletes one rule; false when there was none of that name. */
  boolean delete(String name);

  /**
   * Tells {@code committed} the whole rule set after every committed change: this process's
   * writes before their method returns, and a shared store's writes by other schedulers as they
   * are seen, in commit order.
   */
  void listen(Consumer<List<PolicyRule>> committed);

  @Override
  void close();
}
