package io.datcp.shuffle.mapside;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.MapOutputIndexed;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.shuffle.FakeAgent;
import io.datcp.shuffle.agent.AgentConfig;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.IndexRecord;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.mapred.SpillRecord;
import org.apache.hadoop.mapreduce.security.token.JobTokenIdentifier;
import org.apache.hadoop.mapreduce.security.token.JobTokenSecretManager;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;
import org.apache.hadoop.yarn.server.api.ContainerInitializationContext;
import org.apache.hadoop.yarn.server.api.ContainerTerminationContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A container stop makes the service report the map output indexes of the container's job that
 * lie on the NodeManager's local disks, once per map attempt, before any fetch: the real
 * DatcpShuffleHandler, two local dirs laid out as the NodeManager does, index files written by
 * Hadoop's SpillRecord, and a fake agent receiving the forwarded events.
 */
class MapOutputIndexAtStopTest {
  private static final ApplicationId APP = ApplicationId.newInstance(1700000000000L, 7);
  private static final String JOB = "job_1700000000000_0007";
  private static final ApplicationId OTHER_APP = ApplicationId.newInstance(1700000000000L, 8);
  private static final String OTHER_JOB = "job_1700000000000_0008";
  private static final String USER = System.getProperty("user.name");

  private Path dir;
  private List<Path> localDirs;
  private FakeAgent agent;
  private DatcpShuffleHandler handler;
  private int containers;

  @BeforeEach
  void start() throws Exception {
    DefaultMetricsSystem.setMiniClusterMode(true);
    dir = Files.createTempDirectory("datcp-index-at-stop");
    localDirs = List.of(dir.resolve("nm-local-0"), dir.resolve("nm-local-1"));
    agent = new FakeAgent(dir);
    handler = new DatcpShuffleHandler();
    handler.setAuxiliaryLocalPathHandler(new LocalDirs());
    Configuration conf = new Configuration();
    conf.setInt(ShuffleHandler.SHUFFLE_PORT_CONFIG_KEY, 0);
    conf.set(AgentConfig.AGENT_SOCKET, agent.socket.toString());
    handler.init(conf);
    handler.start();
    initializeApplication(APP, JOB);
    initializeApplication(OTHER_APP, OTHER_JOB);
  }

  private void initializeApplication(ApplicationId app, String job) throws Exception {
    Token<JobTokenIdentifier> token =
        new Token<>(new JobTokenIdentifier(new Text(job)), new JobTokenSecretManager());
    handler.initializeApplication(new ApplicationInitializationContext(USER, app,
        ShuffleHandler.serializeServiceData(token)));
  }

  @AfterEach
  void stop() throws Exception {
    if (handler != null) {
      handler.stop();
    }
    if (agent != null) {
      agent.close();
    }
  }

  @Test
  void aContainerStopReportsEachNewMapIndexOnceWithItsPartitionSizes() throws Exception {
    writeIndex(0, "attempt_1700000000000_0007_m_000000_0", 101, 102);
    writeIndex(1, "attempt_1700000000000_0007_m_000001_0", 111, 112);
    // a reduce's merge files: not a map output
    writeIndex(0, "attempt_1700000000000_0007_r_000000_0", 901, 902);
    // a map still running: its output dir exists, its index not yet
    Path running = output(APP, 1, "attempt_1700000000000_0007_m_000002_0");
    Files.createDirectories(running);
    // a map writing its index right now: half of it is there
    Path writing = writeIndex(0, "attempt_1700000000000_0007_m_000003_0", 131, 132);
    byte[] whole = Files.readAllBytes(writing);
    Files.write(writing, Arrays.copyOf(whole, whole.length / 2));

    stopAContainer(APP);
    await().atMost(Duration.ofSeconds(10)).until(() -> indexed().size() >= 2);
    assertThat(partitionBytes(JOB))
        .isEqualTo(Map.of(0, List.of(101L, 102L), 1, List.of(111L, 112L)));

    // The first fetch of a map reported at stop does not report it again; the next stop
    // reports the maps that finished since, and the one whose index is now complete.
    handler.mapOutputsServed(JOB, List.of("attempt_1700000000000_0007_m_000000_0"));
    writeIndex(1, "attempt_1700000000000_0007_m_000002_0", 121, 122);
    Files.write(writing, whole);
    stopAContainer(APP);
    await().atMost(Duration.ofSeconds(10)).until(() -> indexed().size() >= 4);

    // A map first seen when served is still reported then.
    writeIndex(1, "attempt_1700000000000_0007_m_000004_0", 141, 142);
    handler.mapOutputsServed(JOB, List.of("attempt_1700000000000_0007_m_000004_0"));
    await().atMost(Duration.ofSeconds(10)).until(() -> indexed().size() >= 5);

    // Nothing is left to report at the next stop. The other job's index is read after that
    // stop's scan (one reader thread), so once it arrives any duplicate would have too.
    stopAContainer(APP);
    writeIndex(OTHER_APP, 0, "attempt_1700000000000_0008_m_000000_0", 201, 202);
    handler.mapOutputsServed(OTHER_JOB, List.of("attempt_1700000000000_0008_m_000000_0"));
    await().atMost(Duration.ofSeconds(10)).until(() -> indexed().size() >= 6);

    assertThat(indexed()).filteredOn(m -> m.getJobId().equals(JOB))
        .extracting(MapOutputIndexed::getMapId).as("each map once")
        .containsExactlyInAnyOrder(0, 1, 2, 3, 4);
    assertThat(partitionBytes(JOB)).isEqualTo(Map.of(
        0, List.of(101L, 102L), 1, List.of(111L, 112L), 2, List.of(121L, 122L),
        3, List.of(131L, 132L), 4, List.of(141L, 142L)));
    assertThat(partitionBytes(OTHER_JOB)).isEqualTo(Map.of(0, List.of(201L, 202L)));
    assertThat(indexed()).allSatisfy(m -> assertThat(m.getHost()).isNotEmpty());
  }

