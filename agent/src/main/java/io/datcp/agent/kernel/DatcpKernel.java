package io.datcp.agent.kernel;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * The kernel data path through libdatcp: loading (or re-attaching to) the pinned datcp
 * objects, the flow table, the event ring of the agent's network namespace and the emulated
 * switch ports. Flow entries are per network namespace: the keys written here leave
 * netns_cookie 0, which libdatcp fills with this process's namespace (the NodeManager's,
 * whose sockets the agent tags); entries of other namespaces on the kernel are neither listed
 * nor touched. Thread-safe: libdatcp
 * caches the pinned map descriptors under a lock and its error text is per thread; the structs handed to it
 * are per thread too.
 */
public final class DatcpKernel implements Kernel {
  private static final double Q = Abi.Q;

  private final ThreadLocal<Abi.FlowKey> keys = ThreadLocal.withInitial(() -> {
    Abi.FlowKey k = new Abi.FlowKey();
    k.setAutoRead(false);
    return k;
  });
  /** Field offsets of setFlow's key and meta, which it writes into native memory directly. */
  private static final long K_SADDR = Abi.FlowKey.offsetOf("saddr");
  private static final long K_DADDR = Abi.FlowKey.offsetOf("daddr");
  private static final long K_SPORT = Abi.FlowKey.offsetOf("sport");
  private static final long K_DPORT = Abi.FlowKey.offsetOf("dport");
  // netns_cookie stays 0 in every key written: libdatcp puts this process's namespace there
  private static final long M_SIZE = Abi.FlowMeta.offsetOf("size_bytes");
  private static final long M_DEADLINE = Abi.FlowMeta.offsetOf("deadline_ns");
  private static final long M_START = Abi.FlowMeta.offsetOf("start_ns");
  private static final long M_EPOCH = Abi.FlowMeta.offsetOf("epoch");
  private static final long M_IMPORTANCE = Abi.FlowMeta.offsetOf("importance_q");
  private static final long M_PHI = Abi.FlowMeta.offsetOf("phi_q");
  private static final long M_MODE = Abi.FlowMeta.offsetOf("mode");
  private static final long M_QUENCH = Abi.FlowMeta.offsetOf("quench");
  private static final long M_FLAGS = Abi.FlowMeta.offsetOf("flags");
  private static final long M_RESUME = Abi.FlowMeta.offsetOf("resume");
  private static final boolean LITTLE_ENDIAN = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN;

  /** One thread's setFlow arguments: the key, and the meta in memory of its own. */
  private record FlowWrite(Memory key, Memory meta) {
    FlowWrite {
      key.clear(); // padding bytes go into the map too
      meta.clear();
    }
  }

  private final ThreadLocal<FlowWrite> flowWrites = ThreadLocal.withInitial(() ->
      new FlowWrite(new Memory(new Abi.FlowKey().size()), new Memory(new Abi.FlowMeta().size())));

  /** This process's hold of the loaded datcp (datcp_load_held); 0 when only attached. */
  private final int hold;
  private final AtomicBoolean released = new AtomicBoolean();

  private DatcpKernel(int hold) {
    this.hold = hold;
  }

  /**
   * Binds libdatcp and makes sure datcp is registered, with sockops on ports when there are
   * any: loads it, or re-attaches to the objects pinned under /sys/fs/bpf/datcp without
   * disturbing live flows. The load is held by this process, recorded as holder (what
   * `datcpctl status` lists), until {@link #release} or the process's exit.
   *
   * @param library "datcp" (found on jna.library.path) or a path to libdatcp.so
   * @param cgroup cgroup v2 directory for sockops; empty = the cgroup v2 mount
   */
  public static Loaded load(String library, String holder, List<Integer> ports, long lineRateBps,
      String cgroup) throws KernelException {
    LibDatcp.bind(library);
    Abi.LoadOpts opts = new Abi.LoadOpts(); // JNA zeroes it: params NULL = reuse / defaults
    opts.params = null;
    opts.line_rate_bps = lineRateBps;
    opts.cgroup_path = cgroup.isEmpty() ? null : cgroup;
    opts.no_sockops = ports.isEmpty() ? 1 : 0; // sockops without ports would put nothing on datcp
    opts.holder = holder;
    Memory portMem = new Memory(2L * Math.max(1, ports.size()));
    for (int i = 0; i < ports.size(); i++) {
      portMem.setShort(2L * i, (short) (int) ports.get(i));
    }
    opts.ports = portMem;
    opts.n_ports = ports.size();
    int[] reused = new int[1];
    int[] hold = new int[1];
    check(LibDatcp.datcp_load_held(opts, reused, hold));
    return new Loaded(new DatcpKernel(hold[0]), reused[0] != 0);
  }

  /** Binds libdatcp without loading (for reading state, or when another process loads). */
  public static DatcpKernel attach(String library) {
    LibDatcp.bind(library);
    return new DatcpKernel(0);
  }

  /** Result of {@link #load}: the kernel and whether datcp was already loaded. */
  public record Loaded(DatcpKernel kernel, boolean reused) {}

