package io.datcp.scheduler.ha;

import io.datcp.scheduler.common.ConfigException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

/** The HA mode's one ZooKeeper session, shared by the election and the policy store. */
public final class ZooKeeperEnsemble implements AutoCloseable {
  /** Retries of an operation cut by a lost connection: 0.1, 0.2, 0.4 s apart. */
  private static final int RETRIES = 3;
  private static final int FIRST_RETRY_MILLIS = 100;

  private final CuratorFramework client;

  private ZooKeeperEnsemble(CuratorFramework client) {
    this.client = client;
  }

  /**
   * Connects, waiting at most one session timeout.
   *
   * @throws ConfigException naming ha.zookeeper.connect when no server answered in that time
   */
  public static ZooKeeperEnsemble connect(String connect, int sessionTimeoutMillis) {
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(connect)
        .sessionTimeoutMs(sessionTimeoutMillis)
        .connectionTimeoutMs(sessionTimeoutMillis)
        .retryPolicy(new ExponentialBackoffRetry(FIRST_RETRY_MILLIS, RETRIES))
        .build();
    client.start();
    boolean connected;
    try {
      connected = client.blockUntilConnected(sessionTimeoutMillis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      connected = false;
    }
    if (!connected) {
      client.close();
      throw new ConfigException("configuration key 'ha.zookeeper.connect': no ZooKeeper server"
          + " at '" + connect + "' answered within ha.zookeeper.sessionTimeoutMillis ("
          + sessionTimeoutMillis + " ms)");
    }
    return new ZooKeeperEnsemble(client);
  }

  public CuratorFramework client() {
    return client;
  }

  @Override
  public void close() {
    client.close();
  }
}
