package io.datcp.shuffle.reduceside;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.datcp.proto.v1.FetchFinished;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.MapLost;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.shuffle.FakeAgent;
import io.datcp.shuffle.agent.AgentConfig;
import io.datcp.shuffle.agent.EventForwarder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.JobID;
import org.apache.hadoop.mapred.MapTaskCompletionEventsUpdate;
import org.apache.hadoop.mapred.RawKeyValueIterator;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapred.TaskAttemptID;
import org.apache.hadoop.mapred.TaskCompletionEvent;
import org.apache.hadoop.mapred.TaskUmbilicalProtocol;
import org.apache.hadoop.mapreduce.task.reduce.MapHost;
import org.apache.hadoop.mapreduce.task.reduce.MapOutput;
import org.apache.hadoop.mapreduce.task.reduce.MergeManager;
import org.apache.hadoop.mapreduce.task.reduce.ShuffleClientMetrics;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The reduce-side wrappers report what passes through them and change nothing of it. */
class ReduceSideReportingTest {
  private static final String JOB = "job_1700000000000_0007";

  private FakeAgent agent;
  private EventForwarder events;

  @BeforeEach
  void start() throws Exception {
    Path dir = Files.createTempDirectory("datcp-reduce");
    agent = new FakeAgent(dir);
    // as DatcpShuffle builds it: over the events socket
    events = EventForwarder.connecting(new AgentConfig(agent.socket.toString(),
        agent.eventsSocket.toString(), Duration.ofMillis(5), Duration.ofSeconds(5), 100, 10,
        Duration.ofSeconds(5)),
        "reduce-test", "reduce-host");
  }

  @AfterEach
  void stop() throws Exception {
    events.close();
    agent.close();
  }

  /** A map output whose copy reads the stream, or fails. */
  private static final class Output extends MapOutput<Object, Object> {
    final boolean fail;
    int bytesRead;
    boolean committed;

    Output(org.apache.hadoop.mapreduce.TaskAttemptID id, boolean fail) {
      super(id, 4, true);
      this.fail = fail;
    }

    @Override
    public void shuffle(MapHost host, InputStream input, long compressed, long decompressed,
        ShuffleClientMetrics metrics, Reporter reporter) throws IOException {
      if (fail) {
        throw new IOException("connection reset");
      }
      bytesRead = input.readAllBytes().length;
    }

    @Override
    public void commit() {
      committed = true;
    }

    @Override
    public void abort() { }

    @Override
    public String getDescription() {
      return "TEST";
    }
  }

  @Test
  void eachCopyIsReportedAsAFetchAndAFailedOneAsFinishedWithNothingReceived() throws Exception {
    TaskAttemptID good = TaskAttemptID.forName("attempt_1700000000000_0007_m_000004_0");
    TaskAttemptID bad = TaskAttemptID.forName("attempt_1700000000000_0007_m_000005_0");
    MergeManager<Object, Object> merger = new MergeManager<>() {
      @Override
      public void waitForResource() { }

      @Override
      public MapOutput<Object, Object> reserve(org.apache.hadoop.mapreduce.TaskAttemptID mapId,
          long size, int fetcher) {
        return new Output(mapId, mapId.equals(bad));
      }

      @Override
      public RawKeyValueIterator close() {
        return null;
      }
    };
    ReportingMergeManager<Object, Object> reporting =
        new ReportingMergeManager<>(merger, events, JOB, 2);
    MapHost host = new MapHost("nm-3.example:13562", "http://nm-3.example:13562/mapOutput");

    MapOutput<Object, Object> out = reporting.reserve(good, 4, 0);
    out.shuffle(host, new ByteArrayInputStream(new byte[4]), 4, 4, null, null);
    out.commit();
    MapOutput<Object, Object> failing = reporting.reserve(bad, 9, 0);
    assertThatThrownBy(() -> failing.shuffle(host, new ByteArrayInputStream(new byte[9]), 9, 9,
        null, null)).isInstanceOf(IOException.class);

    await().atMost(Duration.ofSeconds(5)).until(() -> agent.events.size() == 4);
    assertThat(agent.socketEvents).as("over the events socket").hasSize(4);
    assertThat(agent.events(ShuffleEvent.EventCase.FETCH_STARTED)).hasSize(2)
        .allSatisfy(e -> assertThat(e.getFetchStarted().getSourceHost()).isEqualTo("nm-3.example"));
    FetchFinished ok = agent.events(ShuffleEvent.EventCase.FETCH_FINISHED).get(0).getFetchFinished();
    assertThat(ok.getMapIdsList()).containsExactly(4);
    assertThat(ok.getBytes()).isEqualTo(4);
    assertThat(ok.getReduceId()).isEqualTo(2);
    FetchFinished failed =
        agent.events(ShuffleEvent.EventCase.FETCH_FINISHED).get(1).getFetchFinished();
    assertThat(failed.getMapIdsList()).containsExactly(5);
    assertThat(failed.getBytes()).isZero();
  }

  private static TaskCompletionEvent event(int id, String attempt,
      TaskCompletionEvent.Status status, String trackerHttp) {
    TaskAttemptID a = TaskAttemptID.forName(attempt);
    return new TaskCompletionEvent(id, a, a.getTaskID().getId(), true, status, trackerHttp);
  }

