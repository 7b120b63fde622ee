package io.datcp.it.cluster;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.model.Bind;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.ContainerNetwork;
import com.github.dockerjava.api.model.Network.Ipam;
import com.github.dockerjava.api.model.Volume;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.ImagePullPolicy;
import org.testcontainers.lifecycle.Startable;
import org.testcontainers.lifecycle.Startables;
import org.testcontainers.utility.DockerImageName;

/**
 * The Docker Hadoop cluster of docker/README.md, driven by Testcontainers: a ToR switch, a
 * ResourceManager, optionally the DATCP scheduler, and NodeManagers, each host on its own
 * internal Docker network shared only with the ToR, so every byte between hosts crosses a ToR
 * egress port (100 Mbit/s, 200 KB buffer, kmod's RED/ECN AQM at 80/120 KB).
 *
 * <p>The cluster owns its networks and containers and removes all of them in {@link #stop()},
 * also after a failed start. Images are never pulled (docker/build-images.sh builds them).
 */
public final class DatcpCluster implements Startable {
  /** Shuffle handler on the NodeManagers and the kernel side. */
  public enum Mode {
    /** Hadoop's ShuffleHandler, the hosts' TCP (cubic), no scheduler. */
    OFF,
    /** The DATCP shuffle plugin and agent on every NodeManager, the scheduler. */
    ON
  }

  static final String HADOOP_IMAGE = "datcp/hadoop:dev";
  static final String TOR_IMAGE = "datcp/tor:dev";
  private static final Path DATCP_PINS = Path.of("/sys/fs/bpf/datcp");
  static final String SCHEDULER_IMAGE = "datcp/scheduler:dev";
  static final String ZOOKEEPER_IMAGE = "datcp/zookeeper:dev";
  /** The HA variant's ZooKeeper, as the schedulers reach it (ha.zookeeper.connect): TLS only. */
  static final String ZOOKEEPER = "zookeeper:2281";
  /** The throwaway CA the scheduler makes at start (docker/scheduler/scheduler-entrypoint.sh). */
  public static final String SCHEDULER_CA = "/var/lib/datcp-scheduler/pki/ca.pem";
  /** Accepts frames that stay on one of the cluster's bridges (see docker/README.md). */
  static final List<String> BRIDGED_RULE = List.of("DOCKER-USER", "-i", "dtcp-+", "-m",
      "physdev", "--physdev-is-bridged", "-j", "ACCEPT");
  static final String FABRIC = "10.213";
  /** Where nodes see the host's cgroup v2 root (docker/node/bin/start-agent.sh). */
  static final String CGROUP2_IN_NODE = "/run/datcp/cgroup2";
  /** Job setting that puts the DATCP reduce-side plugin in a job (system on). */
  public static final String CONSUMER_PLUGIN =
      "mapreduce.job.reduce.shuffle.consumer.plugin.class=io.datcp.shuffle.reduceside.DatcpShuffle";
  static final int TOR_HOST = 254;
  static final int HOST = 10;

  private final Mode mode;
  private final int mapNodes;
  /** Host names of the schedulers: "scheduler", or scheduler1..N in the HA variant. */
  private final List<String> schedulers = new ArrayList<>();
  private final Path dataDir;
  private final String runId = Integer.toHexString(ThreadLocalRandom.current().nextInt(0x1000, 0xffff));
  private final DockerClient docker = DockerClientFactory.instance().client();
  /** host name -> fabric subnet index (10.213.INDEX.0/24). */
  private final Map<String, Integer> subnets = new LinkedHashMap<>();
  private final Map<String, String> networkIds = new LinkedHashMap<>();
  private final Map<String, GenericContainer<?>> nodes = new LinkedHashMap<>();
  private GenericContainer<?> tor;
  private boolean ruleAdded;
  /** Whether datcp was pinned before this cluster started (then it is not ours to unload). */
  private boolean datcpLoadedBefore;