  /**
   * Ends this process's hold (once): the ports and the sockops program that no other running
   * loader holds stop putting new sockets on datcp. The registration, the maps and the flow
   * entries stay, so sockets already on datcp keep theirs and the next agent takes them over.
   */
  public void release() throws KernelException {
    if (hold != 0 && released.compareAndSet(false, true)) {
      check(LibDatcp.datcp_release(hold));
    }
  }

  /**
   * Unregisters datcp unless flows or switch ports are still in use or a running process holds
   * it (other processes share the kernel); returns false then.
   */
  public boolean unloadIfUnused() throws KernelException {
    int rc = LibDatcp.datcp_unload(0);
    if (rc == -16) { // EBUSY
      return false;
    }
    check(rc);
    return true;
  }

  @Override
  public boolean available() {
    return true;
  }

  @Override
  public long nowNs() {
    return LibDatcp.datcp_now_ns();
  }

  @Override
  public void setFlow(FlowTuple key, FlowMeta meta) throws KernelException {
    FlowWrite w = flowWrites.get();
    Memory k = w.key();
    // the addresses' 16 bytes are in network order, the ports in host order
    k.setLong(K_SADDR, networkOrder(key.srcHi()));
    k.setLong(K_SADDR + 8, networkOrder(key.srcLo()));
    k.setLong(K_DADDR, networkOrder(key.dstHi()));
    k.setLong(K_DADDR + 8, networkOrder(key.dstLo()));
    k.setShort(K_SPORT, (short) key.srcPort());
    k.setShort(K_DPORT, (short) key.dstPort());
    Memory m = w.meta();
    m.setLong(M_SIZE, meta.sizeBytes());
    m.setLong(M_DEADLINE, meta.deadlineNs());
    m.setLong(M_START, meta.startNs());
    m.setInt(M_EPOCH, meta.epoch());
    m.setInt(M_IMPORTANCE, (int) Math.round(meta.importance() * Q));
    m.setInt(M_PHI, (int) Math.round(meta.phi() * Q));
    m.setByte(M_MODE, (byte) meta.mode().code);
    m.setByte(M_QUENCH, (byte) meta.quench().code);
    m.setByte(M_FLAGS, (byte) Abi.F_SIZE_KNOWN);
    m.setByte(M_RESUME, (byte) meta.resume());
    check(LibDatcp.datcp_flow_set(k, m));
  }

  @Override
  public void resumeFlow(FlowTuple key) throws KernelException {
    check(LibDatcp.datcp_flow_resume(key(key)));
  }

  @Override
  public boolean deleteFlow(FlowTuple key) {
    return LibDatcp.datcp_flow_delete(key(key)) == 0;
  }

  @Override
  public Optional<FlowMeta> flowMeta(FlowTuple key) {
    Abi.FlowMeta m = new Abi.FlowMeta();
    int[] has = new int[1];
    int[] hasStats = new int[1];
    if (LibDatcp.datcp_flow_get(key(key), m, has, null, hasStats) != 0 || has[0] == 0) {
      return Optional.empty();
    }
    return Optional.of(meta(m));
  }

  @Override
  public Optional<FlowStats> flowStats(FlowTuple key) {
    Abi.FlowStats s = new Abi.FlowStats();
    int[] hasMeta = new int[1];
    int[] has = new int[1];
    if (LibDatcp.datcp_flow_get(key(key), null, hasMeta, s, has) != 0 || has[0] == 0) {
      return Optional.empty();
    }
    return Optional.of(new FlowStats(s.bytes_acked, s.start_ns, s.fct_ns, s.epoch,
        s.precedence_q / Q, s.quench, s.finished != 0, s.met != 0));
  }

  @Override
  public Map<FlowTuple, FlowMeta> flows() throws KernelException {
    long[] own = new long[1];
    check(LibDatcp.datcp_netns_cookie(own));
    Map<FlowTuple, FlowMeta> out = new LinkedHashMap<>();
    LibDatcp.FlowFn fn = (key, meta, stats, ctx) -> {
      Abi.FlowKey k = new Abi.FlowKey(key);
      if (meta != null && k.netns_cookie == own[0]) {
        out.put(tuple(k), meta(new Abi.FlowMeta(meta)));
      }
      return 0;
    };
    check(LibDatcp.datcp_flow_foreach(fn, null));
    return out;
  }

  @Override
  public int flowCount() throws KernelException {
    Abi.Status st = new Abi.Status();
    check(LibDatcp.datcp_get_status(st));
    return st.flows;
  }

