package io.datcp.scheduler;

import io.datcp.scheduler.auth.NodeCredentials;
import io.datcp.scheduler.common.ConfigException;
import io.datcp.scheduler.common.InvalidFieldException;
import io.datcp.scheduler.config.SchedulerConf;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine;

/** Command line entry point: {@code java -jar scheduler.jar --data-dir DIR ...}. */
@Command(name = "scheduler", mixinStandardHelpOptions = true,
    description = "DATCP job-aware shuffle scheduler: gRPC for plugins and agents, REST policy"
        + " API, metrics and dashboard over HTTP.")
public final class SchedulerMain implements Callable<Integer> {
  /** Printed once both servers listen; scripts and tests wait for it. */
  public static final String READY = "datcp scheduler ready:";

  @Option(names = "--data-dir", required = true,
      description = "Directory for the policy store and the generated write token.")
  Path dataDir;

  @Option(names = "--grpc-port", defaultValue = "9090",
      description = "gRPC port (0 = any free port). Default: ${DEFAULT-VALUE}.")
  int grpcPort;

  @Option(names = "--http-port", defaultValue = "8080",
      description = "HTTP port for REST, metrics and dashboard (0 = any)."
          + " Default: ${DEFAULT-VALUE}.")
  int httpPort;

  @Option(names = "--config",
      description = "Properties file with further settings (see scheduler/README.md).")
  Path config;

  @Option(names = "--mint-node-token", paramLabel = "HOST",
      description = "Mint a node token for HOST into DATA_DIR/node-tokens, print it and exit"
          + " (run it while the scheduler is stopped; else use POST /api/v1/nodes/HOST/token).")
  String mintFor;

  @Override
  public Integer call() throws Exception {
    if (mintFor != null) {
      Files.createDirectories(dataDir);
      try {
        System.out.println(NodeCredentials.open(dataDir).mint(mintFor));
      } catch (InvalidFieldException e) {
        System.err.println("scheduler: --mint-node-token: " + e.getMessage());
        return 2;
      }
      return 0;
    }
    SchedulerConf conf;
    try {
      conf = config == null ? SchedulerConf.defaults() : SchedulerConf.load(config);
    } catch (ConfigException e) {
      System.err.println("scheduler: " + config + ": " + e.getMessage());
      return 2;
    }
    int drillSeconds = conf.get(SchedulerConf.STARTUP_DRILL_SECONDS);
    if (drillSeconds > 0) {
      try {
        StartupDrill.run(conf, Duration.ofSeconds(drillSeconds));
      } catch (IOException | RuntimeException e) {
        // the drill only warms the JIT: without it the scheduler works, its first attack costs more
        System.err.println("scheduler: start-up drill failed, starting without it: " + e);
      }
    }
    SchedulerServer server;
    try {
      server = SchedulerServer.builder().dataDir(dataDir).grpcPort(grpcPort)
          .httpPort(httpPort).conf(conf).build().start();
    } catch (ConfigException e) {
      System.err.println("scheduler: " + e.getMessage());
      return 2;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }, "scheduler-shutdown"));
    System.out.println(READY + " grpc port " + server.grpcPort() + ", http port "
        + server.httpPort());
    System.out.flush();
    stopped.await();
    return 0;
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new SchedulerMain()).execute(args));
  }
}
