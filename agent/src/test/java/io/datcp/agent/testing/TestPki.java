package io.datcp.agent.testing;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** Certificates for TLS tests, made by the repository's scripts/tls-pki.sh (a throwaway CA). */
public final class TestPki {
  private static final Path SCRIPT = Path.of("../scripts/tls-pki.sh").toAbsolutePath();

  private final Path dir;

  /** A new CA in {@code dir}. */
  public TestPki(Path dir) throws IOException {
    this.dir = dir;
    run(dir.toString(), "ca");
  }

  public Path ca() {
    return dir.resolve("ca.pem");
  }

  /** A server certificate for 127.0.0.1 and localhost; returns its PEM (the key beside it). */
  public Path server(String name) throws IOException {
    run(dir.toString(), "server", name, "DNS:localhost", "IP:127.0.0.1");
    return dir.resolve(name + ".pem");
  }

  /** A node's client certificate naming {@code host}; returns its PEM. */
  public Path client(String host) throws IOException {
    run(dir.toString(), "client", host);
    return dir.resolve(host + ".pem");
  }

  /** The key file beside a certificate this class made. */
  public static Path keyOf(Path cert) {
    String name = cert.getFileName().toString();
    return cert.resolveSibling(name.substring(0, name.length() - ".pem".length()) + ".key");
  }

  private static void run(String... args) throws IOException {
    List<String> cmd = new java.util.ArrayList<>(List.of(SCRIPT.toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    try {
      if (p.waitFor() != 0) {
        throw new IOException(cmd + " failed: " + out);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }
}
