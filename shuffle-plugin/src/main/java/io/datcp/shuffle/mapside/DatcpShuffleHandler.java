package io.datcp.shuffle.mapside;

import io.datcp.proto.v1.ContainersRunning;
import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.shuffle.agent.AgentClient;
import io.datcp.shuffle.agent.AgentConfig;
import io.datcp.shuffle.agent.EventForwarder;
import io.datcp.shuffle.agent.Events;
import io.netty.channel.Channel;
import io.netty.channel.ChannelPipeline;
import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.JobID;
import org.apache.hadoop.mapred.ShuffleChannelHandlerContext;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.mapred.SpillRecord;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.apache.hadoop.yarn.server.api.ContainerInitializationContext;
import org.apache.hadoop.yarn.server.api.ContainerTerminationContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The NodeManager's {@code mapreduce_shuffle} aux service: Hadoop's ShuffleHandler unchanged on
 * the wire (same protocol, security checks, keep-alive and port metadata), plus a flow tracker in
 * every connection that registers each fetch response with the host's DATCP agent and obeys its
 * suspend / resume / kill orders. It also forwards map-output partition sizes and the number of
 * running containers per job. Everything fails open: without the agent it is a plain
 * ShuffleHandler.
 */
public class DatcpShuffleHandler extends ShuffleHandler implements FlowHost {
  private static final Logger LOG = LoggerFactory.getLogger(DatcpShuffleHandler.class);

  /** Name of the flow tracker in the pipeline; it sits just before Hadoop's "shuffle". */
  public static final String TRACKER_NAME = "datcp";
  /** Hadoop's name of ShuffleChannelHandler in ShuffleChannelInitializer's pipeline. */
  public static final String HADOOP_SHUFFLE_NAME = "shuffle";
  private static final int MAX_REMEMBERED_MAP_OUTPUTS = 100_000;
  private static final String INDEX_FILE = "file.out.index";