  @Test
  void aStopReportsNothingWithoutOutputsOrForAJobUnknownHere() throws Exception {
    stopAContainer(APP);
    // an application this NodeManager was never told of: no user, so no path to its outputs
    ApplicationId unknown = ApplicationId.newInstance(1700000000000L, 9);
    writeIndex(unknown, 0, "attempt_1700000000000_0009_m_000000_0", 101, 102);
    stopAContainer(unknown);

    // The index served next is read after both stops' scans (one reader thread).
    writeIndex(0, "attempt_1700000000000_0007_m_000000_0", 101, 102);
    handler.mapOutputsServed(JOB, List.of("attempt_1700000000000_0007_m_000000_0"));
    await().atMost(Duration.ofSeconds(10)).until(() -> !indexed().isEmpty());
    assertThat(indexed()).hasSize(1);
    assertThat(indexed().get(0).getJobId()).isEqualTo(JOB);
    assertThat(agent.events(ShuffleEvent.EventCase.CONTAINERS_RUNNING)).as("stops counted")
        .hasSize(4);
  }

  private void stopAContainer(ApplicationId app) {
    ContainerId id = ContainerId.newContainerId(ApplicationAttemptId.newInstance(app, 1),
        ++containers);
    Resource resource = Resource.newInstance(384, 1);
    handler.initializeContainer(new ContainerInitializationContext(USER, id, resource));
    handler.stopContainer(new ContainerTerminationContext(USER, id, resource));
  }

  private List<MapOutputIndexed> indexed() {
    List<MapOutputIndexed> out = new ArrayList<>();
    agent.events(ShuffleEvent.EventCase.MAP_OUTPUT_INDEXED)
        .forEach(e -> out.add(e.getMapOutputIndexed()));
    return out;
  }

  /** partition_bytes per map of the job; fails on a map reported twice. */
  private Map<Integer, List<Long>> partitionBytes(String job) {
    return indexed().stream().filter(m -> m.getJobId().equals(job)).collect(Collectors.toMap(
        MapOutputIndexed::getMapId, MapOutputIndexed::getPartitionBytesList));
  }

  private Path output(ApplicationId app, int localDir, String attempt) {
    return localDirs.get(localDir).resolve("usercache/" + USER + "/appcache/" + app + "/output/"
        + attempt);
  }

  private Path writeIndex(int localDir, String attempt, long... partLengths) throws Exception {
    return writeIndex(APP, localDir, attempt, partLengths);
  }

  /** A map output index as a map task writes it, with these partLengths (one per reduce). */
  private Path writeIndex(ApplicationId app, int localDir, String attempt, long... partLengths)
      throws Exception {
    SpillRecord spill = new SpillRecord(partLengths.length);
    long offset = 0;
    for (int r = 0; r < partLengths.length; r++) {
      spill.putIndex(new IndexRecord(offset, partLengths[r] + 10, partLengths[r]), r);
      offset += partLengths[r];
    }
    Path index = output(app, localDir, attempt).resolve("file.out.index");
    Files.createDirectories(index.getParent());
    spill.writeToFile(new org.apache.hadoop.fs.Path(index.toString()), new JobConf());
    return index;
  }

  /** The NodeManager's local dirs, as its path handler resolves a relative path in them. */
  private final class LocalDirs implements AuxiliaryLocalPathHandler {
    @Override
    public org.apache.hadoop.fs.Path getLocalPathForRead(String path) throws IOException {
      for (org.apache.hadoop.fs.Path p : getAllLocalPathsForRead(path)) {
        return p;
      }
      throw new FileNotFoundException(path);
    }

    @Override
    public org.apache.hadoop.fs.Path getLocalPathForWrite(String path) {
      throw new UnsupportedOperationException();
    }

    @Override
    public org.apache.hadoop.fs.Path getLocalPathForWrite(String path, long size) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Iterable<org.apache.hadoop.fs.Path> getAllLocalPathsForRead(String path) {
      List<org.apache.hadoop.fs.Path> found = new ArrayList<>();
      for (Path local : localDirs) {
        if (Files.exists(local.resolve(path))) {
          found.add(new org.apache.hadoop.fs.Path(local.resolve(path).toString()));
        }
      }
      return found;
    }
  }
}
