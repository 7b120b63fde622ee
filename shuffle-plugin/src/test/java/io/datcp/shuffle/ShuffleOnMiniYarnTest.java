package io.datcp.shuffle;

import static io.datcp.shuffle.ShuffleChecks.assertEveryFetchRegisteredExactly;
import static io.datcp.shuffle.ShuffleChecks.partitionBytes;
import static io.datcp.shuffle.ShuffleChecks.readOutput;
import static io.datcp.shuffle.ShuffleChecks.shuffleBytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.FlowAction;
import io.datcp.proto.v1.FlowEnd;
import io.datcp.proto.v1.FlowEndReason;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapLost;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.shuffle.agent.EventsClient;
import io.datcp.shuffle.mapside.FlowMetrics;
import io.datcp.shuffle.reduceside.DatcpShuffle;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.TaskReport;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.TypeConverter;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Real MapReduce jobs on a MiniMRYarnCluster whose NodeManager runs DatcpShuffleHandler, with a
 * fake agent on a Unix socket. One cluster for the class (it costs most of the time).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ShuffleOnMiniYarnTest {
  private static final int MAPS = 3;
  private static final int REDUCES = 2;
  // 100 records of 1000 bytes per partition: partLength and rawLength both lie in
  // [2^16, 2^24), so each takes the same 4 bytes as a VLong in the ShuffleHeader.
  private static final int RECORDS = 100;
  private static final int VALUE_BYTES = 1000;
  // Far more than a report at first serve can lead its fetch's registration by (milliseconds),
  // far less than a reduce takes to launch after the last map (seconds).
  private static final Duration INDEXED_AHEAD = Duration.ofMillis(500);
  /** File name prefix of the baseline job's reduce JVMs' class-loading logs. */
  private static final String REDUCE_CLASSES = "reduce-classes-";

  private Path dir;
  private FakeAgent agent;
  private DatcpMiniCluster cluster;
  private int jobs;

  @BeforeAll
  void start() throws Exception {
    dir = Files.createTempDirectory("datcp-plugin-it");
    agent = new FakeAgent(dir);
    // Generous registration wait so orders given before the reply take effect before byte one.
    cluster = new DatcpMiniCluster("datcp-shuffle-it", agent.socket, 2000);
    await().atMost(Duration.ofSeconds(30)).until(() -> agent.subscribers() > 0);
  }

  @AfterAll
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
    if (agent != null) {
      agent.close();
    }
  }

  @BeforeEach
  void clear() {
    if (agent != null) {
      agent.reset();
    }
  }

  private record Run(Job job, List<String> output) { }

  /** What the fake agent saw of one undisturbed job. */
  private record Baseline(Run run, List<FakeAgent.Flow> flows, Map<Long, FlowEnd> ends,
      List<ShuffleEvent> events, List<ShuffleEvent> socketEvents,
      Map<ShuffleEvent, Long> eventNanos, long registeredMetric) {
    List<ShuffleEvent> events(ShuffleEvent.EventCase kind) {
      return events.stream().filter(e -> e.getEventCase() == kind).toList();
    }
  }

  private Baseline baseline;

  /** The NodeManager's DatcpShuffleHandler counters (metrics2 source in this JVM). */
  private static FlowMetrics flowMetrics() {
    return (FlowMetrics) DefaultMetricsSystem.instance().getSource("DatcpShuffleFlows");
  }

  /** One undisturbed job, shared by the tests that only look at what was reported. */
  private Baseline baseline() throws Exception {
    if (baseline == null) {
      agent.reset();
      // Reduces launch only once every map has finished, so each map's container stops seconds
      // before its first fetch.
      // Each reduce JVM logs the classes it loads (theReduceSideReportsItsShuffle reads them).
      Run run = runGenerator(c -> {
        c.setFloat(MRJobConfig.COMPLETED_MAPS_FOR_REDUCE_SLOWSTART, 1f);
        c.set(MRJobConfig.REDUCE_JAVA_OPTS, c.get(MRJobConfig.REDUCE_JAVA_OPTS)
            + " -Xlog:class+load=info:file=" + dir.resolve(REDUCE_CLASSES + "%p.log"));
      });
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        assertThat(agent.events(ShuffleEvent.EventCase.SHUFFLE_FINISHED))
            .as("ShuffleFinished reports").hasSize(REDUCES);
        assertThat(agent.events(ShuffleEvent.EventCase.MAP_OUTPUT_INDEXED))
            .as("MapOutputIndexed reports").hasSizeGreaterThanOrEqualTo(MAPS);
        assertThat(agent.ends.keySet()).as("flows ended (of those registered)")
            .isEqualTo(FakeAgent.ids(agent.flows));
      });
      long before = flowMetrics().registered();
      baseline = new Baseline(run, List.copyOf(agent.flows), Map.copyOf(agent.ends),
          List.copyOf(agent.events), List.copyOf(agent.socketEvents),
          Map.copyOf(agent.eventNanos), before);
    }
    return baseline;
  }

  private Run runGenerator() throws Exception {
    return runGenerator(c -> { });
  }

  private Run runGenerator(Consumer<Configuration> settings) throws Exception {
    Configuration conf = cluster.jobConf();
    settings.accept(conf);
    org.apache.hadoop.fs.Path out =
        new org.apache.hadoop.fs.Path(dir.resolve("out-" + (jobs++)).toUri());
    Job job = GeneratorJob.create(conf, MAPS, REDUCES, RECORDS, VALUE_BYTES, out);
    assertThat(job.waitForCompletion(false)).as("job succeeded").isTrue();
    return new Run(job, readOutput(Path.of(out.toUri())));
  }

  private static List<String> expected() {
    return GeneratorJob.expectedOutput(MAPS, REDUCES, RECORDS, VALUE_BYTES);
  }

  @Test
  @Order(1)
  void registersEveryFetchWithItsExactBytesAndTheOutputIsUnchanged() throws Exception {
    Baseline b = baseline();
    Run run = b.run();
    String jobId = run.job().getJobID().toString();
    assertThat(run.output()).isEqualTo(expected());

    Map<Integer, List<Long>> parts = partitionBytes(b.events(), jobId, MAPS, REDUCES);
    long indexed = parts.values().stream().flatMap(List::stream).mapToLong(Long::longValue).sum();
    assertThat(indexed).as("index partLengths = REDUCE_SHUFFLE_BYTES")
        .isEqualTo(shuffleBytes(run.job()));
    assertEveryFetchRegisteredExactly(b.flows(), b.ends(), parts, run.job());
    assertThat(b.registeredMetric()).as("FlowsRegistered metric, first job")
        .isEqualTo(b.flows().size());
    assertThat(b.events(ShuffleEvent.EventCase.CONTAINERS_RUNNING))
        .anySatisfy(e -> assertThat(e.getContainersRunning().getJobId()).isEqualTo(jobId));
  }

  /**
   * Reported when the map's container stopped, not when its output was first served: a report
   * at the first serve can lead that fetch's registration by a few milliseconds at most (the
   * two race from the same moment), a report at container stop leads it by the reduce's launch.
   */
  @Test
  @Order(2)
  void eachMapIsIndexedWhenItsContainerStopsWellBeforeItsFirstFetch() throws Exception {
    Baseline b = baseline();
    List<ShuffleEvent> indexed = b.events(ShuffleEvent.EventCase.MAP_OUTPUT_INDEXED);
    assertThat(indexed).as("once per map").hasSize(MAPS);
    for (ShuffleEvent e : indexed) {
      int map = e.getMapOutputIndexed().getMapId();
      long firstFetch = b.flows().stream()
          .filter(f -> f.registration().getMapIdsList().contains(map))
          .mapToLong(FakeAgent.Flow::registeredNanos).min().orElseThrow();
      Duration ahead = Duration.ofNanos(firstFetch - b.eventNanos().get(e));
      assertThat(ahead).as("map %d indexed ahead of its first fetch", map)
          .isGreaterThan(INDEXED_AHEAD);
    }
  }

  @Test
  @Order(3)
  void theReduceSideReportsItsShuffle() throws Exception {
    Baseline b = baseline();
    Run run = b.run();
    String jobId = run.job().getJobID().toString();
    assertThat(b.events(ShuffleEvent.EventCase.SHUFFLE_FINISHED)).hasSize(REDUCES);

    List<ShuffleEvent> started = b.events(ShuffleEvent.EventCase.REDUCE_STARTED);
    assertThat(started).extracting(e -> e.getReduceStarted().getReduceId())
        .containsExactlyInAnyOrder(0, 1);
    assertThat(started).allSatisfy(e -> {
      assertThat(e.getReduceStarted().getJobId()).isEqualTo(jobId);
      assertThat(e.getReduceStarted().getTotalMaps()).isEqualTo(MAPS);
      assertThat(e.getReduceStarted().getTotalReduces()).isEqualTo(REDUCES);
      assertThat(e.getReduceStarted().getJobName()).isEqualTo("datcp-generator");
      assertThat(e.getReduceStarted().getHost()).isNotEmpty();
    });
    Set<String> completed = new HashSet<>();
    for (ShuffleEvent e : b.events(ShuffleEvent.EventCase.MAP_COMPLETED)) {
      assertThat(e.getMapCompleted().getJobId()).isEqualTo(jobId);
      assertThat(e.getMapCompleted().getHost()).isNotEmpty();
      completed.add(e.getMapCompleted().getReduceId() + "/" + e.getMapCompleted().getMapId());
    }
    assertThat(completed).hasSize(MAPS * REDUCES);

    List<ShuffleEvent> finished = b.events(ShuffleEvent.EventCase.FETCH_FINISHED);
    assertThat(finished).hasSize(MAPS * REDUCES);
    assertThat(b.events(ShuffleEvent.EventCase.FETCH_STARTED)).hasSize(MAPS * REDUCES);
    long fetchedBytes = finished.stream().mapToLong(e -> e.getFetchFinished().getBytes()).sum();
    assertThat(fetchedBytes).as("FetchFinished bytes = REDUCE_SHUFFLE_BYTES")
        .isEqualTo(shuffleBytes(run.job()));
    long registered = b.flows().stream().mapToLong(f -> f.registration().getBytes()).sum();
    assertThat(registered).as("map side registered the same bytes plus the headers")
        .isGreaterThan(fetchedBytes);

    // the reduces reported over the events socket, the NodeManager over Forward
    List<ShuffleEvent> reduceSide = b.events().stream().filter(e -> switch (e.getEventCase()) {
      case REDUCE_STARTED, MAP_COMPLETED, MAP_LOST, FETCH_STARTED, FETCH_FINISHED,
          SHUFFLE_FINISHED -> true;
      default -> false;
    }).toList();
    assertThat(b.socketEvents()).containsExactlyInAnyOrderElementsOf(reduceSide);
    // and no reduce JVM loaded a class of gRPC or Netty
    List<Path> logs;
    try (Stream<Path> files = Files.list(dir)) {
      logs = files.filter(f -> f.getFileName().toString().startsWith(REDUCE_CLASSES)).toList();
    }
    assertThat(logs).as("one class-loading log per reduce JVM")
        .hasSizeGreaterThanOrEqualTo(REDUCES);
    for (Path log : logs) {
      List<String> classes = loadedClasses(log);
      assertThat(classes).as(log.toString())
          .contains(DatcpShuffle.class.getName(), EventsClient.class.getName())
          .noneMatch(c -> c.startsWith("io.grpc.") || c.startsWith("io.netty."));
    }
  }

  /**
   * What YARN knows of the job but its map-completion events do not carry (Hadoop's
   * TypeConverter drops the attempt's run time on the way to the reduce): every reduce reports
   * the job's submit time from the ResourceManager, and reduce 0 each map's run time, finish
   * and the job's running maps from the MapReduce AM.
   */
  @Test
  @Order(3)
  void reduceZeroReportsEachMapsRunTimeAndFinishFromYarn() throws Exception {
    Baseline b = baseline();
    Job job = b.run().job();
    long submitMillis;
    try (YarnClient yarn = YarnClient.createYarnClient()) {
      yarn.init(cluster.jobConf());
      yarn.start();
      submitMillis = yarn.getApplicationReport(
          TypeConverter.toYarn(job.getJobID()).getAppId()).getStartTime();
    }
    assertThat(b.events(ShuffleEvent.EventCase.REDUCE_STARTED)).hasSize(REDUCES)
        .allSatisfy(e -> assertThat(e.getReduceStarted().getJobSubmitTimeUnixNanos())
            .as("the ResourceManager's submit time").isEqualTo(submitMillis * 1_000_000L));

    Map<Integer, TaskReport> reports = new HashMap<>();
    for (TaskReport r : job.getTaskReports(TaskType.MAP)) {
      reports.put(r.getTaskID().getId(), r);
    }
    List<ShuffleEvent> fromZero = b.events(ShuffleEvent.EventCase.MAP_COMPLETED).stream()
        .filter(e -> e.getMapCompleted().getReduceId() == 0).toList();
    assertThat(fromZero).hasSize(MAPS);
    for (ShuffleEvent e : fromZero) {
      MapCompleted m = e.getMapCompleted();
      TaskReport task = reports.get(m.getMapId());
      System.out.printf("map %d: run time %d ms (task %d..%d), maps running %d since %d%n",
          m.getMapId(), m.getRunTimeNanos() / 1_000_000, task.getStartTime(),
          task.getFinishTime(), m.getMapsRunning(), m.getRunningMapsSinceUnixNanos() / 1_000_000);
      assertThat(e.getTimeUnixNanos()).as("map %d finished", m.getMapId())
          .isEqualTo(task.getFinishTime() * 1_000_000L);
      assertThat(m.getRunTimeNanos()).as("map %d run time", m.getMapId()).isPositive()
          .isLessThanOrEqualTo((task.getFinishTime() - task.getStartTime()) * 1_000_000L);
      assertThat(m.getMapsRunning()).as("maps running").isBetween(0, MAPS);
    }
    assertRunningMapsSince(fromZero, reports.values());
    // the other reduces leave the AM alone: its load does not grow with the reduces
    assertThat(b.events(ShuffleEvent.EventCase.MAP_COMPLETED)).filteredOn(
        e -> e.getMapCompleted().getReduceId() != 0).hasSize(MAPS * (REDUCES - 1))
        .allSatisfy(e -> assertThat(e.getMapCompleted().getRunTimeNanos()).isZero());
  }

  /**
   * Each of reduce 0's reports that counts running maps says when the first of them started and
   * when each did: starts of the job's maps (the AM's task startTime), one per running map, the
   * earliest the first's; one counting none says 0 and no start.
   */
  private static void assertRunningMapsSince(List<ShuffleEvent> fromZero,
      Collection<TaskReport> maps) {
    long firstStart = maps.stream().mapToLong(TaskReport::getStartTime).min().orElseThrow();
    long lastStart = maps.stream().mapToLong(TaskReport::getStartTime).max().orElseThrow();
    for (ShuffleEvent e : fromZero) {
      MapCompleted m = e.getMapCompleted();
      if (m.getMapsRunning() > 0) {
        assertThat(m.getRunningMapsSinceUnixNanos()).as("running maps since, map %d", m.getMapId())
            .isBetween(firstStart * 1_000_000L, lastStart * 1_000_000L);
        assertThat(m.getRunningMapStartsUnixNanosList()).as("each start, map %d", m.getMapId())
            .hasSize(m.getMapsRunning()).allSatisfy(start -> assertThat(start)
                .isBetween(firstStart * 1_000_000L, lastStart * 1_000_000L))
            .contains(m.getRunningMapsSinceUnixNanos());
        assertThat(Collections.min(m.getRunningMapStartsUnixNanosList()))
            .isEqualTo(m.getRunningMapsSinceUnixNanos());
      } else {
        assertThat(m.getRunningMapsSinceUnixNanos()).as("no map runs").isZero();
        assertThat(m.getRunningMapStartsUnixNanosList()).as("no map runs").isEmpty();
      }
    }
  }

  /** Class names in a -Xlog:class+load log ("[0.012s][info][class,load] NAME source: ..."). */
  private static List<String> loadedClasses(Path log) throws IOException {
    Pattern line = Pattern.compile("\\[class,load\\s*\\] (\\S+) ");
    List<String> names = new ArrayList<>();
    for (String l : Files.readAllLines(log)) {
      Matcher m = line.matcher(l);
      if (m.find()) {
        names.add(m.group(1));
      }
    }
    return names;
  }

  @Test
  @Order(4)
  void suspendHoldsAFlowUntilResumeWithoutCorruptingIt() throws Exception {
    long holdMs = 3000;
    AtomicBoolean first = new AtomicBoolean(true);
    agent.ordersBeforeReply(
        r -> first.getAndSet(false) ? FlowAction.FLOW_ACTION_SUSPEND : null);
    FakeAgent a = agent;
    Thread resumer = new Thread(() -> {
      await().atMost(Duration.ofMinutes(2)).until(() -> !a.flows.isEmpty());
      try {
        Thread.sleep(holdMs);
      } catch (InterruptedException e) {
        return;
      }
      a.order(a.flows.get(0).flowId(), FlowAction.FLOW_ACTION_RESUME);
    });
    resumer.start();
    Run run;
    try {
      run = runGenerator();
    } finally {
      resumer.interrupt();
      resumer.join();
    }
    assertThat(run.output()).isEqualTo(expected());

    FakeAgent.Flow suspended = agent.flows.get(0);
    await().atMost(Duration.ofSeconds(10)).until(() -> agent.ends.containsKey(suspended.flowId()));
    FlowEnd end = agent.ends.get(suspended.flowId());
    assertThat(end.getReason()).isEqualTo(FlowEndReason.FLOW_END_REASON_WRITTEN);
    assertThat(end.getBytesWritten()).isEqualTo(suspended.registration().getBytes());
    long heldNanos = agent.endNanos.get(suspended.flowId()) - suspended.registeredNanos();
    assertThat(Duration.ofNanos(heldNanos)).isGreaterThanOrEqualTo(Duration.ofMillis(holdMs));
  }

  @Test
  @Order(5)
  void killClosesTheConnectionAndTheReducerFetchesAgain() throws Exception {
    AtomicBoolean first = new AtomicBoolean(true);
    agent.ordersBeforeReply(r -> first.getAndSet(false) ? FlowAction.FLOW_ACTION_KILL : null);
    Run run = runGenerator();
    assertThat(run.output()).isEqualTo(expected());

    FakeAgent.Flow killed = agent.flows.get(0);
    await().atMost(Duration.ofSeconds(10)).until(() -> agent.ends.containsKey(killed.flowId()));
    FlowEnd end = agent.ends.get(killed.flowId());
    assertThat(end.getReason()).isEqualTo(FlowEndReason.FLOW_END_REASON_ABORTED);
    assertThat(end.getBytesWritten()).isZero();
    assertThat(flowMetrics().killed()).isEqualTo(1);
    int reduce = killed.registration().getReduceId();
    Set<Integer> refetched = new HashSet<>();
    for (FakeAgent.Flow f : agent.flows.subList(1, agent.flows.size())) {
      if (f.registration().getReduceId() == reduce) {
        refetched.addAll(f.registration().getMapIdsList());
      }
    }
    assertThat(refetched).containsAll(killed.registration().getMapIdsList());
  }

  /**
   * A map attempt that fails: the reduces report its loss (the FAILED completion event) and the
   * success of the attempt that ran after it. One NodeManager cannot be lost here, so OBSOLETE
   * and KILLED are covered by the unit tests only.
   */
  @Test
  @Order(6)
  void aFailedMapAttemptIsReportedLostAndItsRetryDone() throws Exception {
    int failing = 1;
    Run run = runGenerator(c -> c.setInt(GeneratorJob.FAIL_FIRST_ATTEMPT_OF, failing));
    assertThat(run.output()).isEqualTo(expected());
    String jobId = run.job().getJobID().toString();

    await().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
        assertThat(agent.events(ShuffleEvent.EventCase.SHUFFLE_FINISHED)).hasSize(REDUCES));
    List<MapLost> lost = agent.events(ShuffleEvent.EventCase.MAP_LOST).stream()
        .map(ShuffleEvent::getMapLost).toList();
    assertThat(lost).as("each reduce reports the failed attempt once").hasSize(REDUCES)
        .allSatisfy(l -> {
          assertThat(l.getJobId()).isEqualTo(jobId);
          assertThat(l.getMapId()).isEqualTo(failing);
          assertThat(l.getAttempt()).isZero();
          assertThat(l.getHost()).isNotEmpty();
        });
    assertThat(lost).extracting(MapLost::getReduceId).containsExactlyInAnyOrder(0, 1);
    assertThat(agent.events(ShuffleEvent.EventCase.MAP_COMPLETED).stream()
        .map(ShuffleEvent::getMapCompleted).filter(m -> m.getMapId() == failing).toList())
        .as("the retry's success, once per reduce").hasSize(REDUCES)
        .allSatisfy(m -> assertThat(m.getAttempt()).isEqualTo(1));
    // reduces start after the first map here (slow start 0.05): reduce 0 may see maps running
    List<ShuffleEvent> fromZero = agent.events(ShuffleEvent.EventCase.MAP_COMPLETED).stream()
        .filter(e -> e.getMapCompleted().getReduceId() == 0).toList();
    fromZero.forEach(e -> System.out.printf("map %d done at %d: maps running %d since %d%n",
        e.getMapCompleted().getMapId(), e.getTimeUnixNanos() / 1_000_000,
        e.getMapCompleted().getMapsRunning(),
        e.getMapCompleted().getRunningMapsSinceUnixNanos() / 1_000_000));
    assertRunningMapsSince(fromZero, List.of(run.job().getTaskReports(TaskType.MAP)));
    // each reduce learnt of the loss before the retry's success, as the scheduler must apply them
    for (int reduce = 0; reduce < REDUCES; reduce++) {
      int r = reduce;
      List<ShuffleEvent.EventCase> order = agent.events.stream()
          .filter(e -> e.hasMapLost() && e.getMapLost().getReduceId() == r
              && e.getMapLost().getMapId() == failing
              || e.hasMapCompleted() && e.getMapCompleted().getReduceId() == r
              && e.getMapCompleted().getMapId() == failing)
          .map(ShuffleEvent::getEventCase).toList();
      assertThat(order).as("reduce %d", r).containsExactly(ShuffleEvent.EventCase.MAP_LOST,
          ShuffleEvent.EventCase.MAP_COMPLETED);
    }
  }

  /**
   * The agent dies while a flow is suspended and no RESUME will come: the held response goes at
   * once (not after datcp.shuffle.suspend.max-ms, and not after the reducer's 180 s read
   * timeout), the rest of the shuffle is plain Hadoop, and the output is exact.
   */
  @Test
  @Order(7)
  void aFlowSuspendedWhenTheAgentDiesResumesAtOnce() throws Exception {
    long lostBefore = flowMetrics().resumedAgentLost();
    long timedOutBefore = flowMetrics().resumedOnTimeout();
    long suspendedBefore = flowMetrics().suspended();
    AtomicBoolean first = new AtomicBoolean(true);
    agent.ordersBeforeReply(
        r -> first.getAndSet(false) ? FlowAction.FLOW_ACTION_SUSPEND : null);
    FakeAgent a = agent;
    Thread killer = new Thread(() -> {
      await().atMost(Duration.ofMinutes(2))
          .until(() -> flowMetrics().suspended() > suspendedBefore);
      try {
        a.close(); // the orders stream breaks mid-suspend
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    killer.start();
    Run run;
    try {
      run = runGenerator();
    } finally {
      killer.join();
    }
    assertThat(run.output()).isEqualTo(expected());
    assertThat(flowMetrics().resumedAgentLost() - lostBefore).isEqualTo(1);
    assertThat(flowMetrics().resumedOnTimeout()).isEqualTo(timedOutBefore);
  }

  @Test
  @Order(8)
  void withoutAnAgentTheShuffleIsPlainHadoop() throws Exception {
    agent.close();
    assertThat(agent.socket).doesNotExist();
    Path input = dir.resolve("words");
    Map<String, Integer> counts = WordCountJob.writeInput(input, 2, 40_000);
    Path out = dir.resolve("wordcount-out");
    Job job = WordCountJob.create(cluster.jobConf(), input, out, REDUCES);
    assertThat(job.waitForCompletion(false)).as("job succeeded").isTrue();
    assertThat(readOutput(out)).isEqualTo(WordCountJob.expectedLines(counts));
    assertThat(shuffleBytes(job)).as("the shuffle moved data").isPositive();
    assertThat(agent.flows).isEmpty();
    agent = null;
  }
}