  private AgentConfig config;
  private AgentClient agent;
  private EventForwarder forwarder;
  private ExecutorService indexReader;
  private String host;
  private volatile String subscriberId = "";
  private final FlowOrders orders = new FlowOrders();
  private final Map<String, AtomicInteger> containersPerJob = new ConcurrentHashMap<>();
  private final Set<String> indexedMapOutputs = Collections.newSetFromMap(
      new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
          return size() > MAX_REMEMBERED_MAP_OUTPUTS;
        }
      });
  private final AtomicBoolean pipelineWarned = new AtomicBoolean();
  private final FlowMetrics metrics = new FlowMetrics();
  private NodeLocalDirs nodeLocalDirs;

  @Override
  protected void serviceInit(Configuration conf) throws Exception {
    config = AgentConfig.from(conf); // fails start-up on a bad key
    host = Events.localHostName();
    nodeLocalDirs = new NodeLocalDirs(conf);
    super.serviceInit(conf);
    DefaultMetricsSystem.instance().register(FlowMetrics.SOURCE_NAME,
        "DATCP flows of the shuffle service", metrics);
  }

  @Override
  protected void serviceStart() throws Exception {
    agent = new AgentClient(config, "shuffle service");
    forwarder = new EventForwarder(agent, host);
    metrics.countDroppedEventsFrom(forwarder::dropped);
    indexReader = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "datcp-map-output-index");
      t.setDaemon(true);
      return t;
    });
    subscriberId = host + "/" + ManagementFactory.getRuntimeMXBean().getPid();
    agent.subscribeOrders(subscriberId, orders::dispatch, orders::ordersLost);
    super.serviceStart();
    LOG.info("DATCP shuffle service: agent socket {}, register timeout {} ms",
        config.socketPath(), config.registerTimeout().toMillis());
  }

  @Override
  protected void serviceStop() throws Exception {
    try {
      super.serviceStop();
    } finally {
      DefaultMetricsSystem.instance().unregisterSource(FlowMetrics.SOURCE_NAME);
      if (indexReader != null) {
        indexReader.shutdownNow();
      }
      if (forwarder != null) {
        forwarder.close();
      }
      if (agent != null) {
        agent.close();
      }
    }
  }

  /** The NodeManager's handler, or the NodeManager's local directories when it gave none. */
  @Override
  public AuxiliaryLocalPathHandler getAuxiliaryLocalPathHandler() {
    AuxiliaryLocalPathHandler nodeManagers = super.getAuxiliaryLocalPathHandler();
    return nodeManagers != null ? nodeManagers : nodeLocalDirs;
  }

  /** Hadoop's own context, but accepted channels pass through the hook that adds the tracker. */
  @Override
  protected ShuffleChannelHandlerContext createHandlerContext() {
    ShuffleChannelHandlerContext stock = super.createHandlerContext();
    return new ShuffleChannelHandlerContext(stock.conf, stock.userRsrc, stock.secretManager,
        stock.pathCache, stock.indexCache, stock.metrics, new AcceptHook(allChannels, this::attach));
  }

  /** Called for every accepted connection before its first read, on its event loop. */
  void attach(Channel channel) {
    ChannelPipeline pipeline = channel.pipeline();
    if (pipeline.get(HADOOP_SHUFFLE_NAME) == null) {
      if (pipelineWarned.compareAndSet(false, true)) {
        LOG.warn("No '{}' handler in the shuffle pipeline {}: flows are not tracked (Hadoop "
            + "changed?); plain Hadoop shuffle", HADOOP_SHUFFLE_NAME, pipeline.names());
      }
      return;
    }
    if (pipeline.get(TRACKER_NAME) == null) {
      pipeline.addBefore(HADOOP_SHUFFLE_NAME, TRACKER_NAME, new FlowTracker(this));
    }
  }

  @Override
  public AgentConfig config() {
    return config;
  }

  @Override
  public String subscriberId() {
    return subscriberId;
  }

  @Override
  public AgentClient agent() {
    return agent;
  }

  @Override
  public FlowOrders orders() {
    return orders;
  }

  @Override
  public FlowMetrics metrics() {
    return metrics;
  }

  @Override
  public void flowKilled(String reason) {
    LOG.info("DATCP agent killed a shuffle flow ({}); the reducer fetches again", reason);
  }

  /** Reports the partition sizes of each map output the first time it is served. */
  @Override
  public void mapOutputsServed(String jobId, List<String> mapAttempts) {
    for (String attempt : mapAttempts) {
      if (markReported(attempt)) {
        try {
          indexReader.execute(() -> reportIndex(jobId, attempt));
        } catch (RejectedExecutionException e) {
          return; // stopping
        }
      }
    }
  }

  private void reportIndex(String jobId, String attempt) {
    try {
      String user = userRsrc.get(jobId);
      if (user == null) {
        return;
      }
      JobID job = JobID.forName(jobId);
      ApplicationId app =
          ApplicationId.newInstance(Long.parseLong(job.getJtIdentifier()), job.getId());
      Path index = getAuxiliaryLocalPathHandler().getLocalPathForRead(
          outputDir(user, app) + "/" + attempt + "/" + INDEX_FILE);
      forwarder.offer(indexEvent(jobId, attempt, index, user, new JobConf(getConfig())));
    } catch (Exception e) {
      LOG.debug("Cannot read the index of {} for DATCP: {}", attempt, e.toString());
    }
  }

  /**
   * Reports the indexes of the job's map outputs on this host's disks that are not reported yet.
   * Run when a container of the job stops: a map's container stops right after the map wrote its
   * index, well before its first fetch (a reduce asks for finished maps only every second).
   */
  private void reportNewIndexes(String jobId, ApplicationId app) {
    String user = userRsrc.get(jobId);
    if (user == null) {
      return;
    }
    JobConf conf = new JobConf(getConfig());
    try {
      Iterable<Path> dirs =
          getAuxiliaryLocalPathHandler().getAllLocalPathsForRead(outputDir(user, app));
      for (Path dir : dirs) {
        String[] attempts = new File(dir.toUri().getPath()).list();
        for (String attempt : attempts == null ? new String[0] : attempts) {
          Path index = new Path(new Path(dir, attempt), INDEX_FILE);
          // Other maps of the job may still run (no index yet, or one being written).
          if (!attempt.contains("_m_") || reported(attempt)
              || !new File(index.toUri().getPath()).isFile()) {
            continue;
          }
          try {
            ShuffleEvent indexed = indexEvent(jobId, attempt, index, user, conf);
            // Marked only once read in full, so a partly written index is read again later.
            if (markReported(attempt)) {
              forwarder.offer(indexed);
            }
          } catch (Exception e) {
            LOG.debug("Cannot read the index of {} for DATCP yet: {}", attempt, e.toString());
          }
        }
      }
    } catch (Exception e) {
      LOG.debug("Cannot list the map outputs of {} for DATCP: {}", jobId, e.toString());
    }
  }

  /** The NodeManager's layout of map outputs, as ShuffleHandler resolves it. */
  private static String outputDir(String user, ApplicationId app) {
    return "usercache/" + user + "/appcache/" + app + "/output";
  }

  private ShuffleEvent indexEvent(String jobId, String attempt, Path index, String user,
      JobConf conf) throws IOException {
    SpillRecord spill = new SpillRecord(index, conf, user);
    MapOutputIndexed.Builder indexed = MapOutputIndexed.newBuilder().setJobId(jobId)
        .setMapId(TaskAttemptID.forName(attempt).getTaskID().getId()).setHost(host);
    for (int r = 0; r < spill.size(); r++) {
      indexed.addPartitionBytes(spill.getIndex(r).partLength);
    }
    return event().setMapOutputIndexed(indexed).build();
  }

  private boolean reported(String attempt) {
    synchronized (indexedMapOutputs) {
      return indexedMapOutputs.contains(attempt);
    }
  }

  /** True if the map attempt was not reported before. */
  private boolean markReported(String attempt) {
    synchronized (indexedMapOutputs) {
      return indexedMapOutputs.add(attempt);
    }
  }

  @Override
  public void initializeContainer(ContainerInitializationContext context) {
    super.initializeContainer(context);
    containersChanged(context.getContainerId().getApplicationAttemptId().getApplicationId(), +1);
  }

  @Override
  public void stopContainer(ContainerTerminationContext context) {
    super.stopContainer(context);
    ApplicationId app = context.getContainerId().getApplicationAttemptId().getApplicationId();
    containersChanged(app, -1);
    try {
      indexReader.execute(() -> reportNewIndexes(jobId(app), app));
    } catch (RejectedExecutionException e) {
      // stopping
    }
  }

  private static String jobId(ApplicationId app) {
    return new JobID(Long.toString(app.getClusterTimestamp()), app.getId()).toString();
  }

  private void containersChanged(ApplicationId app, int delta) {
    String jobId = jobId(app);
    AtomicInteger count = containersPerJob.computeIfAbsent(jobId, k -> new AtomicInteger());
    int running = Math.max(0, count.addAndGet(delta));
    if (running == 0) {
      containersPerJob.remove(jobId, count);
    }
    if (forwarder != null) {
      forwarder.offer(event().setContainersRunning(ContainersRunning.newBuilder()
          .setJobId(jobId).setHost(host).setRunning(running)).build());
    }
  }

  private static ShuffleEvent.Builder event() {
    return Events.now();
  }
}
