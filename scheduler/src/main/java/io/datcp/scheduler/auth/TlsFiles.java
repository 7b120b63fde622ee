package io.datcp.scheduler.auth;

import com.linecorp.armeria.common.TlsKeyPair;
import com.linecorp.armeria.common.TlsProvider;
import io.datcp.scheduler.common.ConfigException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scheduler's TLS certificate chain, private key and (for mutual TLS) the CAs that sign node
 * certificates, read from PEM files and handed to Armeria for each handshake. At start a file
 * that is missing, unreadable or not what its key says stops start-up with a message naming the
 * key (and a private key that does not match the certificate does too). Afterwards a changed
 * file (modification time or size, looked at no more than once a second) is read again at the
 * next handshake: renewed certificates apply to new connections without a restart. A changed set
 * that does not load (half written, key and certificate from different renewals) keeps the
 * previous one and is logged once per change.
 */
public final class TlsFiles implements TlsProvider {
  private static final Logger LOG = LoggerFactory.getLogger(TlsFiles.class);
  private static final long RECHECK_NANOS = 1_000_000_000L;

  /** The files' state a set was read from: modification time and size of each. */
  private record Stamp(List<Object> parts) {}

  private record Loaded(TlsKeyPair pair, List<X509Certificate> clientCas, Stamp stamp) {}

  private final Path certFile;
  private final Path keyFile;
  /** Null: no client certificates are asked for. */
  private final Path clientCaFile;
  private volatile Loaded current;
  private volatile long checkedNanos = System.nanoTime();
  /** The stamp of the last set that failed to load, so that it is logged once. */
  private Stamp failed;

  private TlsFiles(Path certFile, Path keyFile, Path clientCaFile) {
    this.certFile = certFile;
    this.keyFile = keyFile;
    this.clientCaFile = clientCaFile;
  }

  /**
   * Reads and checks the files.
   *
   * @param clientCaFile null when nodes do not present certificates
   * @throws ConfigException naming tls.certFile, tls.keyFile or tls.clientCaFile
   */
  public static TlsFiles load(Path certFile, Path keyFile, Path clientCaFile) {
    TlsFiles f = new TlsFiles(certFile, keyFile, clientCaFile);
    f.current = f.read();
    return f;
  }

  /** Whether client certificates are verified (tls.clientCaFile is set). */
  public boolean verifiesClients() {
    return clientCaFile != null;
  }

  @Override
  public TlsKeyPair keyPair(String hostname) {
    return fresh().pair();
  }

  @Override
  public List<X509Certificate> trustedCertificates(String hostname) {
    return fresh().clientCas();
  }

  private Loaded fresh() {
    long now = System.nanoTime();
    if (now - checkedNanos < RECHECK_NANOS) {
      return current;
    }
    synchronized (this) {
      if (now - checkedNanos < RECHECK_NANOS) {
        return current;
      }
      checkedNanos = now;
      try {
        Stamp s = stamp();
        if (!s.equals(current.stamp()) && !s.equals(failed)) {
          try {
            current = read();
            failed = null;
            LOG.info("TLS files changed: new connections use the certificate of {}",
                current.pair().certificateChain().get(0).getSubjectX500Principal());
          } catch (ConfigException e) {
            failed = s;
            LOG.warn("TLS files changed but do not load, keeping the previous ones: {}",
                e.getMessage());
          }
        }
      } catch (IOException e) {
        if (failed == null) {
          failed = current.stamp();
          LOG.warn("TLS files cannot be checked for changes, keeping the loaded ones: {}",
              e.toString());
        }
      }
      return current;
    }
  }

  private Stamp stamp() throws IOException {
    List<Object> parts = new ArrayList<>();
    for (Path p : clientCaFile == null ? List.of(certFile, keyFile)
        : List.of(certFile, keyFile, clientCaFile)) {
      BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
      parts.add(a.lastModifiedTime());
      parts.add(a.size());
    }
    return new Stamp(parts);
  }

  private Loaded read() {
    readable("tls.certFile", certFile);
    readable("tls.keyFile", keyFile);
    if (clientCaFile != null) {
      readable("tls.clientCaFile", clientCaFile);
    }
    Stamp s;
    try {
      s = stamp();
    } catch (IOException e) {
      throw new ConfigException("cannot read the TLS files: " + e);
    }
    List<X509Certificate> chain = certificates("tls.certFile", certFile);
    TlsKeyPair pair;
    try {
      pair = TlsKeyPair.of(keyFile.toFile(), certFile.toFile());
    } catch (RuntimeException e) {
      throw new ConfigException("configuration key 'tls.keyFile': " + keyFile
          + " is not a PEM private key (PKCS#8, 'BEGIN PRIVATE KEY') of tls.certFile: "
          + e.getMessage());
    }
    if (!matches(pair.privateKey(), chain.get(0).getPublicKey())) {
      throw new ConfigException("configuration key 'tls.keyFile': " + keyFile
          + " is not the private key of the certificate in tls.certFile " + certFile);
    }
    List<X509Certificate> cas = clientCaFile == null ? null
        : List.copyOf(certificates("tls.clientCaFile", clientCaFile));
    return new Loaded(pair, cas, s);
  }

  private static void readable(String key, Path file) {
    if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
      throw new ConfigException("configuration key '" + key + "': " + file
          + " is not a readable file");
    }
  }

  private static List<X509Certificate> certificates(String key, Path file) {
    List<X509Certificate> certs = new ArrayList<>();
    try (InputStream in = Files.newInputStream(file)) {
      for (var c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        certs.add((X509Certificate) c);
      }
    } catch (IOException | GeneralSecurityException e) {
      throw new ConfigException("configuration key '" + key + "': cannot read PEM certificates"
          + " from " + file + ": " + e.getMessage());
    }
    if (certs.isEmpty()) {
      throw new ConfigException("configuration key '" + key + "': no PEM certificate in "
          + file);
    }
    return certs;
  }

  /** Whether key signs what the certificate's public key verifies. */
  private static boolean matches(PrivateKey key, PublicKey pub) {
    String alg = switch (key.getAlgorithm()) {
      case "EC" -> "SHA256withECDSA";
      case "RSA" -> "SHA256withRSA";
      case "Ed25519", "EdDSA" -> "Ed25519";
      default -> null;
    };
    if (alg == null) {
      return false;
    }
    try {
      byte[] probe = new byte[32];
      new SecureRandom().nextBytes(probe);
      Signature sign = Signature.getInstance(alg);
      sign.initSign(key);
      sign.update(probe);
      byte[] sig = sign.sign();
      Signature verify = Signature.getInstance(alg);
      verify.initVerify(pub);
      verify.update(probe);
      return verify.verify(sig);
    } catch (GeneralSecurityException e) {
      return false;
    }
  }
}
