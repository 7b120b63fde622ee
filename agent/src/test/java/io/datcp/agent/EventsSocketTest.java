package io.datcp.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.agent.testing.AgentClient;
import io.datcp.agent.testing.FakeScheduler;
import io.datcp.agent.testing.TestAgents;
import io.datcp.proto.v1.MapCompleted;
import io.datcp.proto.v1.ReportAck;
import io.datcp.proto.v1.ShuffleEvent;
import io.datcp.proto.v1.ShuffleReport;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent's events socket (no kernel, no root): it sits beside the gRPC socket with the same
 * mode, replaces a stale file, and feeds the same path as Forward: reports reach the scheduler,
 * a batch already taken through either door is a duplicate, the metrics count both doors.
 */
class EventsSocketTest {
  @TempDir
  Path dir;

  private static ShuffleReport report(long batch, int map) {
    return ShuffleReport.newBuilder().setReporterHost("nm1").setReporterId("reduce-1")
        .setBatchId(batch).addEvents(ShuffleEvent.newBuilder().setTimeUnixNanos(map)
            .setMapCompleted(MapCompleted.newBuilder().setJobId("job_1_1").setMapId(map)
                .setReduceId(0).setHost("h")))
        .build();
  }

  private static ReportAck send(Path socket, ShuffleReport report) throws Exception {
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(socket));
      OutputStream out = Channels.newOutputStream(ch);
      InputStream in = Channels.newInputStream(ch);
      report.writeDelimitedTo(out);
      return ReportAck.parseDelimitedFrom(in);
    }
  }

  private List<Integer> mapsAtScheduler(FakeScheduler scheduler) {
    return scheduler.reports.stream().flatMap(r -> r.getEventsList().stream())
        .map(e -> e.getMapCompleted().getMapId()).toList();
  }

  @Test
  void reportsGoTheForwardWayAndABatchIsTakenOnceWhicheverDoorItCameBy() throws Exception {
    Path events = dir.resolve("events.sock");
    Files.writeString(events, "left by an agent that was killed");
    try (FakeScheduler scheduler = new FakeScheduler().start()) {
      Map<String, String> s = TestAgents.settings(dir, scheduler.target(), 13562);
      s.put("kernel.enabled", "false");
      s.put("local.socketMode", "0660");
      try (AgentServer agent = TestAgents.start(s);
          AgentClient grpc = new AgentClient(dir.resolve("agent.sock"))) {
        // beside agent.sock by default, replacing the stale file, with the same mode
        assertThat(Files.readAttributes(events, BasicFileAttributes.class,
            LinkOption.NOFOLLOW_LINKS).isOther()).as("a socket").isTrue();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(events,
            LinkOption.NOFOLLOW_LINKS))).isEqualTo("rw-rw----");

        assertThat(send(events, report(1, 10)).getAccepted()).isEqualTo(1);
        // batch 1 again through Forward (an answer lost on the way): taken once
        ReportAck again = grpc.blocking().forward(report(1, 10));
        assertThat(again.getDuplicate()).isTrue();
        assertThat(grpc.blocking().forward(report(2, 11)).getAccepted()).isEqualTo(1);
        assertThat(send(events, report(2, 11)).getDuplicate()).isTrue();
        assertThat(send(events, report(3, 12)).getAccepted()).isEqualTo(1);

        await().atMost(Duration.ofSeconds(10)).until(() -> mapsAtScheduler(scheduler).size() >= 3);
        Thread.sleep(200);
        assertThat(mapsAtScheduler(scheduler)).containsExactly(10, 11, 12);
        // the agent's own reporter identity goes to the scheduler, not the plugin's
        assertThat(scheduler.reports).allSatisfy(r ->
            assertThat(r.getReporterHost()).isEqualTo("test-host"));

        String metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
            "http://127.0.0.1:" + agent.metricsPort() + "/metrics")).build(),
            HttpResponse.BodyHandlers.ofString()).body();
        assertThat(metrics)
            .contains("datcp_agent_forward_reports_total{result=\"accepted\",via=\"events\"} 2.0")
            .contains("datcp_agent_forward_reports_total{result=\"duplicate\",via=\"events\"} 1.0")
            .contains("datcp_agent_forward_reports_total{result=\"accepted\",via=\"grpc\"} 1.0")
            .contains("datcp_agent_forward_reports_total{result=\"duplicate\",via=\"grpc\"} 1.0")
            .contains("datcp_agent_events_connections ")
            .contains("datcp_agent_events_closed_total{reason=\"too_large\"} 0.0");
      }
      assertThat(events).as("removed when the agent stops").doesNotExist();
    }
  }

  @Test
  void anEventsSocketPathOfItsOwnIsUsed() throws Exception {
    Path elsewhere = dir.resolve("other").resolve("ev.sock");
    Map<String, String> s = TestAgents.settings(dir, "", 13562);
    s.put("kernel.enabled", "false");
    s.put("local.eventsSocketPath", elsewhere.toString());
    try (AgentServer agent = TestAgents.start(s)) {
      assertThat(send(elsewhere, report(1, 1)).getAccepted()).isEqualTo(0);
      assertThat(dir.resolve("events.sock")).doesNotExist();
    }
  }
}
