package io.datcp.scheduler;

import io.datcp.proto.v1.FlowKey;
import io.datcp.proto.v1.FlowOutcome;
import io.datcp.proto.v1.FlowOutcomes;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.PolicyLookup;
import io.datcp.proto.v1.QuenchOutcome;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The largest valid messages one node can send (issue 18 item 5's attacker): fake jobs with
 * reduces on its own host, map-output indexes of jobs.maxReduces partition sizes, map
 * completions, lookups whose flow keys name flows.maxMapIds maps, and outcome batches of the
 * most outcomes that fit a message. The hostile-load benchmark sends them as an attacker; the
 * start-up drill ({@link StartupDrill}) sends them to a throwaway instance so that the JIT has
 * compiled their paths before an attacker arrives. Call {@code n} of a kind builds that kind's
 * n-th message; each report batch and outcome batch has a reporter id of its own.
 */
public final class WorstCalls {
  private static final int MAX_REDUCES = 10_000;
  private static final int MAX_MAP_IDS = 1_000;
  private static final int JOBS = 1_000;

  private final String host;
  private final String jobPrefix;
  // Built once and copied with a new id: copies share the repeated fields, so building the
  // messages costs the sender little next to what the receiver does with them.
  private final MapOutputIndexed mapOutput;
  private final FlowKey wideKey;
  private final FlowKey outcomeKey;

  /**
   * @param host the sending node's host name (its credential's)
   * @param jobPrefix job ids are {@code jobPrefix + n + "_" + j}, e.g. "job_666_"
   */
  public WorstCalls(String host, String jobPrefix) {
    this.host = host;
    this.jobPrefix = jobPrefix;
    mapOutput = MapOutputIndexed.newBuilder().setHost(host)
        .addAllPartitionBytes(Collections.nCopies(MAX_REDUCES, 1_000_000L)).build();
    wideKey = key(MAX_MAP_IDS);
    outcomeKey = key(250);
  }

  /**
   * In turn: a batch that starts 1,000 new jobs with a reduce on the sender's host (beyond
   * jobs.maxReducesPerHost they are refused, so its jobs are those of the first batch), as many
   * 10,000-partition map outputs of one of them as fit a 1 MB message, and 1,000 map
   * completions of one of them.
   */
  public ShuffleReport report(long n) {
    long t = System.currentTimeMillis() * 1_000_000L;
    List<ShuffleEvent> events = new ArrayList<>();
    switch ((int) (n % 3)) {
      case 0 -> {
        for (int j = 0; j < JOBS; j++) {
          events.add(ShuffleEvent.newBuilder().setTimeUnixNanos(t).setReduceStarted(
              ReduceStarted.newBuilder().setJobId(jobPrefix + n + "_" + j).setReduceId(0)
                  .setHost(host).setTotalMaps(100_000).setTotalReduces(MAX_REDUCES)).build());
        }
      }
      case 1 -> {
        String job = job(n);
        for (int m = 0; m < 30; m++) {
          events.add(ShuffleEvent.newBuilder().setTimeUnixNanos(t).setMapOutputIndexed(
              mapOutput.toBuilder().setJobId(job).setMapId((int) (n * 30 + m) % 100_000))
              .build());
        }
      }
      default -> {
        String job = job(n);
        for (int m = 0; m < 1000; m++) {
          events.add(ShuffleEvent.newBuilder().setTimeUnixNanos(t).setMapCompleted(
              MapCompleted.newBuilder().setJobId(job).setReduceId(0).setMapId(m).setHost(host)
                  .setRunTimeNanos(1_000_000_000L).setOutputBytes(1_000_000L)
                  .setMapsRunning(-1)).build());
        }
      }
    }
    return ShuffleReport.newBuilder().setReporterId("r" + n).setBatchId(1).addAllEvents(events)
        .build();
  }

  /** A lookup of a new flow of one of its jobs whose key names flows.maxMapIds maps. */
  public PolicyLookup lookup(long n) {
    String job = job(n);
    return PolicyLookup.newBuilder().setJobId(job).setReduceId(0).setBytes(1_000_000L)
        .setFlow(key(wideKey, job, n)).build();
  }

  /** Outcomes of new flows of its jobs: as many with 250 map ids each as fit 1 MB. */
  public FlowOutcomes outcomes(long n) {
    long t = System.currentTimeMillis() * 1_000_000L;
    FlowOutcomes.Builder b = FlowOutcomes.newBuilder().setReporterId("o" + n).setBatchId(1);
    for (int i = 0; i < JOBS; i++) {
      String job = jobPrefix + "0_" + i;
      b.addOutcomes(FlowOutcome.newBuilder().setJobId(job).setReduceId(0).setSourceHost(host)
          .setDestinationHost(host).setBytes(1_000_000L).setStartUnixNanos(t)
          .setFinishUnixNanos(t + 1_000).setQuench(QuenchOutcome.QUENCH_OUTCOME_NONE)
          .setFlow(key(outcomeKey, job, n * JOBS + i)));
    }
    return b.build();
  }

  /** One of the jobs the first report batch started. */
  private String job(long n) {
    return jobPrefix + "0_" + (n % JOBS);
  }

  private FlowKey key(int maps) {
    return FlowKey.newBuilder().setReduceId(0).setSourceHost(host)
        .addAllMapIds(IntStream.range(0, maps).boxed().toList()).setSourceAddress("10.66.0.1")
        .setDestinationAddress("10.66.0.2").setDestinationPort(13562).build();
  }

  private static FlowKey key(FlowKey template, String job, long epoch) {
    return template.toBuilder().setJobId(job).setSourcePort((int) (epoch % 60_000))
        .setEpoch((int) epoch).build();
  }
}
