package io.datcp.scheduler;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.file.Files;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509KeyManager;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Certificates for TLS tests, made by the repository's scripts/tls-pki.sh (the throwaway CA the
 * Docker cluster uses too) and, for a rogue node, by openssl directly.
 */
public final class TestPki {
  private static final Path SCRIPT = Path.of("../scripts/tls-pki.sh").toAbsolutePath();

  private final Path dir;

  /** A new CA in {@code dir}. */
  public TestPki(Path dir) throws IOException {
    this.dir = dir;
    run(SCRIPT.toString(), dir.toString(), "ca");
  }

  public Path ca() {
    return dir.resolve("ca.pem");
  }

  /** A server certificate for 127.0.0.1 and localhost; returns its PEM (the key beside it). */
  public Path server(String name) throws IOException {
    run(SCRIPT.toString(), dir.toString(), "server", name, "DNS:localhost", "IP:127.0.0.1");
    return dir.resolve(name + ".pem");
  }

  /** A node's client certificate naming {@code host}; returns its PEM. */
  public Path client(String host) throws IOException {
    run(SCRIPT.toString(), dir.toString(), "client", host);
    return dir.resolve(host + ".pem");
  }

  /**
   * A client certificate this CA signs with the subjectAltName extension {@code sans} (e.g.
   * "DNS:a,DNS:b"), saved as {@code name}.pem: one that names no single host.
   */
  public Path clientNaming(String name, String sans) throws IOException {
    Path cert = dir.resolve(name + ".pem");
    Path csr = dir.resolve(name + ".csr");
    Path ext = Files.writeString(dir.resolve(name + ".ext"),
        "extendedKeyUsage=clientAuth\nsubjectAltName=" + sans + "\n");
    run("openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-subj", "/CN=" + name, "-keyout", keyOf(cert).toString(),
        "-out", csr.toString());
    run("openssl", "x509", "-req", "-in", csr.toString(), "-CA", ca().toString(),
        "-CAkey", dir.resolve("ca.key").toString(), "-CAcreateserial", "-days", "1",
        "-extfile", ext.toString(), "-out", cert.toString());
    return cert;
  }

  /** The key file beside a certificate this class made. */
  public static Path keyOf(Path cert) {
    String name = cert.getFileName().toString();
    return cert.resolveSibling(name.substring(0, name.length() - ".pem".length()) + ".key");
  }

  /** A self-signed client certificate naming {@code host} in {@code dir}: no CA vouches. */
  public static Path selfSigned(Path dir, String host) throws IOException {
    Path cert = dir.resolve(host + "-self.pem");
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-days", "1", "-subj", "/CN=" + host,
        "-addext", "subjectAltName=DNS:" + host, "-addext", "extendedKeyUsage=clientAuth",
        "-keyout", keyOf(cert).toString(), "-out", cert.toString());
    return cert;
  }

  /**
   * A client TLS context trusting {@code ca} that presents {@code cert} whatever CAs the server
   * names in its request: what a rogue node's own client does.
   */
  public static SSLContext presenting(Path cert, Path ca) throws Exception {
    CertificateFactory cf = CertificateFactory.getInstance("X.509");
    X509Certificate c;
    X509Certificate caCert;
    try (InputStream in = Files.newInputStream(cert); InputStream caIn = Files.newInputStream(ca)) {
      c = (X509Certificate) cf.generateCertificate(in);
      caCert = (X509Certificate) cf.generateCertificate(caIn);
    }
    String pem = Files.readString(keyOf(cert)).replaceAll("-----[A-Z ]+-----|\\s", "");
    PrivateKey key = KeyFactory.getInstance("EC")
        .generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder().decode(pem)));
    X509KeyManager always = new X509KeyManager() {
      @Override
      public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
        return "node";
      }

      @Override
      public String[] getClientAliases(String keyType, Principal[] issuers) {
        return new String[] {"node"};
      }

      @Override
      public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
        return null;
      }

      @Override
      public String[] getServerAliases(String keyType, Principal[] issuers) {
        return null;
      }

      @Override
      public X509Certificate[] getCertificateChain(String alias) {
        return new X509Certificate[] {c};
      }

      @Override
      public PrivateKey getPrivateKey(String alias) {
        return key;
      }
    };
    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
    trust.load(null, null);
    trust.setCertificateEntry("ca", caCert);
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(
        TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(new KeyManager[] {always}, tmf.getTrustManagers(), null);
    return ctx;
  }

  private static void run(String... cmd) throws IOException {
    Process p = new ProcessBuilder(new ArrayList<>(List.of(cmd))).redirectErrorStream(true)
        .start();
    String out = new String(p.getInputStream().readAllBytes());
    try {
      if (p.waitFor() != 0) {
        throw new IOException(String.join(" ", cmd) + " failed: " + out);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted", e);
    }
  }
}
