package io.datcp.shuffle.mapside;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.datcp.shuffle.agent.AgentConfig;
import io.netty.channel.Channel;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapred.ShuffleHandler;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.junit.jupiter.api.Test;

/**
 * Pins the Hadoop implementation details DatcpShuffleHandler relies on, so a Hadoop upgrade that
 * changes them fails here, loudly, instead of silently leaving flows untracked:
 * ShuffleChannelHandler adds each accepted channel to the context's channel group in
 * channelActive (before any read); the pipeline ShuffleChannelInitializer builds is named
 * http, aggregator, chunking, shuffle, timeout; the service id and port metadata are the ones
 * the MapReduce AppMaster looks up; the stock request checks still answer.
 */
class ShuffleHandlerPinTest {
  private static final List<String> HADOOP_PIPELINE =
      List.of("http", "aggregator", "chunking", "shuffle", "timeout");

  @Test
  void theShufflePipelineAndAcceptOrderAreWhatTheTrackerExpects() throws Exception {
    DefaultMetricsSystem.setMiniClusterMode(true);
    List<List<String>> atAccept = new CopyOnWriteArrayList<>();
    List<List<String>> afterAttach = new CopyOnWriteArrayList<>();
    List<Boolean> activeAtAccept = new CopyOnWriteArrayList<>();
    DatcpShuffleHandler handler = new DatcpShuffleHandler() {
      @Override
      void attach(Channel channel) {
        atAccept.add(handlerNames(channel));
        activeAtAccept.add(channel.isActive());
        super.attach(channel);
        afterAttach.add(handlerNames(channel));
      }
    };
    Path dir = Files.createTempDirectory("datcp-pin");
    Configuration conf = new Configuration();
    conf.setInt(ShuffleHandler.SHUFFLE_PORT_CONFIG_KEY, 0);
    conf.set(AgentConfig.AGENT_SOCKET, dir.resolve("no-agent.sock").toString());
    handler.init(conf);
    handler.start();
    try {
      assertThat(handler.getName()).isEqualTo(ShuffleHandler.MAPREDUCE_SHUFFLE_SERVICEID);
      int port = ShuffleHandler.deserializeMetaData(handler.getMetaData());
      assertThat(port).isPositive();

      String status;
      try (Socket s = new Socket("127.0.0.1", port)) {
        OutputStream out = s.getOutputStream();
        out.write(("GET /mapOutput?job=job_1700000000000_0001&reduce=0"
            + "&map=attempt_1700000000000_0001_m_000000_0 HTTP/1.1\r\n"
            + "name: mapreduce\r\nversion: 1.0.0\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.flush();
        status = new BufferedReader(new InputStreamReader(s.getInputStream(),
            StandardCharsets.US_ASCII)).readLine();
      }
      // unknown job: Hadoop's verifyRequest still runs behind the tracker
      assertThat(status).startsWith("HTTP/1.1 401");

      await().atMost(Duration.ofSeconds(5)).until(() -> atAccept.size() == 1);
      assertThat(activeAtAccept).containsExactly(true);
      assertThat(atAccept.get(0)).as("Hadoop's shuffle pipeline").isEqualTo(HADOOP_PIPELINE);
      assertThat(afterAttach.get(0)).as("tracker just before 'shuffle'").containsExactly(
          "http", "aggregator", "chunking", DatcpShuffleHandler.TRACKER_NAME, "shuffle", "timeout");
    } finally {
      handler.stop();
    }
  }

  private static List<String> handlerNames(Channel channel) {
    return channel.pipeline().names().stream()
        .filter(n -> !n.startsWith("DefaultChannelPipeline$")).toList();
  }
}
