package io.datcp.shuffle.reduceside;

import io.datcp.proto.v1.JobPriority;
import io.datcp.proto.v1.ReduceStarted;
import io.datcp.proto.v1.ShuffleFinished;
import io.datcp.shuffle.agent.AgentConfig;
import io.datcp.shuffle.agent.EventForwarder;
import io.datcp.shuffle.agent.Events;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RawKeyValueIterator;
import org.apache.hadoop.mapred.ShuffleConsumerPlugin;
import org.apache.hadoop.mapred.TaskUmbilicalProtocol;
import org.apache.hadoop.mapreduce.task.reduce.MergeManager;
import org.apache.hadoop.mapreduce.task.reduce.Shuffle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reduce task's shuffle (mapreduce.job.reduce.shuffle.consumer.plugin.class): Hadoop's own
 * Shuffle, watched. It reports ReduceStarted, MapCompleted (from the map-completion events the
 * umbilical returns), FetchStarted / FetchFinished (around each map output's copy) and
 * ShuffleFinished to the scheduler through the host's agent, asynchronously; a full queue drops
 * events, and without an agent the shuffle is Hadoop's, unchanged.
 */
public class DatcpShuffle<K, V> extends Shuffle<K, V> {
  private static final Logger LOG = LoggerFactory.getLogger(DatcpShuffle.class);

  /** Asks YARN for one reduce per job (reduce 0), so the AM's load does not grow with reduces. */
  private static final int ASKING_REDUCE = 0;

  private EventForwarder events;
  private String jobId;
  private int reduce;
  private JobFacts facts;
  /** Reduce 0's map-completion reports, off the shuffle's event-fetcher thread; else null. */
  private ExecutorService asker;

  @Override
  public void init(ShuffleConsumerPlugin.Context context) {
    JobConf conf = context.getJobConf();
    AgentConfig config = AgentConfig.from(conf); // fails the task on a bad key, naming it
    facts = JobFacts.from(conf, context.getReduceId().getJobID().toString());
    jobId = context.getReduceId().getJobID().toString();
    reduce = context.getReduceId().getTaskID().getId();
    String host = Events.localHostName();
    // the client starts on the forwarder's thread: the shuffle does not wait for it
    events = EventForwarder.connecting(config, "reduce " + context.getReduceId(), host);
    events.offer(Events.now().setReduceStarted(ReduceStarted.newBuilder()
        .setJobId(jobId).setReduceId(reduce).setHost(host)
        .setTotalMaps(conf.getNumMapTasks()).setTotalReduces(conf.getNumReduceTasks())
        .setQueue(conf.getQueueName()).setUser(conf.getUser() == null ? "" : conf.getUser())
        .setJobName(conf.getJobName()).setPriority(priority(conf))
        .setJobSubmitTimeUnixNanos(facts == null ? 0
            : TimeUnit.MILLISECONDS.toNanos(facts.submitTimeMillis()))).build());
    super.init(withUmbilical(context, watched(context.getUmbilical())));
  }

  private TaskUmbilicalProtocol watched(TaskUmbilicalProtocol umbilical) {
    CompletionEventsWatcher watcher;
    if (facts != null && reduce == ASKING_REDUCE) {
      asker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "datcp-job-facts");
        t.setDaemon(true);
        return t;
      });
      watcher = new CompletionEventsWatcher(umbilical, events, jobId, reduce, facts, asker);
    } else {
      watcher = new CompletionEventsWatcher(umbilical, events, jobId, reduce);
    }
    return (TaskUmbilicalProtocol) Proxy.newProxyInstance(
        TaskUmbilicalProtocol.class.getClassLoader(), new Class<?>[] {TaskUmbilicalProtocol.class},
        watcher);
  }

  @Override
  protected MergeManager<K, V> createMergeManager(ShuffleConsumerPlugin.Context context) {
    return new ReportingMergeManager<>(super.createMergeManager(context), events, jobId, reduce);
  }

  @Override
  public RawKeyValueIterator run() throws IOException, InterruptedException {
    RawKeyValueIterator merged = super.run();
    events.offer(Events.now().setShuffleFinished(
        ShuffleFinished.newBuilder().setJobId(jobId).setReduceId(reduce)).build());
    return merged;
  }

  @Override
  public void close() {
    try {
      super.close();
    } finally {
      stopAsking();
      events.close();
      if (events.dropped() > 0) {
        LOG.info("DATCP: {} shuffle events dropped (agent slow or absent), {} delivered",
            events.dropped(), events.delivered());
      }
    }
  }

  /** Lets the reports in flight finish, for at most one job-facts timeout; drops the rest. */
  private void stopAsking() {
    if (asker == null) {
      return;
    }
    asker.shutdown();
    try {
      if (!asker.awaitTermination(facts.timeoutMillis(), TimeUnit.MILLISECONDS)) {
        asker.shutdownNow();
      }
    } catch (InterruptedException e) {
      asker.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  static JobPriority priority(JobConf conf) {
    return switch (conf.getJobPriority()) {
      case VERY_HIGH -> JobPriority.JOB_PRIORITY_VERY_HIGH;
      case HIGH -> JobPriority.JOB_PRIORITY_HIGH;
      case NORMAL, DEFAULT -> JobPriority.JOB_PRIORITY_NORMAL;
      case LOW -> JobPriority.JOB_PRIORITY_LOW;
      case VERY_LOW -> JobPriority.JOB_PRIORITY_VERY_LOW;
      default -> JobPriority.JOB_PRIORITY_UNSPECIFIED;
    };
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static ShuffleConsumerPlugin.Context withUmbilical(ShuffleConsumerPlugin.Context c,
      TaskUmbilicalProtocol umbilical) {
    return new ShuffleConsumerPlugin.Context(c.getReduceId(), c.getJobConf(), c.getLocalFS(),
        umbilical, c.getLocalDirAllocator(), c.getReporter(), c.getCodec(), c.getCombinerClass(),
        c.getCombineCollector(), c.getSpilledRecordsCounter(), c.getReduceCombineInputCounter(),
        c.getShuffledMapsCounter(), c.getReduceShuffleBytes(), c.getFailedShuffleCounter(),
        c.getMergedMapOutputsCounter(), c.getStatus(), c.getCopyPhase(), c.getMergePhase(),
        c.getReduceTask(), c.getMapOutputFile(), c.getLocalMapFiles());
  }
}
