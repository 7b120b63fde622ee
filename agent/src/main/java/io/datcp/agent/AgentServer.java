package io.datcp.agent;

import io.datcp.agent.config.AgentConf;
import io.datcp.agent.flows.FlowRegistry;
import io.datcp.agent.flows.PolicySource;
import io.datcp.agent.flows.Snapshot;
import io.datcp.agent.kernel.DatcpKernel;
import io.datcp.agent.kernel.Kernel;
import io.datcp.agent.kernel.KernelException;
import io.datcp.agent.local.LocalServer;
import io.datcp.agent.local.PeerRule;
import io.datcp.agent.metrics.MetricsServer;
import io.datcp.agent.scheduler.SchedulerClient;
import io.datcp.agent.switches.DatcpSwitchDriver;
import io.datcp.agent.switches.SwitchAgent;
import io.datcp.proto.v1.FlowOutcome;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The agent process: in host role, LocalAgentService on a Unix socket over the flow registry,
 * the kernel (libdatcp) with its event thread, and the scheduler client; in switch role, the
 * switch configuration follower. Both serve Prometheus metrics. Build one with
 * {@link #builder(AgentConf)}; tests run it in-process.
 */
public final class AgentServer implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(AgentServer.class.getName());
  private static final String SNAPSHOT = "flows.snapshot";
  private static final int EVENT_POLL_MS = 200;
  private static final long SWEEP_MS = 500;

  private final AgentConf conf;
  private final String hostName;
  private final PrometheusMeterRegistry meters =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private Kernel kernel;
  /** The datcp this agent loaded and holds (host or switch role); null without one. */
  private DatcpKernel held;
  private SchedulerClient scheduler;
  private FlowRegistry registry;
  private LocalServer local;
  private LocalServer.OrderSink orders;
  private Kernel.Events events;
  private Thread eventThread;
  private ScheduledExecutorService sweeper;
  private MetricsServer metrics;
  private SwitchAgent switchAgent;
  private volatile boolean stopping;

  private AgentServer(AgentConf conf) throws IOException {
    this.conf = conf;
    String h = conf.get(AgentConf.HOST_NAME);
    hostName = h.isEmpty() ? InetAddress.getLocalHost().getHostName() : h;
  }

  public static Builder builder(AgentConf conf) {
    return new Builder(conf);
  }

  /** Settings of one agent instance. */
  public static final class Builder {
    private final AgentConf conf;

    private Builder(AgentConf conf) {
      this.conf = conf;
    }

    /** Starts the agent; returns when its socket accepts calls. */
    public AgentServer start() throws IOException {
      AgentServer a = new AgentServer(conf);
      try {
        a.startAll();
      } catch (IOException | RuntimeException e) {
        a.close();
        throw e;
      }
      return a;
    }
  }

  private void startAll() throws IOException {
    if (!conf.get(AgentConf.SCHEDULER_TARGET).isEmpty()) {
      scheduler = new SchedulerClient(conf, hostName, meters);
    }
    if (conf.get(AgentConf.ROLE) == AgentConf.Role.SWITCH) {
      startSwitch();
    } else {
      startHost();
    }
    int port = conf.get(AgentConf.METRICS_PORT);
    if (port >= 0) {
      metrics = MetricsServer.start(conf.get(AgentConf.METRICS_HOST), port, meters);
    }
  }

  private void startHost() throws IOException {
    PeerRule peers = PeerRule.nodeManager(conf.nodeManagerUid()); // an unknown user stops here
    kernel = loadKernel();
    orders = LocalServer.orderSink(meters);
    Consumer<FlowOutcome> outcomes = scheduler != null ? scheduler::report : o -> {};
    registry = new FlowRegistry(conf, hostName, kernel,
        scheduler != null ? scheduler : PolicySource.NONE,
        LocalServer.listener(orders, outcomes), meters);
    Path state = Path.of(conf.get(AgentConf.STATE_DIR));
    Files.createDirectories(state);
    Path snap = state.resolve(SNAPSHOT);
    boolean handedOver = false;
    if (Files.exists(snap)) {
      try {
        int adopted = registry.restore(Snapshot.readFrom(snap));
        handedOver = true;
        LOG.log(Level.INFO, "took over {0} live flows from the previous agent", adopted);
      } catch (IOException | RuntimeException e) {
        LOG.log(Level.WARNING, "ignoring unreadable {0}: {1}", new Object[] {snap, e});
      }
      Files.delete(snap);
    }
    int journalBytes = conf.get(AgentConf.JOURNAL_BYTES);
    if (kernel.available() && journalBytes > 0) {
      if (!handedOver) { // the previous agent was killed (or this is the first start)
        int adopted = registry.recover(state);
        if (adopted > 0) {
          LOG.log(Level.INFO, "recovered {0} live flows of a previous agent that stopped"
              + " without handing them over (flows.journal)", adopted);
        }
      }
      try {
        registry.startJournal(state, journalBytes);
      } catch (IOException e) {
        LOG.log(Level.WARNING, "no registration journal in {0} ({1}); a killed agent''s flows"
            + " will not be reported by the next one", new Object[] {state, e.getMessage()});
      }
    }
    if (kernel.available()) {
      try {
        events = kernel.openEvents(registry::onKernelEvent);
        eventThread = new Thread(this::pollEvents, "datcp-kernel-events");
        eventThread.setDaemon(true);
        eventThread.start();
      } catch (KernelException e) {
        LOG.log(Level.WARNING, "kernel events unavailable ({0}); outcomes come from time-outs",
            e.getMessage());
      }
    }
    sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "datcp-flow-sweeper");
      t.setDaemon(true);
      return t;
    });
    sweeper.scheduleWithFixedDelay(this::sweep, SWEEP_MS, SWEEP_MS, TimeUnit.MILLISECONDS);
    local = LocalServer.start(Path.of(conf.get(AgentConf.SOCKET_PATH)),
        Path.of(conf.eventsSocketPath()), conf.get(AgentConf.SOCKET_GROUP),
        conf.get(AgentConf.SOCKET_MODE), peers,
        conf.get(AgentConf.EVENTS_SOCKET_PEERS) == AgentConf.EventsPeers.ANY ? PeerRule.ANYONE
            : peers, registry, orders,
        scheduler != null ? scheduler::forward : events -> 0);
    if (scheduler != null) {
      scheduler.watch(registry::applyPolicy);
    }
    LOG.log(Level.INFO, "datcp agent ready: host {0}, socket {1}, events socket {2}, kernel {3}",
        new Object[] {hostName, local.socket(), local.eventsSocket(),
            kernel.available() ? "datcp" : "absent"});
  }

  /** Loads or re-attaches to datcp; without it the agent still answers (plain TCP). */
  private Kernel loadKernel() {
    if (!conf.get(AgentConf.KERNEL_ENABLED)) {
      return Kernel.absent("kernel.enabled=false");
    }
    try {
      DatcpKernel.Loaded l = DatcpKernel.load(conf.get(AgentConf.KERNEL_LIBRARY),
          "agent host " + hostName, conf.get(AgentConf.SHUFFLE_PORTS),
          conf.get(AgentConf.LINE_RATE), conf.get(AgentConf.CGROUP));
      LOG.log(Level.INFO, l.reused() ? "datcp already loaded: re-attached to its pinned maps"
          : "datcp loaded and pinned under /sys/fs/bpf/datcp");
      held = l.kernel();
      return held;
    } catch (KernelException | LinkageError e) {
      LOG.log(Level.WARNING, "datcp unavailable ({0}); every flow runs as plain TCP",
          e.getMessage());
      return Kernel.absent(e.getMessage());
    }
  }

  private void startSwitch() {
    try {
      // no sockops and no ports: a switch puts no socket on datcp (the hosts' agents do)
      held = DatcpKernel.load(conf.get(AgentConf.KERNEL_LIBRARY),
          "agent switch " + conf.get(AgentConf.SWITCH_NAME), List.of(),
          conf.get(AgentConf.LINE_RATE), conf.get(AgentConf.CGROUP)).kernel();
    } catch (KernelException | LinkageError e) {
      throw new IllegalStateException("switch role needs datcp: " + e.getMessage(), e);
    }
    switchAgent = new SwitchAgent(conf.get(AgentConf.SWITCH_NAME),
        new DatcpSwitchDriver(held, conf.get(AgentConf.SWITCH_NETNS)), meters);
    if (scheduler != null) {
      switchAgent.watch(scheduler.policyStub(), scheduler.outage(),
          conf.get(AgentConf.RECONNECT_MIN_MS), conf.get(AgentConf.RECONNECT_MAX_MS));
    }
    LOG.log(Level.INFO, "datcp agent ready: switch {0}", conf.get(AgentConf.SWITCH_NAME));
  }

  private void pollEvents() {
    while (!stopping) {
      try {
        events.poll(EVENT_POLL_MS);
      } catch (KernelException e) {
        LOG.log(Level.WARNING, "polling kernel events: {0}", e.getMessage());
        try {
          Thread.sleep(1000);
        } catch (InterruptedException ie) {
          return;
        }
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "handling a kernel event", e);
      }
    }
  }

  private void sweep() {
    try {
      registry.sweep();
    } catch (RuntimeException e) {
      LOG.log(Level.WARNING, "flow sweep", e);
    }
  }

  public String hostName() {
    return hostName;
  }

  public FlowRegistry registry() {
    return registry;
  }

  public Kernel kernel() {
    return kernel;
  }

  public PrometheusMeterRegistry meters() {
    return meters;
  }

  /** Null when no scheduler is configured. */
  public SchedulerClient scheduler() {
    return scheduler;
  }

  public SwitchAgent switchAgent() {
    return switchAgent;
  }

  /** Port of /metrics, or -1 when off. */
  public int metricsPort() {
    return metrics == null ? -1 : metrics.port();
  }

  /**
   * Stops serving and hands the live flows to the next agent process (state.dir): their
   * kernel entries stay, so a restart does not disturb them. Then it releases its hold of
   * datcp: what no other running loader holds (the shuffle ports, the sockops program) stops
   * putting new sockets on datcp, so a later run without the agent is plain TCP.
   */
  @Override
  public void close() {
    stopping = true;
    if (local != null) {
      local.close();
    }
    if (sweeper != null) {
      sweeper.shutdownNow();
    }
    if (eventThread != null) {
      try {
        eventThread.join(2 * EVENT_POLL_MS + 1000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (events != null && (eventThread == null || !eventThread.isAlive())) {
      events.close();
    }
    if (registry != null) {
      registry.stopJournal();
      try {
        registry.snapshot().writeTo(Path.of(conf.get(AgentConf.STATE_DIR)).resolve(SNAPSHOT));
      } catch (IOException e) {
        LOG.log(Level.WARNING, "could not save the flow table: {0}", e.getMessage());
      }
    }
    if (switchAgent != null) {
      switchAgent.close();
    }
    if (scheduler != null) {
      scheduler.close();
    }
    if (held != null) {
      try {
        held.release();
      } catch (KernelException e) {
        LOG.log(Level.WARNING, "releasing datcp: {0}; `datcpctl prune` releases what this"
            + " agent held once it has exited", e.getMessage());
      }
    }
    if (metrics != null) {
      metrics.close();
    }
  }

  /** Ports the switch role configured (tests). */
  List<String> switchPorts() {
    return switchAgent == null ? List.of() : switchAgent.ports();
  }
}