  /**
   * @param mapNodes NodeManagers nm1..nmN for maps; one more, {@link #REDUCER}, takes the
   *     reduces of the A/B scenario
   * @param dataDir host directory mounted as /data on every Hadoop node (input, output,
   *     staging, history)
   */
  public DatcpCluster(Mode mode, int mapNodes, Path dataDir) {
    this(mode, mapNodes, dataDir, 1);
  }

  /**
   * @param schedulerCount 1: one scheduler, "scheduler", with its local store; 2 or more: the HA
   *     variant (docker/README.md, "High availability"), a ZooKeeper server, "zookeeper", and
   *     schedulers scheduler1..N electing a leader on it, every agent given all of them
   */
  public DatcpCluster(Mode mode, int mapNodes, Path dataDir, int schedulerCount) {
    if (schedulerCount > 1 && mode != Mode.ON) {
      throw new IllegalArgumentException("schedulers run only with the system on");
    }
    this.mode = mode;
    this.mapNodes = mapNodes;
    this.dataDir = dataDir;
    int index = 1;
    subnets.put("rm", index++);
    if (schedulerCount > 1) {
      subnets.put("zookeeper", index++);
      for (int i = 1; i <= schedulerCount; i++) {
        schedulers.add("scheduler" + i);
      }
    } else if (mode == Mode.ON) {
      schedulers.add("scheduler");
    }
    for (String s : schedulers) {
      subnets.put(s, index++);
    }
    for (int i = 1; i <= mapNodes; i++) {
      subnets.put("nm" + i, index++);
    }
    subnets.put(REDUCER, index);
  }

  /** The NodeManager sized for the scenario's reduces (4 vcores, 8192 MB; maps need 5). */
  public static final String REDUCER = "nmr";

  public Mode mode() {
    return mode;
  }

  /** Host names of every NodeManager, the reducer node last. */
  public List<String> nodeManagers() {
    return subnets.keySet().stream().filter(h -> h.startsWith("nm")).toList();
  }

  public String ipOf(String host) {
    return FABRIC + "." + subnets.get(host) + "." + HOST;
  }

  public GenericContainer<?> node(String host) {
    return nodes.get(host);
  }

  public GenericContainer<?> tor() {
    return tor;
  }

  /** Host names of the schedulers (none when off). */
  public List<String> schedulers() {
    return List.copyOf(schedulers);
  }

  private boolean ha() {
    return schedulers.size() > 1;
  }

  @Override
  public void start() {
    datcpLoadedBefore = Files.exists(DATCP_PINS);
    try {
      addBridgedRule();
      removeStaleNetworks();
      for (String host : subnets.keySet()) {
        networkIds.put(host, createNetwork(host));
      }
      tor = torContainer();
      tor.start();
      List<GenericContainer<?>> rest = new ArrayList<>();
      nodes.put("rm", hadoopNode("rm", "rm").waitingFor(
          Wait.forLogMessage(".*Transitioned to active state.*", 1)
              .withStartupTimeout(Duration.ofMinutes(3))));
      if (ha()) {
        GenericContainer<?> zookeeper = zookeeperContainer();
        nodes.put("zookeeper", zookeeper);
        // a scheduler that finds no ZooKeeper within its session timeout stops
        schedulers.forEach(s -> nodes.put(s, schedulerContainer(s).dependsOn(zookeeper)));
      } else {
        schedulers.forEach(s -> nodes.put(s, schedulerContainer(s)));
      }
      for (String nm : nodeManagers()) {
        nodes.put(nm, nodeManager(nm));
      }
      rest.addAll(nodes.values());
      Startables.deepStart(rest.stream()).join();
    } catch (RuntimeException | IOException | InterruptedException e) {
      stop();
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new IllegalStateException("cluster did not start: " + e.getMessage(), e);
    }
  }

  /**
   * GET of a path of the scheduler's HTTP API, from inside its container (TLS, with the CA it
   * made at start); fails the caller on an error status.
   */
  public String schedulerApi(String path) throws IOException, InterruptedException {
    return schedulerApi(schedulers.get(0), path);
  }

