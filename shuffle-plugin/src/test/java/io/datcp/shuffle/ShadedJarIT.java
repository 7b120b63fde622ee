package io.datcp.shuffle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The packaged jar works on its own: loaded with nothing but the JDK, SLF4J and Hadoop beside it
 * (no unrelocated gRPC, protobuf, Guava or Netty), its agent client reaches an agent over the
 * Unix socket (relocated gRPC and protobuf agree, the epoll native library loads under its
 * shaded name) and forwards a report; its reduce side reports over the events socket and loads
 * no class of gRPC or Netty, relocated or not.
 */
class ShadedJarIT {
  private static final Path JAR = Path.of("target", "datcp-shuffle-plugin.jar");

  /** Lets only SLF4J and Hadoop through from the test class path (what a NodeManager offers). */
  private static final class HostOnly extends ClassLoader {
    HostOnly() {
      super(ClassLoader.getPlatformClassLoader());
    }

    @Override
    protected Class<?> findClass(String name) throws ClassNotFoundException {
      if (name.startsWith("org.slf4j.") || name.startsWith("org.apache.hadoop.")) {
        return ShadedJarIT.class.getClassLoader().loadClass(name);
      }
      throw new ClassNotFoundException(name);
    }
  }

  @Test
  void theShadedAgentClientForwardsAReportOverTheUnixSocket() throws Exception {
    assertThat(JAR).exists();
    Path dir = Files.createTempDirectory("datcp-shaded");
    try (FakeAgent agent = new FakeAgent(dir);
        URLClassLoader jar = new URLClassLoader(new URL[] {JAR.toUri().toURL()}, new HostOnly())) {
      assertThatThrownBy(() -> jar.loadClass("com.google.protobuf.Message"))
          .isInstanceOf(ClassNotFoundException.class);
      assertThatThrownBy(() -> jar.loadClass("io.netty.channel.Channel"))
          .isInstanceOf(ClassNotFoundException.class);

      Class<?> configClass = jar.loadClass("io.datcp.shuffle.agent.AgentConfig");
      Constructor<?> newConfig = configClass.getConstructor(String.class, String.class,
          Duration.class, Duration.class, int.class, int.class, Duration.class);
      Object config = newConfig.newInstance(agent.socket.toString(),
          agent.eventsSocket.toString(), Duration.ofMillis(5), Duration.ofSeconds(5), 100, 10,
          Duration.ofSeconds(5));
      Class<?> clientClass = jar.loadClass("io.datcp.shuffle.agent.AgentClient");
      AutoCloseable client = (AutoCloseable) clientClass.getConstructor(configClass, String.class)
          .newInstance(config, "shaded-jar-test");
      try {
        Class<?> reportClass = jar.loadClass("io.datcp.proto.v1.ShuffleReport");
        assertThat(reportClass.getSuperclass().getName())
            .startsWith("io.datcp.shaded.com.google.protobuf.");
        Object builder = reportClass.getMethod("newBuilder").invoke(null);
        Class<?> builderClass = builder.getClass();
        builderClass.getMethod("setReporterHost", String.class).invoke(builder, "shaded-host");
        builderClass.getMethod("setReporterId", String.class).invoke(builder, "r1");
        builderClass.getMethod("setBatchId", long.class).invoke(builder, 1L);
        Class<?> eventClass = jar.loadClass("io.datcp.proto.v1.ShuffleEvent");
        Object event = eventClass.getMethod("getDefaultInstance").invoke(null);
        builderClass.getMethod("addEvents", eventClass).invoke(builder, event);
        Object report = builderClass.getMethod("build").invoke(builder);
        Method forward = clientClass.getMethod("forward", reportClass);
        forward.invoke(client, report);
        await().atMost(Duration.ofSeconds(5)).until(() -> agent.events.size() == 1);
      } finally {
        client.close();
      }
    }
  }

  /** The jar's classes, each recorded as it is defined. */
  private static final class Recording extends URLClassLoader {
    final Set<String> loaded = ConcurrentHashMap.newKeySet();

    Recording() throws Exception {
      super(new URL[] {JAR.toUri().toURL()}, new HostOnly());
    }

    @Override
    protected Class<?> findClass(String name) throws ClassNotFoundException {
      Class<?> c = super.findClass(name);
      loaded.add(name);
      return c;
    }
  }

  @Test
  void theShadedReduceSideReportsOverTheEventsSocketWithoutGrpcOrNetty() throws Exception {
    Path dir = Files.createTempDirectory("datcp-shaded");
    try (FakeAgent agent = new FakeAgent(dir); Recording jar = new Recording()) {
      Class<?> configClass = jar.loadClass("io.datcp.shuffle.agent.AgentConfig");
      Object config = configClass.getConstructor(String.class, String.class, Duration.class,
          Duration.class, int.class, int.class, Duration.class).newInstance(
          agent.socket.toString(), agent.eventsSocket.toString(), Duration.ofMillis(5),
          Duration.ofSeconds(5), 100, 10, Duration.ofSeconds(5));
      Class<?> forwarderClass = jar.loadClass("io.datcp.shuffle.agent.EventForwarder");
      Object forwarder = forwarderClass.getMethod("connecting", configClass, String.class,
          String.class).invoke(null, config, "shaded reduce", "shaded-host");
      Class<?> eventClass = jar.loadClass("io.datcp.proto.v1.ShuffleEvent");
      Object event = eventClass.getMethod("getDefaultInstance").invoke(null);
      forwarderClass.getMethod("offer", eventClass).invoke(forwarder, event);
      forwarderClass.getMethod("close").invoke(forwarder);
      assertThat(forwarderClass.getMethod("delivered").invoke(forwarder)).isEqualTo(1L);
      assertThat(agent.socketEvents).hasSize(1);
      assertThat(jar.loaded).contains("io.datcp.shuffle.agent.EventsClient")
          .anyMatch(n -> n.startsWith("io.datcp.shaded.com.google.protobuf."))
          .noneMatch(n -> n.contains("grpc") || n.contains("netty"));
    }
  }
}
