package io.datcp.shuffle.reduceside;

import static org.assertj.core.api.Assertions.assertThat;

import io.datcp.shuffle.FakeAgent;
import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reduce side's reporting path loads no gRPC and no Netty class. Each run gets a class loader
 * of its own over the test class path with only the JDK above it, so every other class the run
 * touches is defined, and recorded, by that loader. The same check on the map side's gRPC client
 * finds gRPC classes: it is a check that can fail. (ShuffleOnMiniYarnTest checks real reduce
 * JVMs the same way, from their class-loading log.)
 */
class ReduceSideClassLoadingTest {

  /** Defines every class outside the JDK itself, and remembers its name. */
  private static final class Recording extends URLClassLoader {
    final Set<String> loaded = ConcurrentHashMap.newKeySet();

    Recording() throws Exception {
      super("recording", classPath(), ClassLoader.getPlatformClassLoader());
    }

    private static URL[] classPath() throws Exception {
      List<URL> urls = new ArrayList<>();
      for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
        urls.add(Path.of(entry).toUri().toURL());
      }
      return urls.toArray(URL[]::new);
    }

    @Override
    protected Class<?> findClass(String name) throws ClassNotFoundException {
      Class<?> c = super.findClass(name);
      loaded.add(name);
      return c;
    }
  }

  private static List<String> grpcOrNetty(Set<String> loaded) {
    return loaded.stream().filter(n -> n.startsWith("io.grpc.") || n.startsWith("io.netty."))
        .sorted().toList();
  }

  /** Runs ReduceSideRun.method(agentSocket) in a fresh loader; returns what it loaded. */
  private static Set<String> run(String method, Path agentSocket) throws Exception {
    try (Recording loader = new Recording()) {
      Class<?> run = loader.loadClass(ReduceSideRun.class.getName());
      assertThat(run.getClassLoader()).isSameAs(loader);
      long delivered = (long) run.getMethod(method, String.class).invoke(null,
          agentSocket.toString());
      assertThat(delivered).as("events delivered by " + method).isEqualTo(ReduceSideRun.EVENTS);
      return loader.loaded;
    }
  }

  @Test
  void theReduceSideReportsWithoutLoadingGrpcOrNetty(@TempDir Path dir) throws Exception {
    try (FakeAgent agent = new FakeAgent(dir)) {
      Set<String> loaded = run("reduceSide", agent.socket);
      assertThat(loaded).contains("io.datcp.shuffle.agent.EventsClient",
          "io.datcp.shuffle.agent.EventForwarder", "io.datcp.proto.v1.ShuffleReport");
      assertThat(grpcOrNetty(loaded)).isEmpty();
      assertThat(agent.socketEvents).hasSize(ReduceSideRun.EVENTS);

      // the check itself: the gRPC client, run the same way, is seen loading gRPC and Netty
      Set<String> withGrpc = run("overGrpc", agent.socket);
      assertThat(grpcOrNetty(withGrpc)).contains("io.grpc.ManagedChannel")
          .anyMatch(n -> n.startsWith("io.grpc.netty.shaded.io.netty."));
    }
  }
}