  /** As {@link #schedulerApi(String)}, of the scheduler {@code host}. */
  public String schedulerApi(String host, String path) throws IOException, InterruptedException {
    return exec(host, "curl", "-fsS", "--cacert", SCHEDULER_CA,
        "https://localhost:8080" + path).getStdout();
  }

  /**
   * A test's end: stops {@code cluster} (null: none was made) and deletes {@code data}, the host
   * directory its nodes shared.
   */
  public static void stopAndDelete(DatcpCluster cluster, Path data) throws IOException {
    if (cluster != null) {
      cluster.stop();
    }
    try (Stream<Path> files = Files.walk(data)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  /** Runs a command in a container; fails the caller when it exits non-zero. */
  public ExecResult exec(String host, String... command) throws IOException, InterruptedException {
    GenericContainer<?> c = "tor".equals(host) ? tor : nodes.get(host);
    ExecResult r = c.execInContainer(command);
    if (r.getExitCode() != 0) {
      throw new IllegalStateException(String.join(" ", command) + " on " + host + " exited "
          + r.getExitCode() + "\nstdout: " + r.getStdout() + "\nstderr: " + r.getStderr());
    }
    return r;
  }

  @Override
  public void stop() {
    for (GenericContainer<?> c : nodes.values()) {
      quietly(c::stop);
    }
    nodes.clear();
    if (tor != null) {
      // SIGTERM first: the ToR clears its switch ports from the shared kernel before it exits
      GenericContainer<?> t = tor;
      quietly(() -> {
        if (t.getContainerId() != null) {
          docker.stopContainerCmd(t.getContainerId()).withTimeout(20).exec();
        }
      });
      quietly(t::stop);
      tor = null;
    }
    for (String id : networkIds.values()) {
      quietly(() -> docker.removeNetworkCmd(id).exec());
    }
    networkIds.clear();
    if (ruleAdded) {
      quietly(() -> iptables("-D"));
      ruleAdded = false;
    }
    if (!datcpLoadedBefore && Files.exists(DATCP_PINS)) {
      // the nodes' agents and the ToR loaded datcp on the shared kernel; registrations of
      // sockets that never ran datcp outlive the containers, so only --force removes it
      quietly(this::unloadDatcp);
    }
  }

  private void unloadDatcp() throws IOException, InterruptedException {
    Path datcpctl = Path.of(System.getProperty("user.dir")).resolve("../kmod/build/datcpctl");
    Process p = new ProcessBuilder(datcpctl.toString(), "unload", "--force")
        .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    if (p.waitFor() != 0) {
      throw new IOException("datcpctl unload --force failed: " + out);
    }
  }

  // ---- containers

  private GenericContainer<?> torContainer() {
    Map<String, String> sysctls = Map.of("net.ipv4.ip_forward", "1");
    String first = subnets.keySet().iterator().next();
    TorContainer c = new TorContainer(image(TOR_IMAGE), containerId ->
        // a container is created on one network: attach the ToR's other ports before start
        subnets.forEach((host, index) -> {
          if (!host.equals(first)) {
            docker.connectToNetworkCmd().withContainerId(containerId)
                .withNetworkId(networkIds.get(host))
                .withContainerNetwork(new ContainerNetwork().withIpamConfig(
                    new ContainerNetwork.Ipam().withIpv4Address(address(index, TOR_HOST))))
                .exec();
          }
        }));
    return c.withNetworkMode(networkName(first))
        .withImagePullPolicy(neverPull())
        // on: the ToR's agent (switch role) holds datcp as in a deployment, so that a test can
        // restart it
        .withEnv("TOR_SHAPER", mode == Mode.ON ? "agent" : "datcp")
        .withEnv("TOR_PORTS", Integer.toString(subnets.size() + 1)) // + lo
        .withCreateContainerCmdModifier(cmd -> {
          at(cmd, first, TOR_HOST, "tor");
          bind(cmd, "/sys/fs/bpf", "/sys/fs/bpf");
          cmd.getHostConfig().withCapAdd(Capability.NET_ADMIN,
              Capability.SYS_ADMIN)
              .withSecurityOpts(List.of("seccomp=unconfined")).withSysctls(sysctls);
        })
        .waitingFor(Wait.forLogMessage("tor: ready.*", 1).withStartupTimeout(Duration.ofSeconds(60)));
  }

  private GenericContainer<?> nodeManager(String host) {
    boolean reducer = REDUCER.equals(host);
    GenericContainer<?> c = hadoopNode(host, "nm")
        .withEnv("NM_VCORES", reducer ? "4" : "12")
        .withEnv("NM_MEMORY_MB", reducer ? "8192" : "3000")
        .withEnv("DATCP_SHUFFLE", mode == Mode.ON ? "datcp" : "stock")
        .waitingFor(Wait.forLogMessage(".*Registered with ResourceManager.*", 1)
            .withStartupTimeout(Duration.ofMinutes(3)));
    if (mode == Mode.ON) {
      // the agent shares the kernel's pinned datcp and attaches sockops at the cgroup v2 root
      String cgroup2 = cgroup2OnHost();
      c.withEnv("DATCP_SCHEDULER", String.join(",",
          schedulers.stream().map(h -> h + ":9090").toList()))
          // HA: an agent tries again at least every 2 s (not 10), so it reaches a new leader
          // within 2 s of the election
          .withEnv("DATCP_AGENT_EXTRA", ha() ? "scheduler.reconnectMaxMillis=2000" : "")
          .withCreateContainerCmdModifier(cmd -> {
            bind(cmd, "/sys/fs/bpf", "/sys/fs/bpf");
            bind(cmd, cgroup2, CGROUP2_IN_NODE);
            cmd.getHostConfig().withCapAdd(Capability.NET_ADMIN, Capability.SYS_ADMIN)
                .withSecurityOpts(List.of("seccomp=unconfined"));
          });
    }
    return c;
  }

  /** The host's cgroup v2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified when hybrid). */
  static String cgroup2OnHost() {
    try {
      return Files.readAllLines(Path.of("/proc/mounts")).stream().map(l -> l.split(" "))
          .filter(f -> f.length > 2 && f[2].equals("cgroup2")).map(f -> f[1]).findFirst()
          .orElseThrow(() -> new IllegalStateException(
              "no cgroup v2 mount on this host: the agents attach sockops to one"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private GenericContainer<?> hadoopNode(String host, String role) {
    return fabricHost(new GenericContainer<>(image(HADOOP_IMAGE)), host)
        .withCommand(role)
        .withCreateContainerCmdModifier(cmd -> bind(cmd, dataDir.toString(), "/data"));
  }

  private GenericContainer<?> schedulerContainer(String host) {
    GenericContainer<?> c = fabricHost(new GenericContainer<>(image(SCHEDULER_IMAGE)), host)
        .withEnv("DATCP_NODES", String.join(" ", nodeManagers()))
        .withEnv("DATCP_SCHEDULER_NAME", host)
        .withEnv("DATCP_SCHEDULERS", String.join(" ", schedulers))
        .withCreateContainerCmdModifier(cmd -> bind(cmd, dataDir.toString(), "/data"))
        .waitingFor(Wait.forLogMessage(".*datcp scheduler ready.*", 1)
            .withStartupTimeout(Duration.ofMinutes(2)));
    return ha() ? c.withEnv("DATCP_ZOOKEEPER", ZOOKEEPER) : c;
  }

  private GenericContainer<?> zookeeperContainer() {
    // /data: where it puts its CA and the schedulers' certificate (zookeeper-entrypoint.sh)
    return fabricHost(new GenericContainer<>(image(ZOOKEEPER_IMAGE)), "zookeeper")
        .withCreateContainerCmdModifier(cmd -> bind(cmd, dataDir.toString(), "/data"))
        .waitingFor(Wait.forLogMessage("zookeeper: ready.*", 1)
            .withStartupTimeout(Duration.ofMinutes(1)));
  }

  /** A host whose only link is its network to the ToR; every host name resolves to the fabric. */
  private GenericContainer<?> fabricHost(GenericContainer<?> c, String host) {
    c.withNetworkMode(networkName(host))
        .withEnv("DATCP_TOR_IP", address(subnets.get(host), TOR_HOST))
        .withEnv("DATCP_FABRIC", FABRIC + ".0.0/16")
        .withImagePullPolicy(neverPull())
        .withCreateContainerCmdModifier(cmd -> {
          at(cmd, host, HOST, host);
          cmd.getHostConfig().withCapAdd(Capability.NET_ADMIN);
        });
    subnets.keySet().stream().filter(h -> !h.equals(host))
        .forEach(h -> c.withExtraHost(h, ipOf(h)));
    return c;
  }

  private void at(CreateContainerCmd cmd, String host, int hostPart, String hostName) {
    cmd.withHostName(hostName).withName("datcp-" + runId + "-" + hostName)
        .withIpv4Address(address(subnets.get(host), hostPart));
  }

  /**
   * Adds a bind mount. Not withFileSystemBind: that makes Testcontainers probe file mounting
   * with a helper image, which it would try to pull.
   */
  private static void bind(CreateContainerCmd cmd, String hostPath, String containerPath) {
    List<Bind> binds = new ArrayList<>();
    if (cmd.getHostConfig().getBinds() != null) {
      binds.addAll(List.of(cmd.getHostConfig().getBinds()));
    }
    binds.add(new Bind(hostPath, new Volume(containerPath)));
    cmd.getHostConfig().withBinds(binds);
  }

  private DockerImageName image(String name) {
    return DockerImageName.parse(name);
  }

  private static ImagePullPolicy neverPull() {
    return image -> false;
  }

  // ---- networks

  private String networkName(String host) {
    return "datcp-" + runId + "-" + host;
  }

  private String createNetwork(String host) {
    int index = subnets.get(host);
    Map<String, String> options = new HashMap<>();
    options.put("com.docker.network.bridge.name", "dtcp-" + runId + "-" + index);
    return docker.createNetworkCmd().withName(networkName(host)).withDriver("bridge")
        .withInternal(true).withOptions(options)
        .withLabels(Map.of("io.datcp.cluster", runId))
        .withIpam(new Ipam().withConfig(new Ipam.Config()
            .withSubnet(FABRIC + "." + index + ".0/24")))
        .exec().getId();
  }

  /** Networks of an earlier run that died without cleaning up would hold the subnets. */
  private void removeStaleNetworks() {
    for (var n : docker.listNetworksCmd().withFilter("label", List.of("io.datcp.cluster")).exec()) {
      if (n.getContainers() == null || n.getContainers().isEmpty()) {
        quietly(() -> docker.removeNetworkCmd(n.getId()).exec());
      }
    }
  }

  private static String address(int subnet, int host) {
    return FABRIC + "." + subnet + "." + host;
  }

  /**
   * Docker drops frames bridged inside an internal network when their destination is outside
   * its subnet (br_netfilter): allow those that stay on one of the cluster's bridges.
   */
  private void addBridgedRule() throws IOException, InterruptedException {
    if (iptables("-C") != 0) {
      if (iptables("-I") != 0) {
        throw new IllegalStateException("cannot add the iptables rule " + BRIDGED_RULE);
      }
      ruleAdded = true;
    }
  }

  private static int iptables(String op) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("iptables", op));
    cmd.addAll(BRIDGED_RULE);
    return new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
  }

  /** The ToR: connected to its other networks between create and start. */
  private static final class TorContainer extends GenericContainer<TorContainer> {
    private final java.util.function.Consumer<String> onCreated;

    TorContainer(DockerImageName image, java.util.function.Consumer<String> onCreated) {
      super(image);
      this.onCreated = onCreated;
    }

    @Override
    protected void containerIsCreated(String containerId) {
      onCreated.accept(containerId);
    }
  }

  private interface Step {
    void run() throws Exception;
  }

  private static void quietly(Step step) {
    try {
      step.run();
    } catch (Exception e) {
      System.err.println("cluster cleanup: " + e);
    }
  }
}
