package io.datcp.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Runs {@link LocalPeer} as another user, a real process with its own uid and pid
 * ({@code setpriv --reuid --regid --clear-groups} or with a supplementary group), so the agent
 * sees it through SO_PEERCRED as it would see any local process. Needs root. The class path is
 * copied where that user can read it (the build's lies under /root, mode 0700); {@link #close}
 * removes the copy.
 */
public final class OtherUser implements AutoCloseable {
  /** nobody / nogroup on Debian: a uid with no rights of its own. */
  public static final int NOBODY = 65534;

  private final Path dir;
  private final String classPath;

  private OtherUser(Path dir, String classPath) {
    this.dir = dir;
    this.classPath = classPath;
  }

  /** Copies this JVM's class path into a new world-readable directory. */
  public static OtherUser prepare() throws IOException {
    Path dir = Files.createTempDirectory("datcp-peer-cp",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxr-xr-x")));
    List<String> entries = new ArrayList<>();
    int i = 0;
    for (String e : System.getProperty("java.class.path").split(":")) {
      Path from = Path.of(e);
      if (!Files.exists(from)) {
        continue;
      }
      Path to = dir.resolve(i++ + "-" + from.getFileName());
      copy(from, to);
      entries.add(to.toString());
    }
    return new OtherUser(dir, String.join(":", entries));
  }

  private static void copy(Path from, Path to) throws IOException {
    if (!Files.isDirectory(from)) {
      Files.copy(from, to, StandardCopyOption.COPY_ATTRIBUTES);
      Files.setPosixFilePermissions(to, PosixFilePermissions.fromString("rw-r--r--"));
      return;
    }
    try (Stream<Path> all = Files.walk(from)) {
      for (Path p : (Iterable<Path>) all::iterator) {
        Path t = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(t);
          Files.setPosixFilePermissions(t, PosixFilePermissions.fromString("rwxr-xr-x"));
        } else {
          Files.copy(p, t);
          Files.setPosixFilePermissions(t, PosixFilePermissions.fromString("rw-r--r--"));
        }
      }
    }
  }

  /**
   * Runs one {@link LocalPeer} command as uid/gid (0: root, unchanged), in group group too
   * when it is not negative, and returns the line it printed.
   */
  public String run(int uid, int gid, int group, String... command)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    if (uid != 0) {
      cmd.addAll(List.of("setpriv", "--reuid=" + uid, "--regid=" + gid));
      cmd.add(group < 0 ? "--clear-groups" : "--groups=" + group);
    }
    cmd.addAll(List.of(ProcessHandle.current().info().command().orElse("java"),
        "-XX:TieredStopAtLevel=1", "-cp", classPath,
        LocalPeer.class.getName()));
    cmd.addAll(List.of(command));
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(false)
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly().waitFor();
      throw new IOException("peer process did not finish: " + cmd);
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    String[] lines = out.split("\n");
    return lines[lines.length - 1];
  }

  /** As the user, no other group. */
  public String run(int uid, String... command) throws IOException, InterruptedException {
    return run(uid, uid, -1, command);
  }

  @Override
  public void close() {
    try (Stream<Path> all = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) all.sorted(Comparator.reverseOrder())::iterator) {
        Files.delete(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
