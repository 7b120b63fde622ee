package io.datcp.scheduler.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.policy.PolicyRule;
import io.datcp.scheduler.policy.RuleStore;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * The durable home of operator policy rules: an embedded SQLite database in the data directory.
 * Every write is one transaction committed with synchronous=FULL in WAL mode, so once a write
 * method returns the rule survives a kill -9 (and a power cut); a crash mid-write loses only that
 * unacknowledged write. Job state is not stored: it is soft state rebuilt from reports.
 */
public final class PolicyStore implements RuleStore, AutoCloseable {
  public static final String FILE_NAME = "policies.db";

  private final Connection db;
  private final ObjectMapper json;
  private final List<Consumer<List<PolicyRule>>> listeners = new CopyOnWriteArrayList<>();

  private PolicyStore(Connection db, ObjectMapper json) {
    this.db = db;
    this.json = json;
  }

  /** Opens (creating if needed) the store in {@code dataDir}. */
  public static PolicyStore open(Path dataDir, ObjectMapper json) {
    try {
      Connection db = DriverManager.getConnection("jdbc:sqlite:" + dataDir.resolve(FILE_NAME));
      try (Statement s = db.createStatement()) {
        s.execute("PRAGMA journal_mode=WAL");
        // FULL: fsync the WAL on every commit, so an acknowledged write is on disk.
        s.execute("PRAGMA synchronous=FULL");
        s.execute("CREATE TABLE IF NOT EXISTS policy_rule ("
            + "name TEXT PRIMARY KEY, body TEXT NOT NULL)");
      }
      db.setAutoCommit(false);
      return new PolicyStore(db, json);
    } catch (SQLException e) {
      throw new StoreException("cannot open policy store in " + dataDir, e);
    }
  }

  @Override
  public void listen(Consumer<List<PolicyRule>> committed) {
    listeners.add(committed);
  }

  @Override
  public synchronized List<PolicyRule> loadAll() {
    List<PolicyRule> rules = new ArrayList<>();
    try (Statement s = db.createStatement();
        ResultSet rs = s.executeQuery("SELECT body FROM policy_rule ORDER BY name")) {
      while (rs.next()) {
        rules.add(json.readValue(rs.getString(1), PolicyRule.class));
      }
      db.commit();
      return rules;
    } catch (SQLException | JsonProcessingException e) {
      throw new StoreException("cannot read policy rules", e);
    }
  }

  /** Inserts or replaces one rule; durable on return. */
  @Override
  public synchronized void put(PolicyRule rule) {
    transaction(() -> upsert(rule));
    committed();
  }

  /** Replaces every rule in one transaction: afterwards exactly {@code rules} are stored. */
  @Override
  public synchronized void replaceAll(List<PolicyRule> rules) {
    transaction(() -> {
      try (Statement s = db.createStatement()) {
        s.executeUpdate("DELETE FROM policy_rule");
      }
      for (PolicyRule r : rules) {
        upsert(r);
      }
    });
    committed();
  }

  /** Deletes a rule; returns whether it existed. Durable on return. */
  @Override
  public synchronized boolean delete(String name) {
    boolean[] deleted = new boolean[1];
    transaction(() -> {
      try (PreparedStatement ps = db.prepareStatement("DELETE FROM policy_rule WHERE name = ?")) {
        ps.setString(1, name);
        deleted[0] = ps.executeUpdate() > 0;
      }
    });
    if (deleted[0]) {
      committed();
    }
    return deleted[0];
  }

  @Override
  public synchronized void close() {
    try {
      db.close();
    } catch (SQLException e) {
      throw new StoreException("cannot close policy store", e);
    }
  }

  private void upsert(PolicyRule rule) throws SQLException {
    try (PreparedStatement ps = db.prepareStatement(
        "INSERT OR REPLACE INTO policy_rule(name, body) VALUES (?, ?)")) {
      ps.setString(1, rule.name());
      ps.setString(2, json.writeValueAsString(rule));
      ps.executeUpdate();
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Tells the listeners the rules just committed; under this store's lock, so in order. */
  private void committed() {
    List<PolicyRule> all = loadAll();
    for (Consumer<List<PolicyRule>> l : listeners) {
      l.accept(all);
    }
  }

  private interface Work {
    void run() throws SQLException;
  }

  private void transaction(Work work) {
    try {
      work.run();
      db.commit();
    } catch (SQLException | RuntimeException e) {
      try {
        db.rollback();
      } catch (SQLException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new StoreException("policy store write failed; nothing was applied", e);
    }
  }
}
