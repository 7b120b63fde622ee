package io.datcp.scheduler.store;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.datcp.scheduler.policy.PolicyRule;
import io.datcp.scheduler.policy.RuleStore;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The policy rules of the HA mode, kept in ZooKeeper so that every scheduler sees them: one node
 * holds the whole rule set as a JSON array. A write reads the node, changes the rules and writes
 * them back only if the node is still at the version it read (else it starts again from the
 * newer rules), so concurrent writers through different schedulers never lose each other's
 * changes, and a write returns once the ensemble's quorum has committed it: an acknowledged rule
 * survives the death of the scheduler that took it. Each scheduler watches the node and tells its
 * listeners of every version newer than the last it told (its own writes and the others').
 * The whole set must fit in one node (jute.maxbuffer, 1 MB by default: thousands of rules).
 */
public final class ZooKeeperPolicyStore implements RuleStore {
  private static final Logger LOG = LoggerFactory.getLogger(ZooKeeperPolicyStore.class);
  private static final TypeReference<List<PolicyRule>> RULES = new TypeReference<>() {};

  private final CuratorFramework zk;
  private final String path;
  private final ObjectMapper json;
  private final CuratorCache watch;
  private final List<Consumer<List<PolicyRule>>> listeners = new CopyOnWriteArrayList<>();
  /** Version of the node last told to the listeners; guarded by this. */
  private int told = -1;

  private ZooKeeperPolicyStore(CuratorFramework zk, String path, ObjectMapper json) {
    this.zk = zk;
    this.path = path;
    this.json = json;
    this.watch = CuratorCache.build(zk, path, CuratorCache.Options.SINGLE_NODE_CACHE);
  }

  /** Opens the rules at {@code path}, creating an empty set if no scheduler has yet. */
  public static ZooKeeperPolicyStore open(CuratorFramework zk, String path, ObjectMapper json) {
    ZooKeeperPolicyStore store = new ZooKeeperPolicyStore(zk, path, json);
    try {
      zk.create().creatingParentsIfNeeded().forPath(path, store.bytes(List.of()));
    } catch (KeeperException.NodeExistsException another) {
      // Created by another scheduler (or an earlier start): its rules stand.
    } catch (Exception e) {
      throw new StoreException("cannot open the policy rules at ZooKeeper node " + path, e);
    }
    store.watch.listenable().addListener(CuratorCacheListener.builder()
        .forCreatesAndChanges((before, now) -> store.seen(now)).build());
    store.watch.start();
    return store;
  }

  @Override
  public List<PolicyRule> loadAll() {
    try {
      return parse(zk.getData().forPath(path));
    } catch (StoreException e) {
      throw e;
    } catch (Exception e) {
      throw new StoreException("cannot read the policy rules at ZooKeeper node " + path, e);
    }
  }

  @Override
  public void put(PolicyRule rule) {
    write(rules -> {
      List<PolicyRule> next = new ArrayList<>(rules);
      next.removeIf(r -> r.name().equals(rule.name()));
      next.add(rule);
      return next;
    });
  }

  @Override
  public void replaceAll(List<PolicyRule> rules) {
    write(old -> List.copyOf(rules));
  }

  @Override
  public boolean delete(String name) {
    return write(rules -> rules.stream().anyMatch(r -> r.name().equals(name))
        ? rules.stream().filter(r -> !r.name().equals(name)).toList()
        : null);
  }

  @Override
  public void listen(Consumer<List<PolicyRule>> committed) {
    listeners.add(committed);
    // A change committed between the caller's loadAll and now reaches it too.
    Stat stat = new Stat();
    try {
      List<PolicyRule> rules = parse(zk.getData().storingStatIn(stat).forPath(path));
      tell(stat.getVersion(), rules);
    } catch (StoreException e) {
      throw e;
    } catch (Exception e) {
      throw new StoreException("cannot read the policy rules at ZooKeeper node " + path, e);
    }
  }

  @Override
  public void close() {
    watch.close();
  }

  /**
   * Applies {@code change} (null: nothing to change) to the committed rules and writes them if
   * no other write came between; returns whether it wrote.
   */
  private boolean write(UnaryOperator<List<PolicyRule>> change) {
    try {
      while (true) {
        Stat read = new Stat();
        List<PolicyRule> next = change.apply(parse(zk.getData().storingStatIn(read).forPath(path)));
        if (next == null) {
          return false;
        }
        try {
          Stat written = zk.setData().withVersion(read.getVersion()).forPath(path, bytes(next));
          tell(written.getVersion(), next);
          return true;
        } catch (KeeperException.BadVersionException raced) {
          // Another scheduler wrote since the read: apply the change to its rules instead.
        }
      }
    } catch (StoreException e) {
      throw e;
    } catch (Exception e) {
      throw new StoreException("policy write to ZooKeeper node " + path + " failed; after a lost"
          + " connection it may still have been committed: read the rules back", e);
    }
  }

  private void seen(ChildData node) {
    if (node.getData() == null) {
      return;
    }
    try {
      tell(node.getStat().getVersion(), parse(node.getData()));
    } catch (StoreException e) {
      LOG.error("ignoring unreadable policy rules at ZooKeeper node {}", path, e);
    }
  }

  /** Tells the listeners {@code rules} unless they were told this version or a newer one. */
  private synchronized void tell(int version, List<PolicyRule> rules) {
    if (version <= told) {
      return;
    }
    told = version;
    for (Consumer<List<PolicyRule>> l : listeners) {
      l.accept(rules);
    }
  }

  private List<PolicyRule> parse(byte[] data) {
    try {
      return json.readValue(data, RULES);
    } catch (IOException e) {
      throw new StoreException("policy rules at ZooKeeper node " + path + " are not a JSON"
          + " array of rules", e);
    }
  }

  private byte[] bytes(List<PolicyRule> rules) {
    try {
      return json.writeValueAsBytes(rules);
    } catch (IOException e) {
      throw new StoreException("cannot encode policy rules", e);
    }
  }
}
