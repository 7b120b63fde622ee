package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class AgentMainTest {

  @Test
  void aBadConfigFileStopsStartUpWithExitCode2NamingTheKey(@TempDir Path dir) throws Exception {
    Path conf = dir.resolve("agent.properties");
    Files.writeString(conf, "local.socketMode=rwxrwxrwx\n");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = execute(err, "--config", conf.toString());
    assertThat(code).isEqualTo(AgentMain.EXIT_CONFIG);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains(
        "bad value 'rwxrwxrwx' for configuration key 'local.socketMode'; accepted: an octal"
            + " mode such as 0660");
  }

  @Test
  void aNodeManagerUserTheHostDoesNotKnowStopsStartUpWithExitCode2(@TempDir Path dir)
      throws Exception {
    Path conf = dir.resolve("agent.properties");
    Files.writeString(conf, "local.nodeManagerUser=datcp-no-such-user\nkernel.enabled=false\n"
        + "scheduler.target=\nmetrics.port=-1\nlocal.socketPath=" + dir.resolve("a.sock")
        + "\nstate.dir=" + dir.resolve("state") + "\n");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = execute(err, "--config", conf.toString());
    assertThat(code).isEqualTo(AgentMain.EXIT_CONFIG);
    assertThat(err.toString(StandardCharsets.UTF_8)).contains(
        "bad value 'datcp-no-such-user' for configuration key 'local.nodeManagerUser';"
            + " accepted: empty (root only), a user name or a numeric uid known to this host");
    assertThat(Files.exists(dir.resolve("a.sock"))).isFalse();
  }

  @Test
  void aMissingConfigFileIsAConfigError(@TempDir Path dir) {
    assertThat(new CommandLine(new AgentMain()).execute("--config",
        dir.resolve("absent.properties").toString())).isEqualTo(AgentMain.EXIT_CONFIG);
  }

  /** Runs the command line with System.err captured into {@code err}. */
  private static int execute(ByteArrayOutputStream err, String... args) {
    PrintStream saved = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      return new CommandLine(new AgentMain()).execute(args);
    } finally {
      System.setErr(saved);
    }
  }
}
