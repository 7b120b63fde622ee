package io.datcp.scheduler.ha;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.utils.ZKPaths;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leader election among the schedulers sharing a ZooKeeper path, with Curator's LeaderLatch: each
 * joins with its gRPC address as participant id; the holder of the lowest sequence number leads.
 * The latch gives up leadership as soon as the session is suspended (connection lost), before
 * ZooKeeper could elect another, so two schedulers never both think they lead for longer than a
 * lost connection takes to notice. Followers learn the leader's address from a cache of the
 * latch's nodes, so answering a refused call never waits for ZooKeeper.
 */
public final class ZooKeeperLeadership implements Leadership {
  private static final Logger LOG = LoggerFactory.getLogger(ZooKeeperLeadership.class);
  /** Suffix before the sequence number in LeaderLatch's node names ("..-latch-0000000007"). */
  private static final String LATCH_NAME = "latch-";

  private final CuratorFramework zk;
  private final String latchPath;
  private final CuratorCache participants;
  private volatile LeaderLatch latch;
  private volatile Optional<String> leader = Optional.empty();
  private volatile String self;
  private final List<Runnable> lossListeners = new CopyOnWriteArrayList<>();

  /** @param latchPath the election's ZooKeeper node (created if absent) */
  public ZooKeeperLeadership(CuratorFramework zk, String latchPath) {
    this.zk = zk;
    this.latchPath = latchPath;
    this.participants = CuratorCache.build(zk, latchPath);
    participants.listenable().addListener((type, oldData, data) -> refreshLeader());
    participants.start();
  }

  @Override
  public synchronized void start(String address) {
    LeaderLatch l = new LeaderLatch(zk, latchPath, address, LeaderLatch.CloseMode.NOTIFY_LEADER);
    l.addListener(new LeaderLatchListener() {
      @Override
      public void isLeader() {
        LOG.info("this scheduler ({}) now leads", address);
      }

      @Override
      public void notLeader() {
        LOG.warn("this scheduler ({}) no longer leads", address);
        lossListeners.forEach(Runnable::run);
      }
    });
    try {
      l.start();
    } catch (Exception e) {
      throw new IllegalStateException("cannot join the scheduler election at " + latchPath, e);
    }
    self = address;
    latch = l;
  }

  @Override
  public boolean isLeader() {
    LeaderLatch l = latch;
    return l != null && l.hasLeadership();
  }

  /**
   * While this scheduler has lost its connection its own election node stays until the session
   * expires: it is not named then, so clients move on instead of coming back.
   */
  @Override
  public Optional<String> leader() {
    Optional<String> l = leader;
    return l.isPresent() && l.get().equals(self) && !isLeader() ? Optional.empty() : l;
  }

  @Override
  public void onLoss(Runnable listener) {
    lossListeners.add(listener);
  }

  @Override
  public String mode() {
    return "zookeeper";
  }

  /** The participant with the lowest sequence number leads (LeaderLatch's rule). */
  private void refreshLeader() {
    leader = participants.stream()
        .filter(d -> latchPath.equals(ZKPaths.getPathAndNode(d.getPath()).getPath()))
        .filter(d -> d.getPath().contains(LATCH_NAME) && d.getData() != null)
        .min(Comparator.comparing(ZooKeeperLeadership::sequence))
        .map(d -> new String(d.getData(), StandardCharsets.UTF_8));
  }

  private static String sequence(ChildData d) {
    String path = d.getPath();
    return path.substring(path.lastIndexOf(LATCH_NAME) + LATCH_NAME.length());
  }

  @Override
  public synchronized void close() {
    LeaderLatch l = latch;
    latch = null;
    try {
      if (l != null) {
        l.close();
      }
    } catch (IOException e) {
      LOG.warn("leaving the scheduler election failed; ZooKeeper ends it with the session", e);
    } finally {
      participants.close();
    }
  }
}
