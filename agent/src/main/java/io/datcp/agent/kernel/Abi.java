package io.datcp.agent.kernel;

import com.sun.jna.Pointer;
import com.sun.jna.Structure;

/**
 * The C structs of kmod/include/datcp_abi.h and datcp.h, field for field (JNA lays them out
 * with the platform's C alignment). Unsigned C fields are held in the signed Java type of the
 * same width. {@code StructLayoutTest} compares every size and offset with the C compiler's.
 * When the kmod ABI changes, this file and that test change together.
 */
final class Abi {
  private Abi() {}

  /**
   * struct datcp_flow_key: the socket's network namespace and 4-tuple; IPv4 as IPv4-mapped
   * IPv6, ports in host byte order.
   */
  @Structure.FieldOrder({"saddr", "daddr", "sport", "dport", "pad", "netns_cookie"})
  public static class FlowKey extends Structure {
    public byte[] saddr = new byte[16];
    public byte[] daddr = new byte[16];
    public short sport;
    public short dport;
    public int pad;
    /** The network namespace's cookie (SO_NETNS_COOKIE). */
    public long netns_cookie;

    public FlowKey() {}

    public FlowKey(Pointer p) {
      super(p);
      read();
    }

    /** Offset of a field as JNA lays it out (StructLayoutTest checks it against C's). */
    static int offsetOf(String field) {
      return new FlowKey().fieldOffset(field);
    }
  }

  /** struct datcp_flow_meta. */
  @Structure.FieldOrder({"size_bytes", "deadline_ns", "start_ns", "epoch", "importance_q",
      "phi_q", "mode", "quench", "flags", "resume"})
  public static class FlowMeta extends Structure {
    public long size_bytes;
    public long deadline_ns;
    public long start_ns;
    public int epoch;
    public int importance_q;
    public int phi_q;
    public byte mode;
    public byte quench;
    public byte flags;
    /** Resume order: bumped (mod 256) to lift a quench; the quench mode stays armed. */
    public byte resume;

    public FlowMeta() {}

    public FlowMeta(Pointer p) {
      super(p);
      read();
    }

    /** Offset of a field as JNA lays it out (StructLayoutTest checks it against C's). */
    static int offsetOf(String field) {
      return new FlowMeta().fieldOffset(field);
    }
  }

  /** struct datcp_flow_stats. */
  @Structure.FieldOrder({"bytes_acked", "r_avg_Bps", "r_desired_Bps", "start_ns", "fct_ns",
      "epoch", "urgency_q", "precedence_q", "b_q", "alpha_q", "cwnd", "ece_count", "windows",
      "mode", "quench", "finished", "met", "quench_ms"})
  public static class FlowStats extends Structure {
    public long bytes_acked;
    public long r_avg_Bps;
    public long r_desired_Bps;
    public long start_ns;
    public long fct_ns;
    public int epoch;
    public int urgency_q;
    public int precedence_q;
    public int b_q;
    public int alpha_q;
    public int cwnd;
    public int ece_count;
    public int windows;
    public byte mode;
    public byte quench;
    public byte finished;
    public byte met;
    public int quench_ms;

    public FlowStats() {}

    public FlowStats(Pointer p) {
      super(p);
      read();
    }
  }

  /** struct datcp_event. */
  @Structure.FieldOrder({"key", "fct_ns", "type", "epoch", "precedence_q", "met", "action",
      "pad", "bytes_acked", "finished", "reason", "pad2", "pad3"})
  public static class Event extends Structure {
    public FlowKey key;
    public long fct_ns;
    public int type;
    public int epoch;
    public int precedence_q;
    public byte met;
    public byte action;
    public short pad;
    public long bytes_acked;
    public byte finished;
    public byte reason;
    public short pad2;
    public int pad3;

    public Event() {}

    public Event(Pointer p) {
      super(p);
      read();
    }
  }

  /** struct datcp_port_config. */
  @Structure.FieldOrder({"rate_bps", "buffer_bytes", "mark_mode", "red_min_bytes",
      "red_max_bytes", "red_maxp_q", "k_bytes", "dscp_band"})
  public static class PortConfig extends Structure {
    public long rate_bps;
    public int buffer_bytes;
    public int mark_mode;
    public int red_min_bytes;
    public int red_max_bytes;
    public int red_maxp_q;
    public int k_bytes;
    public byte[] dscp_band = new byte[64];
  }

  /** struct datcp_band_counters. */
  @Structure.FieldOrder({"bytes", "packets", "marks", "drops", "peak_queue_bytes"})
  public static class BandCounters extends Structure {
    public long bytes;
    public long packets;
    public long marks;
    public long drops;
    public long peak_queue_bytes;
  }

  /** struct datcp_port_state. */
  @Structure.FieldOrder({"last_ns", "vq_bytes", "peak_queue_bytes", "pfdct_avg_q", "pfdct_k_t",
      "band"})
  public static class PortState extends Structure {
    public long last_ns;
    public long[] vq_bytes = new long[BANDS];
    public long peak_queue_bytes;
    public long pfdct_avg_q;
    public long pfdct_k_t;
    public BandCounters[] band = (BandCounters[]) new BandCounters().toArray(BANDS);
  }

  /** struct datcp_load_opts (datcp.h). */
  @Structure.FieldOrder({"line_rate_bps", "cgroup_path", "no_sockops", "ports", "n_ports",
      "params", "holder"})
  public static class LoadOpts extends Structure {
    public long line_rate_bps;
    public String cgroup_path;
    public int no_sockops;
    public Pointer ports;
    public long n_ports;
    /** const struct datcp_params *: null = reuse the loaded parameters (or the defaults). */
    public Pointer params;
    /** Who holds the load, as `datcpctl status` lists it. */
    public String holder;
  }

  /** struct datcp_status (datcp.h). */
  @Structure.FieldOrder({"cc_registered", "pinned", "sockops_attached", "flows", "switch_ports",
      "ports", "n_ports", "netns_event_rings"})
  public static class Status extends Structure {
    public int cc_registered;
    public int pinned;
    public int sockops_attached;
    public int flows;
    public int switch_ports;
    public short[] ports = new short[MAX_PORTS];
    public long n_ports;
    public int netns_event_rings;
  }

  /** DATCP_ABI_VERSION these mirrors follow. */
  static final int ABI_VERSION = 5;
  /** DATCP_BANDS. */
  static final int BANDS = 3;
  /** DATCP_MAX_PORTS. */
  static final int MAX_PORTS = 64;
  /** DATCP_Q: 1.0 in the kernel's Q10 fixed point. */
  static final int Q = 1024;
  /** DATCP_F_SIZE_KNOWN. */
  static final int F_SIZE_KNOWN = 0x1;
  /** enum datcp_event_type. */
  static final int EV_FINISHED = 1;
  static final int EV_QUENCH = 2;
  static final int EV_CLOSED = 3;
  static final int EV_RESUME = 4;
}
