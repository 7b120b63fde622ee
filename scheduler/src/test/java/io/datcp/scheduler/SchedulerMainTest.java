package io.datcp.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The command line: flags, and the fail-fast config file check. */
class SchedulerMainTest {
  @TempDir Path dir;

  @Test
  void aBadConfigKeyStopsStartUpNamingTheKeyAndTheAcceptedOnes() throws Exception {
    Path config = Files.writeString(dir.resolve("bad.properties"), "reports.rate=5\n");
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = execute(false, err, "--data-dir", dir.toString(),
          "--grpc-port", "0", "--http-port", "0", "--config", config.toString());
    assertThat(code).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("'reports.rate'", "reports.ratePerHost", "bad.properties");
  }

  @Test
  void withoutTlsFilesOrAnExplicitPlaintextStartUpStopsNamingTheKey() throws Exception {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = execute(false, err, "--data-dir", dir.toString(),
          "--grpc-port", "0", "--http-port", "0");
    assertThat(code).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("'tls.certFile'", "tls.plaintext=true");
  }

  @Test
  void theDataDirIsRequired() {
    StringWriter err = new StringWriter();
    int code = new CommandLine(new SchedulerMain()).setErr(new PrintWriter(err))
        .execute("--grpc-port", "0");
    assertThat(code).isNotZero();
    assertThat(err.toString()).contains("--data-dir");
  }

  @Test
  void aNodeTokenMintedOnTheCommandLineIsKnownToTheNextScheduler() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int code = execute(true, out, "--data-dir", dir.toString(),
          "--mint-node-token", "node9");
    assertThat(code).isZero();
    String token = out.toString(StandardCharsets.UTF_8).trim();
    assertThat(token).matches("[0-9a-f]{64}");
    assertThat(io.datcp.scheduler.auth.NodeCredentials.open(dir).hostOf(token))
        .isEqualTo("node9");
  }

  /** Runs the command line with System.out ({@code stdout}) or System.err captured. */
  private static int execute(boolean stdout, ByteArrayOutputStream into, String... args) {
    PrintStream saved = stdout ? System.out : System.err;
    PrintStream capture = new PrintStream(into, true, StandardCharsets.UTF_8);
    if (stdout) {
      System.setOut(capture);
    } else {
      System.setErr(capture);
    }
    try {
      return new CommandLine(new SchedulerMain()).execute(args);
    } finally {
      if (stdout) {
        System.setOut(saved);
      } else {
        System.setErr(saved);
      }
    }
  }
}