  @Test
  void mapOutputsMadeAndLostAreReportedAndTheUpdatePassesUnchanged() {
    TaskCompletionEvent done = event(0, "attempt_1700000000000_0007_m_000001_0",
        TaskCompletionEvent.Status.SUCCEEDED, "http://nm-1.example:13562");
    done.setTaskRunTime(1500);
    TaskCompletionEvent[] all = {done,
        event(1, "attempt_1700000000000_0007_m_000002_0", TaskCompletionEvent.Status.FAILED,
            "http://nm-2.example:13562"),
        event(2, "attempt_1700000000000_0007_m_000003_1", TaskCompletionEvent.Status.KILLED,
            "http://nm-3.example:13562"),
        event(3, "attempt_1700000000000_0007_m_000001_0", TaskCompletionEvent.Status.OBSOLETE,
            "http://nm-1.example:13562"),
        // the whole map failed (its job fails), and an attempt killed before it ran anywhere
        event(4, "attempt_1700000000000_0007_m_000004_3", TaskCompletionEvent.Status.TIPFAILED,
            "http://nm-2.example:13562"),
        event(5, "attempt_1700000000000_0007_m_000005_0", TaskCompletionEvent.Status.KILLED,
            null)};
    MapTaskCompletionEventsUpdate update = new MapTaskCompletionEventsUpdate(all, false);
    TaskUmbilicalProtocol real = (TaskUmbilicalProtocol) Proxy.newProxyInstance(
        getClass().getClassLoader(), new Class<?>[] {TaskUmbilicalProtocol.class},
        (proxy, method, args) -> method.getName().equals("getMapCompletionEvents") ? update : null);
    TaskUmbilicalProtocol watched = (TaskUmbilicalProtocol) Proxy.newProxyInstance(
        getClass().getClassLoader(), new Class<?>[] {TaskUmbilicalProtocol.class},
        new CompletionEventsWatcher(real, events, JOB, 0));

    Object got = invoke(watched);
    assertThat(got).isSameAs(update);
    await().atMost(Duration.ofSeconds(5)).until(() -> agent.events.size() >= 4);
    MapCompleted m = agent.events.get(0).getMapCompleted();
    assertThat(m.getJobId()).isEqualTo(JOB);
    assertThat(m.getMapId()).isEqualTo(1);
    assertThat(m.getHost()).isEqualTo("nm-1.example");
    assertThat(m.getAttempt()).isZero();
    assertThat(m.getRunTimeNanos()).isEqualTo(1_500_000_000L);
    assertThat(m.getOutputBytes()).isEqualTo(-1);
    assertThat(agent.events.subList(1, agent.events.size())).extracting(ShuffleEvent::getMapLost)
        .containsExactly(
            lost(2, "nm-2.example", 0), lost(3, "nm-3.example", 1), lost(1, "nm-1.example", 0));
  }

  /**
   * Reduce 0 with job facts but YARN unreachable (nothing listens on the addresses): the poll's
   * events are reported in order, off the caller's thread, with the facts unknown; once the
   * reports' thread has stopped (the shuffle closed) the umbilical still answers unchanged.
   */
  @Test
  void withYarnUnreachableReduceZeroReportsInOrderWithTheFactsUnknown() throws Exception {
    TaskCompletionEvent done = event(0, "attempt_1700000000000_0007_m_000001_0",
        TaskCompletionEvent.Status.SUCCEEDED, "http://nm-1.example:13562");
    MapTaskCompletionEventsUpdate update = new MapTaskCompletionEventsUpdate(
        new TaskCompletionEvent[] {done, event(1, "attempt_1700000000000_0007_m_000001_0",
            TaskCompletionEvent.Status.OBSOLETE, "http://nm-1.example:13562")}, false);
    TaskUmbilicalProtocol real = (TaskUmbilicalProtocol) Proxy.newProxyInstance(
        getClass().getClassLoader(), new Class<?>[] {TaskUmbilicalProtocol.class},
        (proxy, method, args) -> method.getName().equals("getMapCompletionEvents") ? update : null);
    Configuration conf = new Configuration(false);
    try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      // a port that was just free: connections to it are refused
      conf.set(YarnConfiguration.RM_WEBAPP_ADDRESS, "127.0.0.1:" + closed.getLocalPort());
    }
    ExecutorService asker = Executors.newSingleThreadExecutor();
    TaskUmbilicalProtocol watched = (TaskUmbilicalProtocol) Proxy.newProxyInstance(
        getClass().getClassLoader(), new Class<?>[] {TaskUmbilicalProtocol.class},
        new CompletionEventsWatcher(real, events, JOB, 0, JobFacts.from(conf, JOB), asker));

    assertThat(invoke(watched)).isSameAs(update);
    await().atMost(Duration.ofSeconds(10)).until(() -> agent.events.size() >= 2);
    assertThat(agent.events).extracting(ShuffleEvent::getEventCase).containsExactly(
        ShuffleEvent.EventCase.MAP_COMPLETED, ShuffleEvent.EventCase.MAP_LOST);
    MapCompleted m = agent.events.get(0).getMapCompleted();
    assertThat(m.getRunTimeNanos()).isZero();
    assertThat(m.getMapsRunning()).isEqualTo(-1);
    assertThat(m.getRunningMapsSinceUnixNanos()).isZero();
    assertThat(m.getRunningMapStartsUnixNanosList()).isEmpty();

    asker.shutdown();
    assertThat(invoke(watched)).isSameAs(update);
  }

  private static MapLost lost(int map, String host, int attempt) {
    return MapLost.newBuilder().setJobId(JOB).setReduceId(0).setMapId(map).setHost(host)
        .setAttempt(attempt).build();
  }

  private static Object invoke(TaskUmbilicalProtocol umbilical) {
    try {
      return umbilical.getMapCompletionEvents(JobID.forName(JOB), 0, 100,
          TaskAttemptID.forName("attempt_1700000000000_0007_r_000000_0"));
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }
}
