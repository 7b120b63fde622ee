package io.datcp.scheduler.auth;

import static io.datcp.scheduler.common.InvalidFieldException.require;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Per-node credentials of reporters and agents: token -> host. Only each token's SHA-256 is
 * kept, in DATA_DIR/node-tokens (mode 0600, one "host sha256hex" line per node), so the file
 * does not give the tokens away; a token is shown once, when minted.
 */
public final class NodeCredentials {
  public static final String FILE_NAME = "node-tokens";
  /** What a host name may be, in tokens and node certificates. */
  public static final String HOST_PATTERN = "[A-Za-z0-9_.:-]{1,255}";
  private static final int TOKEN_BYTES = 32;

  private final Path file;
  private final Map<String, String> hostByHash = new ConcurrentHashMap<>();
  private final Map<String, String> hashByHost = new TreeMap<>();
  private final SecureRandom random = new SecureRandom();

  private NodeCredentials(Path file) {
    this.file = file;
  }

  /** Loads DATA_DIR/node-tokens (none yet: no node has a token). */
  public static NodeCredentials open(Path dataDir) throws IOException {
    NodeCredentials c = new NodeCredentials(dataDir.resolve(FILE_NAME));
    if (Files.exists(c.file)) {
      int n = 0;
      for (String line : Files.readAllLines(c.file, StandardCharsets.US_ASCII)) {
        n++;
        String t = line.trim();
        if (t.isEmpty() || t.startsWith("#")) {
          continue;
        }
        String[] f = t.split("\\s+");
        if (f.length != 2 || !f[1].matches("[0-9a-f]{64}")) {
          throw new IOException(c.file + ":" + n + ": expected 'host sha256hex'");
        }
        c.hashByHost.put(f[0], f[1]);
        c.hostByHash.put(f[1], f[0]);
      }
    }
    return c;
  }

  /** The host a token belongs to, or null for an unknown token. */
  public String hostOf(String token) {
    return hostByHash.get(sha256(token));
  }

  /** A fresh token for {@code host}; it replaces (revokes) the host's previous one. */
  public synchronized String mint(String host) {
    require(host != null && host.matches(HOST_PATTERN), "host",
        "must be a host name of 1-255 characters (A-Za-z0-9_.:-)");
    byte[] bytes = new byte[TOKEN_BYTES];
    random.nextBytes(bytes);
    String token = HexFormat.of().formatHex(bytes);
    String hash = sha256(token);
    String old = hashByHost.put(host, hash);
    if (old != null) {
      hostByHash.remove(old);
    }
    hostByHash.put(hash, host);
    save();
    return token;
  }

  /** Revokes the host's token; false when it had none. */
  public synchronized boolean revoke(String host) {
    String old = hashByHost.remove(host);
    if (old == null) {
      return false;
    }
    hostByHash.remove(old);
    save();
    return true;
  }

  /** Hosts holding a token, sorted. */
  public synchronized List<String> hosts() {
    return new ArrayList<>(hashByHost.keySet());
  }

  private void save() {
    StringBuilder text = new StringBuilder("# host sha256(token); written by the scheduler\n");
    hashByHost.forEach((h, hash) -> text.append(h).append(' ').append(hash).append('\n'));
    Path tmp = file.resolveSibling(FILE_NAME + ".tmp");
    try {
      Files.deleteIfExists(tmp);
      Files.createFile(tmp, PosixFilePermissions.asFileAttribute(
          PosixFilePermissions.fromString("rw-------")));
      Files.writeString(tmp, text, StandardCharsets.US_ASCII);
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }

  private static String sha256(String token) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
          .digest(token.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }
}
