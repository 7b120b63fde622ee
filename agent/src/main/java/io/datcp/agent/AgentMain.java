package io.datcp.agent;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.config.ConfigException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code java -jar datcp-agent.jar --config FILE}: runs the agent until SIGTERM. */
@Command(name = "datcp-agent", mixinStandardHelpOptions = true,
    description = "Per-host DATCP agent: registers shuffle flows in the kernel, follows the"
        + " scheduler's policies, relays quench orders; or, in switch role, programs the"
        + " switch ports.")
public final class AgentMain implements Callable<Integer> {
  /** Exit code for a bad command line or configuration. */
  static final int EXIT_CONFIG = 2;

  @Option(names = "--config", paramLabel = "FILE",
      description = "Java properties file with the agent's keys (see agent.properties.example)")
  private Path config;

  @Option(names = {"-D", "--set"}, paramLabel = "KEY=VALUE",
      description = "Set one configuration key, overriding the file (repeatable)")
  private Map<String, String> overrides = Map.of();

  @Override
  public Integer call() throws Exception {
    AgentConf conf;
    try {
      conf = (config == null ? AgentConf.defaults() : AgentConf.load(config)).with(overrides);
    } catch (ConfigException e) {
      System.err.println("datcp-agent: " + e.getMessage());
      return EXIT_CONFIG;
    } catch (IOException e) {
      System.err.println("datcp-agent: cannot read --config " + config + ": " + e);
      return EXIT_CONFIG;
    }
    AgentServer agent;
    try {
      agent = AgentServer.builder(conf).start();
    } catch (IllegalArgumentException e) {
      System.err.println("datcp-agent: " + e.getMessage());
      return EXIT_CONFIG;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      agent.close();
      stopped.countDown();
    }, "datcp-agent-stop"));
    System.out.println("datcp agent ready: host " + agent.hostName() + ", metrics port "
        + agent.metricsPort());
    stopped.await();
    return 0;
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new AgentMain()).execute(args));
  }
}
