package io.datcp.scheduler.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchService;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * How the hostile-load benchmark and an attacker in a JVM of its own (run-hostile.sh
 * ATTACKER_JVM) agree on when to attack, through files in one directory: the attacker writes
 * {@code ready} once it has warmed up; the benchmark creates {@code attack-N} when its N-th
 * attacked window starts; the attacker writes {@code summary-N} (its counts) when that attack has
 * ended. Files appear whole (written aside and renamed). The attacker waits on the directory's
 * inotify watch, not by polling: it idles on the honest clients' core through their window
 * alone.
 */
final class AttackSignals {
  private final Path dir;

  AttackSignals(Path dir) throws IOException {
    this.dir = Files.createDirectories(dir);
  }

  /** The attacker: warmed up, waiting for the first attack. */
  void ready() throws IOException {
    write("ready", "");
  }

  /** The benchmark: attack N starts now. */
  void startAttack(int round) throws IOException {
    write("attack-" + round, "");
  }

  /** The attacker: blocks until the benchmark starts attack N. */
  void awaitAttack(int round) throws IOException, InterruptedException {
    Path go = dir.resolve("attack-" + round);
    try (WatchService watch = FileSystems.getDefault().newWatchService()) {
      // registered before the first look, so a file created in between is not missed; a
      // rename into the directory is reported as a creation
      dir.register(watch, StandardWatchEventKinds.ENTRY_CREATE);
      while (!Files.exists(go)) {
        watch.take().reset();
      }
    }
  }

  /** The attacker: attack N is over; {@code text} is its summary line. */
  void attackSummary(int round, String text) throws IOException {
    write("summary-" + round, text);
  }

  /**
   * The benchmark: the attacker's summary of attack N, once it has written it.
   *
   * @throws TimeoutException if it has not within {@code limit} (the attacker died or hangs)
   */
  String awaitSummary(int round, Duration limit)
      throws IOException, InterruptedException, TimeoutException {
    Path summary = dir.resolve("summary-" + round);
    long deadline = System.nanoTime() + limit.toNanos();
    // after the window: how soon this notices does not touch any measurement
    while (!Files.exists(summary)) {
      if (System.nanoTime() > deadline) {
        throw new TimeoutException("no attacker summary " + summary + " within " + limit
            + ": did the attacker's JVM (run-hostile.sh ATTACKER_JVM) die?");
      }
      TimeUnit.MILLISECONDS.sleep(50);
    }
    return Files.readString(summary, StandardCharsets.UTF_8);
  }

  private void write(String name, String text) throws IOException {
    Path aside = dir.resolve("." + name + ".tmp");
    Files.writeString(aside, text, StandardCharsets.UTF_8);
    Files.move(aside, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
  }
}
