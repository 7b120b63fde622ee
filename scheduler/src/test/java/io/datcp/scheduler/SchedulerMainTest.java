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
    PrintStream saved = System.err;
    int code;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      code = new CommandLine(new SchedulerMain()).execute("--data-dir", dir.toString(),
          "--grpc-port", "0", "--http-port", "0", "--config", config.toString());
    } finally {
      System.setErr(saved);
    }
    assertThat(code).isEqualTo(2);
    assertThat(err.toString(StandardCharsets.UTF_8))
        .contains("'reports.rate'", "reports.ratePerHost", "bad.properties");
  }

  @Test
  void withoutTlsFilesOrAnExplicitPlaintextStartUpStopsNamingTheKey() throws Exception {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream saved = System.err;
    int code;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
    try {
      code = new CommandLine(new SchedulerMain()).execute("--data-dir", dir.toString(),
          "--grpc-port", "0", "--http-port", "0");
    } finally {
      System.setErr(saved);
    }
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
    PrintStream saved = System.out;
    int code;
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      code = new CommandLine(new SchedulerMain()).execute("--data-dir", dir.toString(),
          "--mint-node-token", "node9");
    } finally {
      System.setOut(saved);
    }
    assertThat(code).isZero();
    String token = out.toString(StandardCharsets.UTF_8).trim();
    assertThat(token).matches("[0-9a-f]{64}");
    assertThat(io.datcp.scheduler.auth.NodeCredentials.open(dir).hostOf(token))
        .isEqualTo("node9");
  }
}
