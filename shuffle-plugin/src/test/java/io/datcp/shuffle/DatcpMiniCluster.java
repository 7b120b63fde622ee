package io.datcp.shuffle;

import io.datcp.shuffle.agent.AgentConfig;
import io.datcp.shuffle.mapside.DatcpShuffleHandler;
import io.datcp.shuffle.reduceside.DatcpShuffle;
import java.nio.file.Path;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.mapreduce.MRConfig;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.AuxServices;

/**
 * Hadoop's MiniMRYarnCluster (ResourceManager, one NodeManager, job history server in this JVM;
 * tasks in child JVMs) with {@link DatcpShuffleHandler} as the NodeManager's mapreduce_shuffle.
 * MiniMRYarnCluster writes the stock ShuffleHandler into the configuration it is given; the
 * configuration here refuses that one write so the NodeManager loads ours.
 */
final class DatcpMiniCluster implements AutoCloseable {
  static final String SHUFFLE_CLASS_KEY = String.format(YarnConfiguration.NM_AUX_SERVICE_FMT,
      ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID);

  private final MiniMRYarnCluster cluster;

  DatcpMiniCluster(String name, Path agentSocket, long registerTimeoutMs) {
    this(name, agentSocket, registerTimeoutMs, new Configuration(false));
  }

  /** With extra settings for the cluster, and so for the jobs' configuration too. */
  DatcpMiniCluster(String name, Path agentSocket, long registerTimeoutMs, Configuration extra) {
    JobConf conf = new JobConf() {
      @Override
      public void set(String key, String value, String source) {
        if (SHUFFLE_CLASS_KEY.equals(key) && !DatcpShuffleHandler.class.getName().equals(value)) {
          return;
        }
        super.set(key, value, source);
      }
    };
    conf.set(SHUFFLE_CLASS_KEY, DatcpShuffleHandler.class.getName());
    conf.set(AgentConfig.AGENT_SOCKET, agentSocket.toString());
    conf.setLong(AgentConfig.REGISTER_TIMEOUT_MS, registerTimeoutMs);
    conf.setInt(YarnConfiguration.NM_PMEM_MB, 6144);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 256);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    for (Map.Entry<String, String> e : extra) {
      conf.set(e.getKey(), e.getValue());
    }
    cluster = new MiniMRYarnCluster(name, 1);
    cluster.init(conf);
    cluster.start();
  }

  /** Configuration for a job on this cluster (small containers, Java 17 options, DatcpShuffle). */
  Configuration jobConf() {
    Configuration conf = new Configuration(cluster.getConfig());
    conf.setBoolean(MRJobConfig.MAPREDUCE_JVM_ADD_OPENS_JAVA_OPT, true);
    conf.setInt(MRJobConfig.MR_AM_VMEM_MB, 512);
    conf.set(MRJobConfig.MR_AM_COMMAND_OPTS, "-Xmx256m");
    conf.setInt(MRJobConfig.MAP_MEMORY_MB, 384);
    conf.set(MRJobConfig.MAP_JAVA_OPTS, "-Xmx200m");
    conf.setInt(MRJobConfig.REDUCE_MEMORY_MB, 384);
    conf.set(MRJobConfig.REDUCE_JAVA_OPTS, "-Xmx200m");
    conf.setInt(MRJobConfig.IO_SORT_MB, 20);
    conf.set(MRConfig.SHUFFLE_CONSUMER_PLUGIN, DatcpShuffle.class.getName());
    return conf;
  }

  /** The NodeManager's auxiliary services, as it loaded them. */
  AuxServices auxServices() {
    return cluster.getNodeManager(0).getNMContext().getAuxServices();
  }

  @Override
  public void close() {
    cluster.stop();
  }
}
