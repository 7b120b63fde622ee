package io.datcp.shuffle.reduceside;

import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.FetchStarted;
import io.datcp.shuffle.agent.EventForwarder;
import io.datcp.shuffle.agent.Events;
import java.io.IOException;
import java.io.InputStream;
import org.apache.hadoop.mapred.RawKeyValueIterator;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.task.reduce.MapHost;
import org.apache.hadoop.mapreduce.task.reduce.MapOutput;
import org.apache.hadoop.mapreduce.task.reduce.MergeManager;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleClientMetrics;

/**
 * Hadoop's merge manager with each reserved map output wrapped, so the copy of every map output
 * (the Fetcher calls shuffle() on it with the host and the exact length) is reported as
 * FetchStarted and FetchFinished. Merging is the delegate's, untouched.
 */
final class ReportingMergeManager<K, V> implements MergeManager<K, V> {
  private final MergeManager<K, V> delegate;
  private final EventForwarder events;
  private final String jobId;
  private final int reduce;

  ReportingMergeManager(MergeManager<K, V> delegate, EventForwarder events, String jobId,
      int reduce) {
    this.delegate = delegate;
    this.events = events;
    this.jobId = jobId;
    this.reduce = reduce;
  }

  @Override
  public void waitForResource() throws InterruptedException {
    delegate.waitForResource();
  }

  @Override
  public MapOutput<K, V> reserve(TaskAttemptID mapId, long requestedSize, int fetcher)
      throws IOException {
    MapOutput<K, V> output = delegate.reserve(mapId, requestedSize, fetcher);
    return output == null ? null : new Reported(output);
  }

  @Override
  public RawKeyValueIterator close() throws Throwable {
    return delegate.close();
  }

  /** MapHost names are "host:port" (the shuffle port); events carry the host. */
  static String hostOnly(MapHost host) {
    String name = host.getHostName();
    int colon = name.lastIndexOf(':');
    return colon > 0 ? name.substring(0, colon) : name;
  }

  /** Delegates everything; times the copy. */
  private final class Reported extends MapOutput<K, V> {
    private final MapOutput<K, V> inner;

    Reported(MapOutput<K, V> inner) {
      super(inner.getMapId(), inner.getSize(), inner.isPrimaryMapOutput());
      this.inner = inner;
    }

    @Override
    public void shuffle(MapHost host, InputStream input, long compressedLength,
        long decompressedLength, ShuffleClientMetrics metrics, Reporter reporter)
        throws IOException {
      int map = getMapId().getTaskID().getId();
      events.offer(Events.now().setFetchStarted(FetchStarted.newBuilder()
          .setJobId(jobId).setReduceId(reduce).setSourceHost(hostOnly(host))
          .addMapIds(map).setBytes(compressedLength)).build());
      long start = System.nanoTime();
      long received = 0; // a failed copy is reported as finished with nothing received
      try {
        inner.shuffle(host, input, compressedLength, decompressedLength, metrics, reporter);
        received = compressedLength;
      } finally {
        events.offer(Events.now().setFetchFinished(FetchFinished.newBuilder()
            .setJobId(jobId).setReduceId(reduce).setSourceHost(hostOnly(host))
            .addMapIds(map).setBytes(received)
            .setDurationNanos(System.nanoTime() - start)).build());
      }
    }

    @Override
    public void commit() throws IOException {
      inner.commit();
    }

    @Override
    public void abort() {
      inner.abort();
    }

    @Override
    public String getDescription() {
      return inner.getDescription();
    }
  }
}
