package io.datcp.agent;

import static io.datcp.agent.testing.TestPki.keyOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.TestAgents;
import io.datcp.agent.testing.TestPki;
import io.datcp.agent.testing.WarningLog;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 4: the agent reaches the scheduler over TLS, checks the scheduler's
 * certificate against scheduler.caFile, presents its node certificate (mutual TLS), and speaks
 * plaintext only when told to. Written as the network would act: a scheduler impostor with a
 * certificate of another CA, a listener that speaks plaintext. No kernel, no root.
 */
class SchedulerTlsTest {
  private static final String TOKEN = "t".repeat(64);

  @TempDir Path dir;
  private TestPki pki;
  private Path serverCert;
  private FakeScheduler scheduler;
  private AgentServer agent;

  @BeforeEach
  void pki() throws Exception {
    pki = new TestPki(dir.resolve("pki"));
    serverCert = pki.server("scheduler");
  }

  @AfterEach
  void stop() throws Exception {
    if (agent != null) {
      agent.close();
    }
    if (scheduler != null) {
      scheduler.close();
    }
  }

  /** Agent settings without a kernel, TLS to target with this node's certificate and token. */
  private Map<String, String> settings(String target) throws Exception {
    Map<String, String> s = TestAgents.settings(dir.resolve("agent"), target, 13562);
    s.remove("scheduler.plaintext");
    s.put("kernel.enabled", "false");
    s.put("kernel.library", "no-such-library");
    Path node = pki.client("test-host");
    s.put("scheduler.caFile", pki.ca().toString());
    s.put("scheduler.certFile", node.toString());
    s.put("scheduler.keyFile", keyOf(node).toString());
    s.put("scheduler.tokenFile", Files.writeString(dir.resolve("token"), TOKEN).toString());
    return s;
  }

  @Test
  void theAgentSpeaksTlsAndPresentsItsNodeCertificate() throws Exception {
    scheduler = new FakeScheduler().tls(serverCert, keyOf(serverCert), pki.ca()).start();
    agent = TestAgents.start(settings(scheduler.target()));
    await().atMost(Duration.ofSeconds(10)).until(() -> !scheduler.watches.isEmpty());
    assertThat(scheduler.clientCertificateNames).isNotEmpty().containsOnly("test-host");
  }

  @Test
  void aSchedulerWhoseCertificateTheCaDidNotSignGetsNothing() throws Exception {
    Path impostor = new TestPki(dir.resolve("other-ca")).server("scheduler");
    scheduler = new FakeScheduler().tls(impostor, keyOf(impostor), null).start();
    agent = TestAgents.start(settings(scheduler.target()));
    await().atMost(Duration.ofSeconds(10)).until(() -> agent.scheduler().outage().isDown()
        || !scheduler.authorizations.isEmpty());
    assertThat(scheduler.authorizations).as("calls, and tokens, that reached it").isEmpty();
  }

  @Test
  void withoutAnExplicitPlaintextTheTokenNeverCrossesInClear() throws Exception {
    scheduler = new FakeScheduler().start(); // plaintext
    Map<String, String> s = settings(scheduler.target());
    s.remove("scheduler.caFile");
    s.remove("scheduler.certFile");
    s.remove("scheduler.keyFile");
    agent = TestAgents.start(s);
    await().atMost(Duration.ofSeconds(10)).until(() -> agent.scheduler().outage().isDown()
        || !scheduler.authorizations.isEmpty());
    assertThat(scheduler.authorizations).as("tokens that reached it in clear").isEmpty();
  }

  @Test
  void plaintextOnlyWhenSetAndThenWithAWarning() throws Exception {
    scheduler = new FakeScheduler().start();
    scheduler.requiredToken = TOKEN;
    Map<String, String> s = settings(scheduler.target());
    s.remove("scheduler.caFile");
    s.remove("scheduler.certFile");
    s.remove("scheduler.keyFile");
    s.put("scheduler.plaintext", "true");
    Logger log = Logger.getLogger("io.datcp.agent.scheduler.SchedulerChannel");
    WarningLog warnings = new WarningLog();
    log.addHandler(warnings);
    try {
      agent = TestAgents.start(s);
    } finally {
      log.removeHandler(warnings);
    }
    assertThat(warnings.records).singleElement()
        .satisfies(r -> assertThat(r.getMessage()).contains("scheduler.plaintext=true"));
    await().atMost(Duration.ofSeconds(10)).until(() -> !scheduler.watches.isEmpty());
  }

  @Test
  void badTlsSettingsStopStartUpNamingTheKey() throws Exception {
    Path node = pki.client("test-host");
    Path notPem = Files.writeString(dir.resolve("not.pem"), "hello\n");
    Map<Map<String, String>, String> cases = Map.of(
        Map.of("scheduler.caFile", dir.resolve("missing.pem").toString()), "'scheduler.caFile'",
        Map.of("scheduler.caFile", notPem.toString()), "'scheduler.caFile'",
        Map.of("scheduler.certFile", notPem.toString()), "'scheduler.certFile'",
        Map.of("scheduler.keyFile", node.toString()), "'scheduler.keyFile'",
        Map.of("scheduler.keyFile", ""), "'scheduler.keyFile'",
        Map.of("scheduler.plaintext", "true"), "'scheduler.plaintext'");
    for (var c : cases.entrySet()) {
      Map<String, String> s = settings("127.0.0.1:9");
      s.putAll(c.getKey());
      assertThatThrownBy(() -> TestAgents.start(s).close()).as(c.getKey().toString())
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(c.getValue());
    }
  }
}
