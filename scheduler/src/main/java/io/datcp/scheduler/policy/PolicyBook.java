package io.datcp.scheduler.policy;

import io.datcp.scheduler.common.InvalidFieldException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The operator's policy rules: validated, stored durably, then matched against jobs. A change is
 * visible to lookups only after the store has committed it, and an invalid request changes
 * nothing.
 */
public final class PolicyBook {
  private static final Comparator<PolicyRule> EVALUATION_ORDER =
      Comparator.comparing(PolicyRule::order).thenComparing(PolicyRule::name);

  private final RuleStore store;
  private final PolicyDecision defaults;
  private volatile List<PolicyRule> rules;
  private volatile long version;

  public PolicyBook(RuleStore store, FlowMode defaultMode, QuenchMode defaultQuench) {
    this.store = store;
    // §4.4: flows have no importance unless an operator gives them one.
    this.defaults = new PolicyDecision(0, 0, defaultMode, defaultQuench, "");
    this.rules = sorted(store.loadAll());
  }

  /** Rules in evaluation order. */
  public List<PolicyRule> list() {
    return rules;
  }

  public Optional<PolicyRule> get(String name) {
    return rules.stream().filter(r -> r.name().equals(name)).findFirst();
  }

  /** Increases whenever the rules change, so cached decisions can be dropped. */
  public long version() {
    return version;
  }

  public synchronized PolicyRule put(PolicyRule rule) {
    rule.validate();
    store.put(rule);
    List<PolicyRule> next = new ArrayList<>(rules);
    next.removeIf(r -> r.name().equals(rule.name()));
    next.add(rule);
    publish(next);
    return rule;
  }

  /** Validates every rule before storing any, so a bad one leaves the old set in force. */
  public synchronized List<PolicyRule> replaceAll(List<PolicyRule> newRules) {
    Set<String> names = new HashSet<>();
    for (int i = 0; i < newRules.size(); i++) {
      PolicyRule r = newRules.get(i);
      InvalidFieldException.require(r != null, "rules[" + i + "]", "is null");
      try {
        r.validate();
      } catch (InvalidFieldException e) {
        throw new InvalidFieldException("rules[" + i + "]." + e.field(),
            e.getMessage().substring(e.field().length() + 2));
      }
      InvalidFieldException.require(names.add(r.name()), "rules[" + i + "].name",
          "duplicate name '" + r.name() + "'");
    }
    store.replaceAll(newRules);
    publish(newRules);
    return rules;
  }

  public synchronized boolean delete(String name) {
    boolean deleted = store.delete(name);
    if (deleted) {
      publish(rules.stream().filter(r -> !r.name().equals(name)).toList());
    }
    return deleted;
  }

  /** The first matching rule in evaluation order, or the defaults. */
  public PolicyDecision decide(JobConf job) {
    for (PolicyRule r : rules) {
      if (r.matches(job)) {
        return new PolicyDecision(r.importance(), r.phi(), r.mode(), r.quenchMode(), r.name());
      }
    }
    return defaults;
  }

  public PolicyDecision defaults() {
    return defaults;
  }

  private void publish(List<PolicyRule> next) {
    rules = sorted(next);
    version++;
  }

  private static List<PolicyRule> sorted(List<PolicyRule> rules) {
    return rules.stream().sorted(EVALUATION_ORDER).toList();
  }
}
