package io.datcp.scheduler.ha;

import io.datcp.scheduler.common.ConfigException;
import java.io.File;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.util.Optional;
import org.apache.zookeeper.ClientCnxnSocketNetty;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.common.ClientX509Util;
import org.apache.zookeeper.util.PemReader;

/**
 * TLS to ZooKeeper's secure client port (ha.zookeeper.tls.*), in ZooKeeper's own terms: its Netty
 * client socket with a PEM key store (this scheduler's private key and certificate chain in one
 * file, which ZooKeeper asks for when its ssl.clientAuth is need, the default) and a PEM trust
 * store (the CAs of the servers' certificates). ZooKeeper's client checks that a server's
 * certificate names the host it dialled. The files are read once here, so that a missing or
 * malformed one stops start-up naming its key rather than as a connection that never comes up.
 */
public final class ZooKeeperTls {
  private static final String KEY_STORE_KEY = "ha.zookeeper.tls.keyStoreFile";
  private static final String TRUST_STORE_KEY = "ha.zookeeper.tls.trustStoreFile";
  private static final String PEM = "PEM";

  private final String keyStore;
  private final String trustStore;

  private ZooKeeperTls(String keyStore, String trustStore) {
    this.keyStore = keyStore;
    this.trustStore = trustStore;
  }

  /**
   * Both files checked, or null when neither key is set (plaintext).
   *
   * @throws ConfigException naming the key that is missing or whose file does not load
   */
  public static ZooKeeperTls load(String keyStore, String trustStore) {
    if (keyStore.isEmpty() && trustStore.isEmpty()) {
      return null;
    }
    if (keyStore.isEmpty() || trustStore.isEmpty()) {
      throw new ConfigException("configuration key '" + (keyStore.isEmpty() ? KEY_STORE_KEY
          : TRUST_STORE_KEY) + "': required with " + (keyStore.isEmpty() ? TRUST_STORE_KEY
          : KEY_STORE_KEY) + " (TLS to ZooKeeper needs both; neither is plaintext)");
    }
    try {
      // what ZooKeeper's PEM key store does with it: key and chain from the one file
      PemReader.loadKeyStore(new File(keyStore), new File(keyStore), Optional.empty());
    } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
      throw new ConfigException("configuration key '" + KEY_STORE_KEY + "': " + keyStore
          + " must hold an unencrypted PKCS#8 private key and its PEM certificate chain ("
          + e.getMessage() + ")");
    }
    try {
      if (PemReader.readCertificateChain(new File(trustStore)).isEmpty()) {
        throw new IllegalArgumentException("no certificate");
      }
    } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
      throw new ConfigException("configuration key '" + TRUST_STORE_KEY + "': " + trustStore
          + " must hold PEM CA certificates (" + e.getMessage() + ")");
    }
    return new ZooKeeperTls(keyStore, trustStore);
  }

  /** The ZooKeeper client settings of a TLS session (over any set as system properties). */
  ZKClientConfig clientConfig() {
    ZKClientConfig c = new ZKClientConfig();
    c.setProperty(ZKClientConfig.SECURE_CLIENT, "true");
    // only ZooKeeper's Netty client speaks TLS; its default NIO socket would send plaintext
    c.setProperty(ZKClientConfig.ZOOKEEPER_CLIENT_CNXN_SOCKET,
        ClientCnxnSocketNetty.class.getName());
    try (ClientX509Util x509 = new ClientX509Util()) {
      c.setProperty(x509.getSslKeystoreLocationProperty(), keyStore);
      c.setProperty(x509.getSslKeystoreTypeProperty(), PEM);
      c.setProperty(x509.getSslTruststoreLocationProperty(), trustStore);
      c.setProperty(x509.getSslTruststoreTypeProperty(), PEM);
    }
    return c;
  }
}
