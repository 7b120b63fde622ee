package io.datcp.shuffle;

import static io.datcp.shuffle.ShuffleChecks.assertEveryFetchRegisteredExactly;
import static io.datcp.shuffle.ShuffleChecks.partitionBytes;
import static io.datcp.shuffle.ShuffleChecks.runGeneratorJob;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.shuffle.mapside.DatcpShuffleHandler;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.AuxServices;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The packaged jar as an isolated auxiliary service: the NodeManager loads DatcpShuffleHandler
 * from {@code yarn.nodemanager.aux-services.mapreduce_shuffle.classpath} through its own
 * class loader (Hadoop's classes from the NodeManager, the plugin's and its relocated
 * dependencies from the jar), and a real job's fetches are still served and registered.
 */
class IsolatedAuxServiceIT {
  private static final Path JAR = Path.of("target", "datcp-shuffle-plugin.jar").toAbsolutePath();
  private static final int MAPS = 3;
  private static final int REDUCES = 2;
  private static final int RECORDS = 100;
  private static final int VALUE_BYTES = 1000;

  @TempDir
  Path dir;

  @Test
  void theNodeManagerServesAndRegistersFetchesWithThePluginOnItsOwnClassPath() throws Exception {
    assertThat(JAR).exists();
    Configuration isolated = new Configuration(false);
    isolated.set(String.format(YarnConfiguration.NM_AUX_SERVICES_CLASSPATH,
        ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID), JAR.toString());
    try (FakeAgent agent = new FakeAgent(dir);
        DatcpMiniCluster cluster =
            new DatcpMiniCluster("datcp-isolated-aux", agent.socket, 2000, isolated)) {
      AuxiliaryService service = onlyService(cluster.auxServices());
      assertThat(service.getClass().getSimpleName())
          .isEqualTo("AuxiliaryServiceWithCustomClassLoader");
      Class<?> handler = field(service, "wrapped").getClass();
      assertThat(handler.getName()).isEqualTo(DatcpShuffleHandler.class.getName());
      assertThat(handler.getClassLoader())
          .as("the handler comes from the jar's own loader, not the NodeManager's")
          .isNotSameAs(DatcpShuffleHandler.class.getClassLoader());
      await().atMost(Duration.ofSeconds(30)).until(() -> agent.subscribers() > 0);

      Path out = dir.resolve("out");
      Job job = runGeneratorJob(cluster, MAPS, REDUCES, RECORDS, VALUE_BYTES, out);
      String jobId = job.getJobID().toString();
      await().atMost(Duration.ofSeconds(10)).until(() ->
          agent.events(ShuffleEvent.EventCase.MAP_OUTPUT_INDEXED).size() >= MAPS
              && !agent.flows.isEmpty() && agent.ends.size() == agent.flows.size());
      assertEveryFetchRegisteredExactly(List.copyOf(agent.flows), agent.ends,
          partitionBytes(agent.events, jobId, MAPS, REDUCES), job);
    }
  }

  /** AuxServices keeps its services package-private; the NodeManager has exactly one here. */
  private static AuxiliaryService onlyService(AuxServices aux) throws Exception {
    Method services = AuxServices.class.getDeclaredMethod("getServices");
    services.setAccessible(true);
    Collection<?> all = (Collection<?>) services.invoke(aux);
    assertThat(all).hasSize(1);
    return (AuxiliaryService) all.iterator().next();
  }

  private static Object field(Object o, String name) throws Exception {
    Field f = o.getClass().getDeclaredField(name);
    f.setAccessible(true);
    return f.get(o);
  }
}
