package io.datcp.shuffle;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.FlowRegistration;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.ShuffleEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.hadoop.io.DataOutputBuffer;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleHeader;

/** Checks shared by the MiniYARN job tests: job output, counters, and what the agent saw. */
final class ShuffleChecks {
  private ShuffleChecks() { }

  /** All lines of the job's part files, sorted. */
  static List<String> readOutput(Path out) throws IOException {
    List<String> lines = new ArrayList<>();
    try (Stream<Path> parts = Files.list(out)) {
      for (Path p : parts.filter(p -> p.getFileName().toString().startsWith("part-")).toList()) {
        lines.addAll(Files.readAllLines(p));
      }
    }
    lines.sort(null);
    return lines;
  }

  /** Runs a GeneratorJob on the cluster; it must succeed with exactly the expected output. */
  static Job runGeneratorJob(DatcpMiniCluster cluster, int maps, int reduces, int records,
      int valueBytes, Path out) throws Exception {
    Job job = GeneratorJob.create(cluster.jobConf(), maps, reduces, records, valueBytes,
        new org.apache.hadoop.fs.Path(out.toUri()));
    assertThat(job.waitForCompletion(false)).as("job succeeded").isTrue();
    assertThat(readOutput(out))
        .isEqualTo(GeneratorJob.expectedOutput(maps, reduces, records, valueBytes));
    return job;
  }

  static long shuffleBytes(Job job) throws IOException, InterruptedException {
    return job.getCounters().findCounter(TaskCounter.REDUCE_SHUFFLE_BYTES).getValue();
  }

  /** partLength per map and reduce, from the MapOutputIndexed events the service forwarded. */
  static Map<Integer, List<Long>> partitionBytes(List<ShuffleEvent> events, String jobId,
      int maps, int reduces) {
    Map<Integer, List<Long>> parts = new HashMap<>();
    for (ShuffleEvent e : events) {
      if (e.getEventCase() != ShuffleEvent.EventCase.MAP_OUTPUT_INDEXED) {
        continue;
      }
      MapOutputIndexed m = e.getMapOutputIndexed();
      assertThat(m.getJobId()).isEqualTo(jobId);
      assertThat(m.getPartitionBytesList()).hasSize(reduces);
      assertThat(parts.put(m.getMapId(), m.getPartitionBytesList())).as("once per map").isNull();
    }
    assertThat(parts.keySet()).hasSize(maps);
    return parts;
  }

  /** Size of the ShuffleHeader Hadoop writes before a map output's partition. */
  static long headerBytes(String jobId, int map, int reduce, long partLength)
      throws IOException {
    String attempt = new TaskAttemptID(new TaskID(JobID.forName(jobId), TaskType.MAP, map), 0)
        .toString();
    DataOutputBuffer out = new DataOutputBuffer();
    new ShuffleHeader(attempt, partLength, partLength, reduce).write(out);
    return out.getLength();
  }

  /**
   * Every (reduce, map) pair was fetched in exactly one registered flow, whose bytes are the
   * response body (partitions plus headers) and which ended written in full; the registered
   * partitions add up to the job's REDUCE_SHUFFLE_BYTES.
   */
  static void assertEveryFetchRegisteredExactly(List<FakeAgent.Flow> flows,
      Map<Long, FlowEnd> ends, Map<Integer, List<Long>> parts, Job job)
      throws IOException, InterruptedException {
    String jobId = job.getJobID().toString();
    Set<String> fetched = new HashSet<>();
    long partBytesRegistered = 0;
    assertThat(flows).isNotEmpty();
    for (FakeAgent.Flow f : flows) {
      FlowRegistration reg = f.registration();
      assertThat(reg.getJobId()).isEqualTo(jobId);
      long expectedBytes = 0;
      for (int map : reg.getMapIdsList()) {
        assertThat(fetched.add(reg.getReduceId() + "/" + map)).as("fetched once").isTrue();
        long part = parts.get(map).get(reg.getReduceId());
        partBytesRegistered += part;
        expectedBytes += part + headerBytes(jobId, map, reg.getReduceId(), part);
      }
      assertThat(reg.getBytes()).as("exact response bytes").isEqualTo(expectedBytes);
      assertThat(reg.getSourcePort()).isPositive();
      assertThat(reg.getDestinationPort()).isPositive().isNotEqualTo(reg.getSourcePort());
      assertThat(reg.getSourceAddress()).isNotEmpty();

      FlowEnd end = ends.get(f.flowId());
      assertThat(end.getReason()).isEqualTo(FlowEndReason.FLOW_END_REASON_WRITTEN);
      assertThat(end.getBytesWritten()).isEqualTo(reg.getBytes());
    }
    int reduces = parts.values().iterator().next().size();
    assertThat(fetched).hasSize(parts.size() * reduces);
    assertThat(partBytesRegistered).as("registered partitions = REDUCE_SHUFFLE_BYTES")
        .isEqualTo(shuffleBytes(job));
  }
}
