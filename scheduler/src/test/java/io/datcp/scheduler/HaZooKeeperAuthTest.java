package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.config.SchedulerConf;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ha.zookeeper.auth, tried as a process that reaches ZooKeeper without the schedulers'
 * credential (or with a wrong one) would: it may not read or rewrite the policy rules, nor join
 * or end the election; a scheduler with the credential works as before.
 */
class HaZooKeeperAuthTest {
  private static final String TOKEN = "ha-test-admin-token-0123456789";
  private static final String PATH = "/test/scheduler";

  @TempDir Path dir;
  private TestingServer zk;
  private final List<AutoCloseable> open = new ArrayList<>();

  @BeforeEach
  void startZooKeeper() throws Exception {
    zk = new TestingServer(true);
  }

  @AfterEach
  void stopAll() throws Exception {
    try {
      for (AutoCloseable c : open) {
        c.close();
      }
    } finally {
      zk.close();
    }
  }

  private SchedulerServer start(String name, String auth) throws Exception {
    Map<String, String> conf = new HashMap<>();
    conf.put("tls.plaintext", "true");
    conf.put("auth.nodes.required", "false");
    conf.put("auth.token", TOKEN);
    conf.put("ha.zookeeper.connect", zk.getConnectString());
    conf.put("ha.zookeeper.path", PATH);
    conf.put("ha.advertisedHost", "127.0.0.1");
    if (auth != null) {
      conf.put("ha.zookeeper.auth", auth);
    }
    SchedulerServer s = SchedulerServer.builder().dataDir(dir.resolve(name)).grpcPort(0)
        .httpPort(0).conf(SchedulerConf.fromMap(conf)).build().start();
    open.add(s);
    return s;
  }

  /** A ZooKeeper client of the test's own: {@code digest} null for none. */
  private CuratorFramework client(String digest) throws Exception {
    CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder()
        .connectString(zk.getConnectString()).retryPolicy(new RetryOneTime(100));
    if (digest != null) {
      b.authorization("digest", digest.getBytes(StandardCharsets.UTF_8));
    }
    CuratorFramework c = b.build();
    c.start();
    c.blockUntilConnected();
    open.add(c);
    return c;
  }

  @Test
  void withoutTheCredentialNothingUnderThePathCanBeReadOrChanged() throws Exception {
    SchedulerServer s = start("a", "digest:datcp:s3cret-one");
    await().atMost(Duration.ofSeconds(60)).until(() -> s.leadership().isLeader());
    for (String digest : new String[] {null, "datcp:wrong-password"}) {
      CuratorFramework evil = client(digest);
      assertThatThrownBy(() -> evil.getData().forPath(PATH + "/policies"))
          .as("reading the rules, credential %s", digest)
          .isInstanceOf(KeeperException.NoAuthException.class);
      assertThatThrownBy(() -> evil.setData().forPath(PATH + "/policies", "[]".getBytes()))
          .isInstanceOf(KeeperException.NoAuthException.class);
      // joining the election (a candidate's znode under leader/) or listing who leads
      assertThatThrownBy(() -> evil.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
          .forPath(PATH + "/leader/_c_evil-latch-")).isInstanceOf(
              KeeperException.NoAuthException.class);
      assertThatThrownBy(() -> evil.getChildren().forPath(PATH + "/leader"))
          .isInstanceOf(KeeperException.NoAuthException.class);
      assertThatThrownBy(() -> evil.delete().deletingChildrenIfNeeded().forPath(PATH))
          .isInstanceOf(KeeperException.NoAuthException.class);
    }
    // the same questions with the credential are answered: the refusals above are the ACL's
    CuratorFramework operator = client("datcp:s3cret-one");
    assertThat(operator.getData().forPath(PATH + "/policies")).isNotNull();
    assertThat(operator.getChildren().forPath(PATH + "/leader")).isNotEmpty();
    assertThat(s.leadership().isLeader()).isTrue();
  }

  @Test
  void twoSchedulersWithTheCredentialFromAFileStillElectOne() throws Exception {
    Path file = dir.resolve("zk-auth");
    Files.writeString(file, "digest:datcp:s3cret-two\n");
    SchedulerServer a = start("a", "@" + file);
    SchedulerServer b = start("b", "@" + file);
    await().atMost(Duration.ofSeconds(60)).until(() ->
        a.leadership().isLeader() != b.leadership().isLeader()
            && a.leadership().leader().isPresent() && b.leadership().leader().isPresent());
  }

  @Test
  void znodesLeftOpenByASchedulerWithoutTheCredentialAreClosedAtStart() throws Exception {
    start("open", null).close();
    CuratorFramework evil = client(null);
    assertThat(evil.getData().forPath(PATH + "/policies")).as("open before").isNotNull();
    start("closed", "digest:datcp:s3cret-three");
    assertThatThrownBy(() -> evil.setData().forPath(PATH + "/policies", "[]".getBytes()))
        .isInstanceOf(KeeperException.NoAuthException.class);
  }

  @Test
  void aSchedulerWithAnotherCredentialIsRefusedAtStartNamingTheKey() throws Exception {
    start("first", "digest:datcp:s3cret-four");
    assertThatThrownBy(() -> start("second", "digest:datcp:other"))
        .isInstanceOf(ConfigException.class).hasMessageContaining("ha.zookeeper.auth")
        .hasMessageContaining(PATH);
  }

  @Test
  void badValuesAreRefusedNamingTheKey() {
    assertThatThrownBy(() -> SchedulerConf.fromMap(Map.of("ha.zookeeper.auth", "datcp:pw")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("'ha.zookeeper.auth'")
        .hasMessageContaining("digest:USER:PASSWORD");
    assertThatThrownBy(() -> SchedulerServer.zooKeeperDigest("@" + dir.resolve("missing")))
        .isInstanceOf(ConfigException.class).hasMessageContaining("ha.zookeeper.auth");
    assertThat(SchedulerServer.zooKeeperDigest("digest:u:p")).isEqualTo("u:p");
    assertThat(SchedulerServer.zooKeeperDigest("")).isNull();
  }
}
