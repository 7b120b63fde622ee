package io.datcp.agent.switches;

import io.datcp.agent.failopen.Outage;
import io.datcp.agent.kernel.KernelException;
import io.datcp.agent.kernel.PortCounters;
import io.datcp.agent.kernel.PortSettings;
import io.datcp.agent.scheduler.Backoff;
import io.datcp.proto.v1.FlowPolicyServiceGrpc;
import io.datcp.proto.v1.SwitchConfig;
import io.datcp.proto.v1.SwitchConfigRequest;
import io.datcp.proto.v1.SwitchPort;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.function.ToDoubleFunction;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The switch role: follows WatchSwitchConfig for one switch and applies each configuration to
 * its ports (a configuration replaces the previous one whole: ports no longer named are reset),
 * and exposes the ports' counters as metrics. A port that cannot be configured is logged and
 * counted; the others still are.
 */
public final class SwitchAgent implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(SwitchAgent.class.getName());
  /** Counters are read from the kernel at most this often, however often Prometheus asks. */
  private static final long COUNTER_CACHE_NANOS = 500_000_000L;
  private static final int DEFAULT_BAND = 1;

  private final String switchName;
  private final SwitchDriver driver;
  private final MeterRegistry meters;
  private final Map<String, PortSettings> applied = new LinkedHashMap<>();
  private final Map<String, CachedCounters> counters = new HashMap<>();
  private final Counter failures;
  private final Counter configs;
  private volatile boolean closed;
  private Thread watcher;
  private volatile ClientCallStreamObserver<SwitchConfigRequest> call;

  public SwitchAgent(String switchName, SwitchDriver driver, MeterRegistry meters) {
    this.switchName = switchName;
    this.driver = driver;
    this.meters = meters;
    failures = Counter.builder("datcp.switch.port.failures")
        .description("ports that could not be configured").register(meters);
    configs = Counter.builder("datcp.switch.configs")
        .description("switch configurations applied").register(meters);
  }

  /** Follows the scheduler's configuration stream, reconnecting with back-off. */
  public void watch(FlowPolicyServiceGrpc.FlowPolicyServiceStub stub, Outage outage,
      long minBackoffMs, long maxBackoffMs) {
    Backoff backoff = new Backoff(minBackoffMs, maxBackoffMs);
    watcher = new Thread(() -> {
      while (!closed) {
        CountDownLatch done = new CountDownLatch(1);
        stub.watchSwitchConfig(SwitchConfigRequest.newBuilder().setSwitchName(switchName)
            .build(), new ClientResponseObserver<SwitchConfigRequest, SwitchConfig>() {
              @Override
              public void beforeStart(ClientCallStreamObserver<SwitchConfigRequest> c) {
                call = c;
              }

              @Override
              public void onNext(SwitchConfig cfg) {
                outage.up();
                backoff.reset();
                apply(cfg);
              }

              @Override
              public void onError(Throwable t) {
                if (!closed) {
                  outage.down(Status.fromThrowable(t).toString());
                }
                done.countDown();
              }

              @Override
              public void onCompleted() {
                done.countDown();
              }
            });
        try {
          done.await();
          Thread.sleep(backoff.nextDelayMillis());
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "datcp-switch-watch");
    watcher.setDaemon(true);
    watcher.start();
  }

  /** Applies one whole configuration; returns the ports configured now. */
  public synchronized List<String> apply(SwitchConfig cfg) {
    Map<String, PortSettings> want = new LinkedHashMap<>();
    SwitchPort wildcard = null;
    for (SwitchPort p : cfg.getPortsList()) {
      if (p.getInterface().equals("*")) {
        wildcard = p;
      } else {
        settings(p, want);
      }
    }
    if (wildcard != null) {
      try {
        for (String ifname : driver.interfaces()) {
          if (!want.containsKey(ifname)) {
            settings(wildcard.toBuilder().setInterface(ifname).build(), want);
          }
        }
      } catch (IOException e) {
        failures.increment();
        LOG.log(Level.WARNING, "switch {0}: cannot list interfaces for '*': {1}",
            new Object[] {switchName, e.getMessage()});
      }
    }
    for (String gone : List.copyOf(applied.keySet())) {
      if (!want.containsKey(gone)) {
        try {
          driver.reset(gone);
        } catch (KernelException e) {
          LOG.log(Level.WARNING, "switch {0}: resetting {1}: {2}",
              new Object[] {switchName, gone, e.getMessage()});
        }
        applied.remove(gone);
      }
    }
    for (Map.Entry<String, PortSettings> e : want.entrySet()) {
      PortSettings old = applied.get(e.getKey());
      if (old != null && same(old, e.getValue())) {
        continue;
      }
      try {
        driver.configure(e.getKey(), e.getValue());
        applied.put(e.getKey(), e.getValue());
        registerGauges(e.getKey());
      } catch (KernelException ex) {
        failures.increment();
        LOG.log(Level.WARNING, "switch {0}: configuring port {1}: {2}",
            new Object[] {switchName, e.getKey(), ex.getMessage()});
      }
    }
    configs.increment();
    return List.copyOf(applied.keySet());
  }

  /** The port's settings in kernel terms, or a logged failure when they are out of range. */
  private void settings(SwitchPort p, Map<String, PortSettings> into) {
    String problem = null;
    int[] bands = new int[64];
    Arrays.fill(bands, DEFAULT_BAND);
    for (Map.Entry<Integer, Integer> e : p.getDscpBandMap().entrySet()) {
      if (e.getKey() < 0 || e.getKey() > 63 || e.getValue() < 0 || e.getValue() > 2) {
        problem = "dscp_band: " + e.getKey() + " -> " + e.getValue()
            + " (DSCP 0..63 to band 0..2)";
        break;
      }
      bands[e.getKey()] = e.getValue();
    }
    if (!p.getInterface().matches("[A-Za-z0-9._@-]{1,15}")) {
      problem = "interface: '" + p.getInterface() + "' is not an interface name";
    } else if (p.getBufferBytes() <= 0 || p.getBufferBytes() > Integer.MAX_VALUE
        || p.getRedMinBytes() < 0 || p.getRedMinBytes() > Integer.MAX_VALUE
        || p.getRedMaxBytes() < 0 || p.getRedMaxBytes() > Integer.MAX_VALUE
        || p.getKBytes() < 0 || p.getKBytes() > Integer.MAX_VALUE) {
      problem = "buffer/threshold bytes out of range (1..2^31-1)";
    }
    if (problem != null) {
      failures.increment();
      LOG.log(Level.WARNING, "switch {0}: port {1} skipped: {2}",
          new Object[] {switchName, p.getInterface(), problem});
      return;
    }
    PortSettings.Mark mark = switch (p.getMark()) {
      case MARK_MODE_NONE -> PortSettings.Mark.NONE;
      case MARK_MODE_STEP -> PortSettings.Mark.STEP;
      case MARK_MODE_PFDCT -> PortSettings.Mark.PFDCT;
      default -> PortSettings.Mark.RED; // DATCP Table 1
    };
    into.put(p.getInterface(), new PortSettings(p.getRateBitsPerSecond(), p.getBufferBytes(),
        mark, p.getRedMinBytes(), p.getRedMaxBytes(), p.getRedMaxP(), p.getKBytes(), bands));
  }

  private static boolean same(PortSettings a, PortSettings b) {
    return a.rateBitsPerSecond() == b.rateBitsPerSecond() && a.bufferBytes() == b.bufferBytes()
        && a.mark() == b.mark() && a.redMinBytes() == b.redMinBytes()
        && a.redMaxBytes() == b.redMaxBytes() && a.redMaxP() == b.redMaxP()
        && a.kBytes() == b.kBytes() && Arrays.equals(a.dscpBand(), b.dscpBand());
  }

  private final class CachedCounters {
    final String ifname;
    long readAt;
    PortCounters last;

    CachedCounters(String ifname) {
      this.ifname = ifname;
    }

    synchronized PortCounters get() {
      long now = System.nanoTime();
      if (last == null || now - readAt > COUNTER_CACHE_NANOS) {
        try {
          last = applied.containsKey(ifname) ? driver.counters(ifname) : null;
        } catch (KernelException e) {
          last = null;
        }
        readAt = now;
      }
      return last;
    }
  }

  private void registerGauges(String ifname) {
    if (counters.containsKey(ifname)) {
      return;
    }
    CachedCounters c = new CachedCounters(ifname);
    counters.put(ifname, c);
    Gauge.builder("datcp.switch.port.peak.queue.bytes", c,
        cc -> value(cc, pc -> pc.peakQueueBytes())).tags(Tags.of("interface", ifname))
        .description("highest virtual queue of the port, bytes").register(meters);
    for (int band = 0; band < 3; band++) {
      int b = band;
      Tags tags = Tags.of("interface", ifname, "band", Integer.toString(b));
      band(c, "datcp.switch.band.bytes", tags, b, PortCounters.Band::bytes);
      band(c, "datcp.switch.band.packets", tags, b, PortCounters.Band::packets);
      band(c, "datcp.switch.band.marks", tags, b, PortCounters.Band::marks);
      band(c, "datcp.switch.band.drops", tags, b, PortCounters.Band::drops);
      band(c, "datcp.switch.band.queue.bytes", tags, b, PortCounters.Band::queueBytes);
    }
  }

  private void band(CachedCounters c, String name, Tags tags, int b,
      ToDoubleFunction<PortCounters.Band> f) {
    Gauge.builder(name, c, cc -> value(cc, pc -> f.applyAsDouble(pc.bands().get(b))))
        .tags(tags).register(meters);
  }

  private static double value(CachedCounters c, ToDoubleFunction<PortCounters> f) {
    PortCounters pc = c.get();
    return pc == null ? Double.NaN : f.applyAsDouble(pc);
  }

  /** Ports configured now. */
  public synchronized List<String> ports() {
    return List.copyOf(applied.keySet());
  }

  /** Resets every port this agent configured (tests; a stopping agent leaves them). */
  public synchronized void resetAll() {
    for (String ifname : List.copyOf(applied.keySet())) {
      try {
        driver.reset(ifname);
      } catch (KernelException e) {
        LOG.log(Level.WARNING, "resetting {0}: {1}", new Object[] {ifname, e.getMessage()});
      }
      applied.remove(ifname);
    }
  }

  @Override
  public void close() {
    closed = true;
    ClientCallStreamObserver<SwitchConfigRequest> c = call;
    if (c != null) {
      c.cancel("agent stopping", null);
    }
    if (watcher != null) {
      watcher.interrupt();
    }
  }
}
