package io.datcp.agent.flows;

import com.google.protobuf.InvalidProtocolBufferException;
import io.datcp.agent.kernel.FlowTuple;
import io.datcp.proto.v1.FlowRegistration;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Registrations written ahead for a crash. SIGTERM hands the flow table over in a snapshot; a
 * SIGKILL (or an OOM kill) leaves none, while the kernel keeps the dead agent's flow entries
 * and goes on sending their FINISHED and CLOSED events. From this journal the next agent knows
 * those flows again (job, reduce, maps, bytes, start, flow id, subscriber) and reports them.
 *
 * <p>Two files, {@code flows.journal.0} and {@code .1}, each memory-mapped once: an append is a
 * copy into the page cache and no system call, so the registration path pays well under a
 * microsecond. The pages outlive the process (the kernel writes them back); a reboot, which
 * could lose them, also empties the kernel's flow map, so there would be nothing to adopt.
 *
 * <p>One file is active; when it is full the other becomes active under the next generation,
 * the live flows are copied into it on a background thread (compaction), and only then is the
 * full one emptied. Ends are not journaled: the next agent adopts a journaled flow only if the
 * kernel still holds its 4-tuple at the same epoch (a flow that finished was deleted there).
 *
 * <p>File: int magic, long generation, long highest flow id journaled before the file started
 * (flow ids stay unique across a crash even when compaction dropped the highest), records from
 * byte {@link #FIRST}. Record: int length
 * (of what follows), long flow id, int epoch, long start (wall clock, ns), long start
 * (CLOCK_MONOTONIC, ns), the owner's uid and pid (ints), the registration (protobuf). The length is written last, after a 0
 * (end mark) behind the record, so a record torn by the crash reads as the end.
 */
final class FlowJournal implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(FlowJournal.class.getName());
  private static final int MAGIC = 0x44414a32; // "DAJ2": records carry the owner
  private static final int FIRST = 24;
  private static final int FIXED = 8 + 4 + 8 + 8 + 4 + 4;
  private static final String NAME = "flows.journal.";

  /** What a journal holds: its registrations, oldest first, and the highest flow id used. */
  record Contents(List<Entry> entries, long maxId) {}

  /** One journaled registration. */
  record Entry(long id, int epoch, long startUnixNanos, long startMonoNanos, Owner owner,
      FlowRegistration registration) {
    FlowTuple tuple() {
      return FlowTuple.of(registration.getSourceAddress(), registration.getSourcePort(),
          registration.getDestinationAddress(), registration.getDestinationPort());
    }
  }

  private final Path dir;
  private final MappedByteBuffer[] files = new MappedByteBuffer[2];
  private final Supplier<List<Flow>> liveFlows;
  private final ExecutorService compactor = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "datcp-journal-compaction");
    t.setDaemon(true);
    return t;
  });
  private int active;
  private int position;
  private long generation;
  private long maxId;
  /** The inactive file still holds flows not yet copied into the active one. */
  private boolean compacting;
  private boolean fullLogged;
  private long skipped;

  private FlowJournal(Path dir, Supplier<List<Flow>> liveFlows) {
    this.dir = dir;
    this.liveFlows = liveFlows;
  }

  /**
   * Everything journaled in dir, oldest first (empty when there is no journal). An unreadable
   * record ends the reading of its file, an unreadable file is skipped; neither stops the
   * agent's start.
   */
  static Contents read(Path dir) {
    long maxId = 0;
    List<long[]> gens = new ArrayList<>();
    List<List<Entry>> perFile = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      Path f = dir.resolve(NAME + i);
      if (!Files.isRegularFile(f)) {
        continue;
      }
      try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
        MappedByteBuffer b = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
        b.order(ByteOrder.LITTLE_ENDIAN);
        if (b.capacity() < FIRST + 4 || b.getInt(0) != MAGIC) {
          continue;
        }
        maxId = Math.max(maxId, b.getLong(12));
        List<Entry> entries = new ArrayList<>();
        int p = FIRST;
        while (p + 4 <= b.capacity()) {
          int len = b.getInt(p);
          if (len < FIXED || p + 4 + len > b.capacity()) {
            break;
          }
          byte[] reg = new byte[len - FIXED];
          b.get(p + 4 + FIXED, reg);
          FlowRegistration r;
          try {
            r = FlowRegistration.parseFrom(reg);
          } catch (InvalidProtocolBufferException e) {
            LOG.log(Level.WARNING, "flow journal {0}: unreadable record at byte {1}; reading"
                + " stops there", new Object[] {f, p});
            break;
          }
          entries.add(new Entry(b.getLong(p + 4), b.getInt(p + 12), b.getLong(p + 16),
              b.getLong(p + 24), new Owner(b.getInt(p + 32), b.getInt(p + 36)), r));
          maxId = Math.max(maxId, b.getLong(p + 4));
          p += 4 + len;
        }
        gens.add(new long[] {b.getLong(4), perFile.size()});
        perFile.add(entries);
      } catch (IOException | RuntimeException e) {
        LOG.log(Level.WARNING, "flow journal {0} unreadable ({1}); its flows are not adopted",
            new Object[] {f, e});
      }
    }
    gens.sort(Comparator.comparingLong(g -> g[0]));
    List<Entry> all = new ArrayList<>();
    for (long[] g : gens) {
      all.addAll(perFile.get((int) g[1]));
    }
    return new Contents(all, maxId);
  }

  /**
   * Opens the journal in dir for appending, with files of fileBytes each, and writes
   * liveFlows (the flows adopted at start) into it; later compactions take liveFlows again.
   *
   * @param maxId the highest flow id handed out so far
   */
  static FlowJournal open(Path dir, int fileBytes, long maxId, Supplier<List<Flow>> liveFlows)
      throws IOException {
    FlowJournal j = new FlowJournal(dir, liveFlows);
    j.maxId = maxId;
    long[] gen = new long[2];
    for (int i = 0; i < 2; i++) {
      try (RandomAccessFile f = new RandomAccessFile(dir.resolve(NAME + i).toFile(), "rw")) {
        f.setLength(fileBytes); // sparse: only pages written take space
        j.files[i] = f.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, fileBytes);
        j.files[i].order(ByteOrder.LITTLE_ENDIAN);
        gen[i] = j.files[i].getInt(0) == MAGIC ? j.files[i].getLong(4) : 0;
      }
    }
    // the older file becomes the active one; the newer keeps its records until the adopted
    // flows are in the active file (a crash in these milliseconds loses the older records)
    j.generation = Math.max(gen[0], gen[1]);
    synchronized (j) {
      j.startFile(gen[0] <= gen[1] ? 0 : 1);
      j.compacting = true;
    }
    j.compact();
    return j;
  }

  private void startFile(int i) {
    MappedByteBuffer b = files[i];
    b.putInt(FIRST, 0); // empty before the header says it is current
    b.putLong(12, maxId);
    b.putLong(4, ++generation);
    b.putInt(0, MAGIC);
    active = i;
    position = FIRST;
  }

  /** Appends f's registration; never blocks on I/O. */
  synchronized void append(Flow f) {
    byte[] reg = f.registration.toByteArray();
    int len = FIXED + reg.length;
    MappedByteBuffer b = files[active];
    if (position + 4 + len + 4 > b.capacity()) {
      if (compacting) {
        // the other file still holds flows not yet copied: nowhere to go (the files are far
        // too small for local.maxLiveFlows registrations); this flow is not journaled
        skipped++;
        if (!fullLogged) {
          fullLogged = true;
          LOG.log(Level.WARNING, "flow journal {0} full while compacting; registrations are not"
              + " journaled until it is done (raise state.journalBytes)", dir);
        }
        return;
      }
      startFile(1 - active);
      compacting = true;
      try {
        compactor.execute(this::compact);
      } catch (RejectedExecutionException e) {
        return; // closing
      }
      b = files[active];
    }
    int p = position;
    b.putLong(p + 4, f.id);
    b.putInt(p + 12, f.epoch);
    b.putLong(p + 16, f.startUnixNanos);
    b.putLong(p + 24, f.startMonoNanos);
    b.putInt(p + 32, f.owner.uid());
    b.putInt(p + 36, f.owner.pid());
    b.put(p + 4 + FIXED, reg);
    b.putInt(p + 4 + len, 0); // end mark, then the length: a torn record reads as the end
    b.putInt(p, len);
    position = p + 4 + len;
    maxId = Math.max(maxId, f.id);
  }

  /** Copies the live flows into the active file, then empties the other one. */
  private void compact() {
    for (Flow f : liveFlows.get()) {
      append(f);
    }
    synchronized (this) {
      files[1 - active].putInt(FIRST, 0);
      compacting = false;
      fullLogged = false;
    }
  }

  /** A compaction is under way (tests). */
  synchronized boolean compacting() {
    return compacting;
  }

  /** Registrations not journaled because both files were in use. */
  synchronized long skipped() {
    return skipped;
  }

  @Override
  public void close() {
    compactor.shutdownNow();
  }
}
