package io.datcp.scheduler.policy;

import io.datcp.scheduler.common.InvalidFieldException;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The operator's policy rules: validated, stored durably, then matched against jobs. A change is
 * visible to lookups only after the store has committed it (the store tells the book, see
 * {@link RuleStore#listen}), and an invalid request changes nothing.
 */
public final class PolicyBook {
  private static final Comparator<PolicyRule> EVALUATION_ORDER =
      Comparator.comparing(PolicyRule::order).thenComparing(PolicyRule::name);

  private final RuleStore store;
  private final PolicyDecision defaults;
  private volatile List<PolicyRule> rules;
  private volatile long version;
  private final List<Runnable> changeListeners = new CopyOnWriteArrayList<>();

  public PolicyBook(RuleStore store, FlowMode defaultMode, QuenchMode defaultQuench) {
    this.store = store;
    // §4.4: flows have no importance unless an operator gives them one.
    this.defaults = new PolicyDecision(0, 0, defaultMode, defaultQuench, "");
    this.rules = sorted(store.loadAll());
    // Writes publish through here too: the rules a lookup sees are always a committed set.
    store.listen(this::committed);
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

  public PolicyRule put(PolicyRule rule) {
    rule.validate();
    store.put(rule);
    return rule;
  }

  /** Validates every rule before storing any, so a bad one leaves the old set in force. */
  public List<PolicyRule> replaceAll(List<PolicyRule> newRules) {
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
    return rules;
  }

  public boolean delete(String name) {
    return store.delete(name);
  }

  /**
   * Runs {@code listener} after every change of the rules, whichever scheduler made it (a shared
   * store tells of the others' writes too), so agents can be sent their flows' new policies.
   */
  public void onChange(Runnable listener) {
    changeListeners.add(listener);
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

  /** The store committed {@code all}; a set equal to the one in force changes nothing. */
  private void committed(List<PolicyRule> all) {
    List<PolicyRule> next = sorted(all);
    synchronized (this) {
      if (next.equals(rules)) {
        return;
      }
      rules = next;
      version++;
    }
    for (Runnable listener : changeListeners) {
      listener.run();
    }
  }

  private static List<PolicyRule> sorted(List<PolicyRule> rules) {
    return rules.stream().sorted(EVALUATION_ORDER).toList();
  }
}