  @Override
  public Events openEvents(Consumer<KernelEvent> sink) throws KernelException {
    // The callback object must stay reachable while the ring is open: JNA frees its trampoline
    // when it is collected.
    LibDatcp.EventFn fn = (ev, ctx) -> {
      sink.accept(event(new Abi.Event(ev)));
      return 0;
    };
    // The ring of this agent's network namespace: agents in containers on one kernel would
    // take each other's events from the shared global ring (consumption is destructive).
    Pointer handle = LibDatcp.datcp_events_open_netns(fn, null);
    if (handle == null) {
      throw new KernelException(0, LibDatcp.datcp_last_error());
    }
    return new Events() {
      @SuppressWarnings("unused")
      private final LibDatcp.EventFn keep = fn;
      private boolean closed;

      @Override
      public int poll(int timeoutMs) throws KernelException {
        int n = LibDatcp.datcp_events_poll(handle, timeoutMs);
        if (n == -4) { // EINTR
          return 0;
        }
        check(n);
        return n;
      }

      @Override
      public void close() {
        if (!closed) {
          closed = true;
          LibDatcp.datcp_events_close(handle);
        }
      }
    };
  }

  // ---- emulated switch ports ----

  /** Configures (or replaces) one switch port on ifname in netns (empty = own namespace). */
  public void configurePort(String netns, String ifname, PortSettings s) throws KernelException {
    Abi.PortConfig c = new Abi.PortConfig();
    c.rate_bps = s.rateBitsPerSecond();
    c.buffer_bytes = (int) s.bufferBytes();
    c.mark_mode = s.mark().ordinal();
    c.red_min_bytes = (int) s.redMinBytes();
    c.red_max_bytes = (int) s.redMaxBytes();
    c.red_maxp_q = (int) Math.round(s.redMaxP() * Q);
    c.k_bytes = (int) s.kBytes();
    for (int i = 0; i < 64; i++) {
      c.dscp_band[i] = (byte) s.dscpBand()[i];
    }
    check(LibDatcp.datcp_switch_configure(ns(netns), ifname, c));
  }

  /** Counters of one configured port. */
  public PortCounters readPort(String netns, String ifname) throws KernelException {
    Abi.PortState st = new Abi.PortState();
    check(LibDatcp.datcp_switch_read(ns(netns), ifname, null, st));
    List<PortCounters.Band> bands = new ArrayList<>();
    for (int b = 0; b < Abi.BANDS; b++) {
      Abi.BandCounters c = st.band[b];
      bands.add(new PortCounters.Band(c.bytes, c.packets, c.marks, c.drops, c.peak_queue_bytes,
          st.vq_bytes[b]));
    }
    return new PortCounters(st.peak_queue_bytes, List.copyOf(bands));
  }

  /** Removes the port's shaping and AQM (idempotent). */
  public void resetPort(String netns, String ifname) throws KernelException {
    check(LibDatcp.datcp_switch_reset(ns(netns), ifname));
  }

  private static String ns(String netns) {
    return netns == null || netns.isEmpty() ? null : netns;
  }

  private static long networkOrder(long v) {
    return LITTLE_ENDIAN ? Long.reverseBytes(v) : v;
  }

  private Abi.FlowKey key(FlowTuple t) {
    Abi.FlowKey k = keys.get();
    k.saddr = t.srcBytes();
    k.daddr = t.dstBytes();
    k.sport = (short) t.srcPort();
    k.dport = (short) t.dstPort();
    k.netns_cookie = 0; // this process's namespace
    return k;
  }

  private static FlowTuple tuple(Abi.FlowKey k) {
    ByteBuffer s = ByteBuffer.wrap(k.saddr);
    ByteBuffer d = ByteBuffer.wrap(k.daddr);
    return new FlowTuple(s.getLong(), s.getLong(), k.sport & 0xffff, d.getLong(), d.getLong(),
        k.dport & 0xffff);
  }

  private static FlowMeta meta(Abi.FlowMeta m) {
    return new FlowMeta(m.size_bytes, m.deadline_ns, m.start_ns, m.epoch, m.importance_q / Q,
        m.phi_q / Q, FlowMeta.Mode.of(m.mode), FlowMeta.Quench.of(m.quench), m.resume & 0xff);
  }

  static KernelEvent event(Abi.Event e) {
    KernelEvent.Type type = switch (e.type) {
      case Abi.EV_FINISHED -> KernelEvent.Type.FINISHED;
      case Abi.EV_QUENCH -> KernelEvent.Type.QUENCH;
      case Abi.EV_CLOSED -> KernelEvent.Type.CLOSED;
      case Abi.EV_RESUME -> KernelEvent.Type.RESUME;
      default -> KernelEvent.Type.UNKNOWN;
    };
    // enum datcp_quench_state: 1 suspended, 2 killed (same numbers as the quench modes)
    FlowMeta.Quench q = e.action == 2 ? FlowMeta.Quench.KILL
        : e.action == 1 ? FlowMeta.Quench.SUSPEND : FlowMeta.Quench.OFF;
    return new KernelEvent(tuple(e.key), type, e.epoch, e.fct_ns, e.met != 0,
        e.precedence_q / Q, q, e.bytes_acked, e.finished != 0,
        KernelEvent.ResumeReason.of(e.reason));
  }

  private static void check(int rc) throws KernelException {
    if (rc < 0) {
      throw new KernelException(-rc, LibDatcp.datcp_last_error());
    }
  }
}
