package io.datcp.scheduler.policy;

import java.util.List;

/**
 * Where a {@link PolicyBook} keeps its rules durably: each write returns only once it is
 * committed. Implemented by {@code store.PolicyStore}; declared here so that the rules depend on
 * no storage (the store depends on the rules, not the other way round).
 */
public interface RuleStore {
  /** Every stored rule, in no particular order. */
  List<PolicyRule> loadAll();

  /** Creates or replaces one rule. */
  void put(PolicyRule rule);

  /** Replaces all rules in one transaction. */
  void replaceAll(List<PolicyRule> rules);

  /** Deletes one rule; false when there was none of that name. */
  boolean delete(String name);
}
