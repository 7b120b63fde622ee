package io.datcp.agent.flows;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.kernel.FlowTuple;
import io.datcp.proto.v1.FlowPolicy;
import io.datcp.proto.v1.FlowRegistration;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The registration journal on its own (no kernel): records, rolling, compaction, torn ends. */
class FlowJournalTest {
  @TempDir
  Path dir;

  private static Flow flow(long id) {
    int port = 40000 + (int) (id % 20000);
    FlowRegistration r = FlowRegistration.newBuilder().setJobId("job_1700000000000_0001")
        .setReduceId((int) (id % 7)).addMapIds(1).addMapIds(2).setBytes(1000 + id)
        .setSourceAddress("192.0.2.1").setSourcePort(13562).setDestinationAddress("192.0.2.2")
        .setDestinationPort(port).setSubscriberId("nm/1").build();
    return new Flow(id, FlowTuple.of("192.0.2.1", 13562, "192.0.2.2", port), (int) id, r,
        new Owner(1000, 4000 + (int) id), 1_000_000L * id, 2_000_000L * id, FlowPolicy.getDefaultInstance());
  }

  @Test
  void registrationsReadBackAsWrittenAndATornRecordReadsAsTheEnd() throws Exception {
    try (FlowJournal j = FlowJournal.open(dir, 1 << 16, 0, List::of)) {
      for (long id = 1; id <= 3; id++) {
        j.append(flow(id));
      }
    }
    FlowJournal.Contents c = FlowJournal.read(dir);
    assertThat(c.maxId()).isEqualTo(3);
    assertThat(c.entries()).extracting(FlowJournal.Entry::id).containsExactly(1L, 2L, 3L);
    FlowJournal.Entry e = c.entries().get(1);
    assertThat(e.epoch()).isEqualTo(2);
    assertThat(e.startUnixNanos()).isEqualTo(2_000_000L);
    assertThat(e.startMonoNanos()).isEqualTo(4_000_000L);
    assertThat(e.owner()).isEqualTo(new Owner(1000, 4002));
    assertThat(e.registration()).isEqualTo(flow(2).registration);
    assertThat(e.tuple()).isEqualTo(flow(2).tuple);

    // a process killed while writing record 4: its bytes are there, its length is not
    int end = 24 + 3 * (4 + 36 + flow(1).registration.getSerializedSize());
    // both files were new: the first is the active one
    try (RandomAccessFile f = new RandomAccessFile(dir.resolve("flows.journal.0").toFile(),
        "rw")) {
      f.seek(end + 4);
      f.write(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9});
    }
    assertThat(FlowJournal.read(dir).entries()).hasSize(3);

    // a record whose bytes are not a registration ends the reading; those before it count
    int second = 24 + 4 + 36 + flow(1).registration.getSerializedSize();
    try (RandomAccessFile f = new RandomAccessFile(dir.resolve("flows.journal.0").toFile(),
        "rw")) {
      f.seek(second + 4 + 36);
      f.write(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff});
    }
    assertThat(FlowJournal.read(dir).entries()).extracting(FlowJournal.Entry::id)
        .containsExactly(1L);
  }

  @Test
  void fullFilesRollAndCompactionKeepsOnlyTheLiveFlowsAndTheHighestId() throws Exception {
    List<Flow> live = new CopyOnWriteArrayList<>();
    try (FlowJournal j = FlowJournal.open(dir, 1 << 16, 0, () -> List.copyOf(live))) {
      for (long id = 1; id <= 5000; id++) { // about 100 bytes each: several rolls
        Flow f = flow(id);
        if (id % 1000 == 0) {
          live.add(f);
        }
        j.append(f);
        if (id % 500 == 0) {
          await().atMost(Duration.ofSeconds(5)).until(() -> !j.compacting());
        }
      }
      await().atMost(Duration.ofSeconds(5)).until(() -> !j.compacting());
      assertThat(j.skipped()).isZero();
    }
    FlowJournal.Contents c = FlowJournal.read(dir);
    assertThat(c.maxId()).isEqualTo(5000);
    assertThat(c.entries()).extracting(FlowJournal.Entry::id)
        .contains(1000L, 2000L, 3000L, 4000L, 5000L).doesNotContain(1L, 999L).hasSizeLessThan(
            (1 << 17) / 100);

    // a restart reopens the journal: what was there is re-seeded by the adopted flows only
    try (FlowJournal j = FlowJournal.open(dir, 1 << 16, 5000, () -> List.of(flow(4000)))) {
      assertThat(j.skipped()).isZero();
    }
    c = FlowJournal.read(dir);
    assertThat(c.entries()).extracting(FlowJournal.Entry::id).containsExactly(4000L);
    assertThat(c.maxId()).isEqualTo(5000);
  }

  /** Prints what an append costs on the registration path (not a timed assertion). */
  @Test
  void appendCost() throws Exception {
    Flow[] flows = new Flow[1024];
    for (int i = 0; i < flows.length; i++) {
      flows[i] = flow(i + 1);
    }
    try (FlowJournal j = FlowJournal.open(dir, 32 << 20, 0, List::of)) {
      int n = 1_000_000;
      for (int round = 0; round < 2; round++) { // the first round warms up the JIT
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
          j.append(flows[i & 1023]);
        }
        long ns = System.nanoTime() - t0;
        System.out.printf("flow journal: %d appends, %.0f ns each (round %d)%n", n,
            (double) ns / n, round + 1);
      }
    }
  }
}
