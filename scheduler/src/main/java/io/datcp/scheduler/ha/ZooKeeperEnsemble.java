package io.datcp.scheduler.ha;

import io.datcp.scheduler.common.ConfigException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;

/** The HA mode's one ZooKeeper session, shared by the election and the policy store. */
public final class ZooKeeperEnsemble implements AutoCloseable {
  /** Retries of an operation cut by a lost connection: 0.1, 0.2, 0.4 s apart. */
  private static final int RETRIES = 3;
  private static final int FIRST_RETRY_MILLIS = 100;

  private final CuratorFramework client;
  private final boolean authenticated;

  private ZooKeeperEnsemble(CuratorFramework client, boolean authenticated) {
    this.client = client;
    this.authenticated = authenticated;
  }

  /**
   * Connects, waiting at most one session timeout. With a {@code digest} credential
   * (USER:PASSWORD, ha.zookeeper.auth) the session authenticates and every znode it creates
   * gets ZooKeeper's creator-only ACL: only sessions with the same credential may read, change,
   * delete or add children to it.
   *
   * @param digest USER:PASSWORD, or null for none (znodes open to anyone)
   * @param tls TLS to ZooKeeper's secure client port, or null for plaintext
   * @throws ConfigException naming ha.zookeeper.connect when no server answered in that time
   */
  public static ZooKeeperEnsemble connect(String connect, int sessionTimeoutMillis,
      String digest, ZooKeeperTls tls) {
    CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder()
        .connectString(connect)
        .sessionTimeoutMs(sessionTimeoutMillis)
        .connectionTimeoutMs(sessionTimeoutMillis)
        .retryPolicy(new ExponentialBackoffRetry(FIRST_RETRY_MILLIS, RETRIES));
    if (tls != null) {
      b.zkClientConfig(tls.clientConfig());
    }
    if (digest != null) {
      b.authorization("digest", digest.getBytes(StandardCharsets.UTF_8))
          .aclProvider(new CreatorOnly());
    }
    CuratorFramework client = b.build();
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
          + sessionTimeoutMillis + " ms)" + (tls == null ? "" : " over TLS (a refused"
          + " handshake looks the same: see the log for the ZooKeeper client's reason)"));
    }
    return new ZooKeeperEnsemble(client, digest != null);
  }

  public CuratorFramework client() {
    return client;
  }

  /**
   * With a credential, gives each of {@code paths} that exists the creator-only ACL: znodes
   * made before the credential was set (or by a scheduler without it) would otherwise stay open.
   *
   * @throws ConfigException naming ha.zookeeper.auth when one belongs to another identity
   */
  public void restrict(List<String> paths) {
    if (!authenticated) {
      return;
    }
    for (String path : paths) {
      try {
        if (client.checkExists().forPath(path) != null) {
          client.setACL().withACL(ZooDefs.Ids.CREATOR_ALL_ACL).forPath(path);
        }
      } catch (KeeperException.NoAuthException e) {
        throw new ConfigException("configuration key 'ha.zookeeper.auth': znode " + path
            + " may not be changed with this credential (another identity created it): use"
            + " that identity's credential, or remove the znode");
      } catch (Exception e) {
        throw new IllegalStateException("setting the ACL of znode " + path + " failed", e);
      }
    }
  }

  @Override
  public void close() {
    client.close();
  }

  /** ZooKeeper's "auth" scheme ACL: all permissions for the identities this session has. */
  private static final class CreatorOnly implements ACLProvider {
    @Override
    public List<ACL> getDefaultAcl() {
      return ZooDefs.Ids.CREATOR_ALL_ACL;
    }

    @Override
    public List<ACL> getAclForPath(String path) {
      return ZooDefs.Ids.CREATOR_ALL_ACL;
    }
  }
}
