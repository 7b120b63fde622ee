/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Types shared by the BPF programs and user space (libdatcp, datcpctl).
 * Fixed-width types only: this header is compiled both against vmlinux.h
 * (BPF) and against <linux/types.h> (user space).
 *
 * Fixed point: every "_q" field is Q10, i.e. 1024 means 1.0.
 * Times are nanoseconds of CLOCK_MONOTONIC (bpf_ktime_get_ns), rates are
 * bytes per second, sizes are bytes.
 */
#ifndef DATCP_ABI_H
#define DATCP_ABI_H

#define DATCP_Q 1024U /* 1.0 in Q10 */
/* Layout version of the pinned maps and the programs' read-only data; bumped
 * on any change of them (1: the first release, 2: close/resume/params,
 * 3: per-network-namespace event rings, 4: flow keys carry the network
 * namespace, 5: DCTCP's g a parameter). */
#define DATCP_ABI_VERSION 5U
/* Bytes of an event ring buffer, the global one and each namespace's: ~13000
 * events, 2.6 s of 5000 flows/s (flow_churn) with a stalled reader. */
#define DATCP_EVENTS_RING_BYTES (1024U * 1024U)
/* Highest importance, and the highest U_max a loader may set (U_max bounds
 * urgency and precedence; see datcp_core.h). */
#define DATCP_PRECEDENCE_MAX_Q (10 * DATCP_Q)

/* Congestion-control flavour of one flow (all share one struct_ops). */
enum datcp_mode {
	DATCP_MODE_RENO = 0,   /* ECN reno, precedence 1 (also: flow without meta) */
	DATCP_MODE_DATCP = 1,  /* DATCP Algorithms 1-2, Eq. 5 */
	DATCP_MODE_DCTCP = 2,  /* DCTCP: cwnd * (1 - alpha/2) */
	DATCP_MODE_D2TCP = 3,  /* D2TCP: penalty alpha^d */
	DATCP_MODE_PD2TCP = 4, /* PD2TCP: penalty alpha^p, early priority inversion */
	DATCP_MODE_MAX
};

/* DATCP Algorithm 2, epsilon: what a quenched flow becomes. */
enum datcp_quench_mode {
	DATCP_QUENCH_OFF = 0,
	DATCP_QUENCH_SUSPEND = 1,
	DATCP_QUENCH_KILL = 2,
};

/* Flow identity as seen by the sending socket: its network namespace and
 * its 4-tuple. IPv4 addresses are stored as IPv4-mapped IPv6
 * (::ffff:a.b.c.d); addresses in network byte order, ports in host byte
 * order.
 *
 * Entries are per network namespace: containers on one kernel often use the
 * same 4-tuple (private addresses, the same ports), and without the
 * namespace one container's registration would steer, and its close end,
 * the other's connection. The namespace is named by its cookie (the
 * kernel's net->net_cookie: SO_NETNS_COOKIE in user space, Linux >= 5.14),
 * which unlike the nsfs inode is never reused while the kernel runs.
 * libdatcp fills it with the caller's namespace and refuses keys of another
 * one (datcp.h). */
struct datcp_flow_key {
	__u8 saddr[16];
	__u8 daddr[16];
	__u16 sport;
	__u16 dport;
	__u32 pad;          /* zero: part of the map key */
	__u64 netns_cookie; /* network namespace of the socket */
};

#define DATCP_F_SIZE_KNOWN 0x1 /* size_bytes is meaningful (it may be 0) */

/* Per-flow policy written by the agent; the epoch lets one kept-alive
 * connection carry several flows in turn: a new epoch restarts the flow's
 * byte count and clock at the moment the kernel first sees it. */
struct datcp_flow_meta {
	__u64 size_bytes;   /* bytes of this flow (epoch), if DATCP_F_SIZE_KNOWN */
	__u64 deadline_ns;  /* absolute CLOCK_MONOTONIC deadline; 0 = none */
	__u64 start_ns;     /* CLOCK_MONOTONIC start of the flow (registration);
	                     * 0 = when the kernel first sees the epoch */
	__u32 epoch;        /* flow number on this connection */
	__u32 importance_q; /* importance I, Q10 */
	__u32 phi_q;        /* share of importance in precedence, Q10 in [0, 1] */
	__u8 mode;          /* enum datcp_mode */
	__u8 quench;        /* enum datcp_quench_mode */
	__u8 flags;         /* DATCP_F_* */
	__u8 resume;        /* resume order: bump it (mod 256) to lift a quench;
	                     * the quench mode stays armed (was: pad) */
};

/* Quench state of a flow, as reported in statistics and events. */
enum datcp_quench_state {
	DATCP_QS_NONE = 0,
	DATCP_QS_SUSPENDED = 1,
	DATCP_QS_KILLED = 2,
};

/* Per-flow statistics, refreshed by the congestion control once a window. */
struct datcp_flow_stats {
	__u64 bytes_acked;   /* since the epoch began */
	__u64 r_avg_Bps;     /* R_avg, bytes/s */
	__u64 r_desired_Bps; /* R_desired, bytes/s (~0 when infinite) */
	__u64 start_ns;      /* when the kernel first saw this epoch */
	__u64 fct_ns;        /* completion time, 0 while unfinished */
	__u32 epoch;
	__u32 urgency_q;     /* U, Q10 */
	__u32 precedence_q;  /* P, Q10 */
	__u32 b_q;           /* multiplicative decrease, Q10 */
	__u32 alpha_q;       /* DCTCP-family congestion estimate, Q10 */
	__u32 cwnd;          /* packets */
	__u32 ece_count;     /* ACKs with ECN echo */
	__u32 windows;       /* windows (~RTTs) evaluated */
	__u8 mode;
	__u8 quench;         /* enum datcp_quench_state */
	__u8 finished;       /* 1 once bytes_acked >= size */
	__u8 met;            /* 1 if finished by the deadline (or none) */
	__u32 quench_ms;     /* while quench != NONE: ms after start_ns when the
	                      * flow was quenched, so a reader that lost the
	                      * QUENCH event can find it and its age (was: pad) */
};

enum datcp_event_type {
	DATCP_EV_FINISHED = 1,
	DATCP_EV_QUENCH = 2,
	/* the socket closed (or left datcp): final numbers of its epoch; the
	 * kernel then deleted the flow's registration and statistics */
	DATCP_EV_CLOSED = 3,
	/* the kernel lifted a quench on its own (see enum datcp_resume_reason);
	 * the application may resume the flow */
	DATCP_EV_RESUME = 4,
};

/* Why the kernel resumed a quenched flow (datcp_event.reason). */
enum datcp_resume_reason {
	DATCP_RESUME_QUIET = 1,   /* no ECN echo towards its destination for resume_quiet_ms */
	DATCP_RESUME_TIMEOUT = 2, /* quenched for quench_timeout_ms without a resume order */
};

struct datcp_event {
	struct datcp_flow_key key;
	__u64 fct_ns;       /* FINISHED: completion time */
	__u32 type;         /* enum datcp_event_type */
	__u32 epoch;
	__u32 precedence_q; /* QUENCH: precedence when quenched */
	__u8 met;           /* FINISHED, CLOSED: deadline met (1 also without deadline) */
	__u8 action;        /* QUENCH: enum datcp_quench_state; CLOSED: the quench
	                     * state at close */
	__u16 pad;
	/* appended: */
	__u64 bytes_acked;  /* CLOSED: bytes acked in the epoch */
	__u8 finished;      /* CLOSED: the epoch's size was acked */
	__u8 reason;        /* RESUME: enum datcp_resume_reason */
	__u16 pad2;
	__u32 pad3;
};

/* Load-time parameters of the algorithm: read-only data of the datcp
 * programs, set by the loader (datcp_load_opts.params, datcpctl load
 * --profile/--param). Profile "yield" is the default; profile "paper" takes
 * DATCP's published value wherever the paper gives one. Reasons and values
 * of each: datcp_core.h, "Parameters". */
struct datcp_params {
	__u32 g_max_q;            /* Algorithm 1 G, Q10 */
	__u32 alpha_q;            /* Algorithm 1 alpha of the R_avg average, Q10 */
	__u32 u_max_q;            /* U_max, also the cap of importance and precedence,
	                           * Q10 in [1, DATCP_PRECEDENCE_MAX_Q] */
	__u32 theta_max;          /* Algorithm 2 Theta, windows */
	__u32 quench_p_max_q;     /* Algorithm 2 P_max of p_quench = 1 - P / P_max, Q10 */
	__u32 quench_draws;       /* p_quench is spread over this many draws (>= 1) */
	__u32 resume_quiet_ms;    /* a quenched flow resumes after this long without an ECN
	                           * echo on any datcp flow to its destination; 0 = never */
	__u32 quench_timeout_ms;  /* a quenched flow resumes after this long without a
	                           * resume order; 0 = never */
	__u32 dctcp_g_q;          /* DCTCP's g of alpha = (1 - g) alpha + g F, Q10 in [1, 1024] */
	__u8 ewma_new_weight;     /* 1: R_avg = (1 - alpha) R_avg + alpha R_last;
	                           * 0: alpha R_avg + (1 - alpha) R_last as printed */
	__u8 guard_shift;         /* aim to finish T_remain / 2^k early; 0 = on time */
	__u8 slow_start_raise_only; /* 1: slow-start windows may raise urgency, not lower it */
	__u8 hopeful_below_u_max; /* 1: no quenching while U < U_max */
	__u8 overdue_give_up;     /* 1: an overdue flow drops to U_min (PD2TCP 2.3.4) */
	__u8 agnostic_u_min;      /* 1: deadline-agnostic flows run at U_min (PD2TCP 2.3.2),
	                           * 0: at U = 1, standard TCP */
	__u8 pad[2];
	__u64 line_rate_Bps;      /* NIC rate of a network namespace without its own
	                           * (datcp_line_rate_set), bytes/s; 0 = unknown */
};

/* ---- emulated switch port (tc AQM) ---- */

#define DATCP_BANDS 3 /* strict priority bands, 0 is served first */

enum datcp_mark_mode {
	DATCP_MARK_NONE = 0,
	DATCP_MARK_RED = 1,   /* RED on the instantaneous queue (DATCP Table 1) */
	DATCP_MARK_STEP = 2,  /* DCTCP: mark above K */
	DATCP_MARK_PFDCT = 3, /* PFDCT dynamic threshold (sec. 3.2.5) */
};

/* A switch port: a network namespace (inode of its nsfs file) and an
 * interface index in it. */
struct datcp_port_key {
	__u64 netns_ino;
	__u32 ifindex;
	__u32 pad;
};

struct datcp_port_config {
	__u64 rate_bps;      /* link rate, bits/s */
	__u32 buffer_bytes;  /* port buffer; beyond it packets drop */
	__u32 mark_mode;     /* enum datcp_mark_mode */
	__u32 red_min_bytes;
	__u32 red_max_bytes;
	__u32 red_maxp_q;    /* Q10 */
	__u32 k_bytes;       /* step threshold K; PFDCT's ideal threshold K_i */
	__u8 dscp_band[64];  /* DSCP -> band */
};

struct datcp_band_counters {
	__u64 bytes;             /* enqueued */
	__u64 packets;           /* enqueued */
	__u64 marks;             /* CE set */
	__u64 drops;             /* dropped: buffer full */
	__u64 peak_queue_bytes;  /* highest virtual queue of this band */
};

/* Virtual queue state and counters of one port. */
struct datcp_port_state {
	__u64 last_ns;                 /* virtual queue last drained at */
	__u64 vq_bytes[DATCP_BANDS];   /* virtual queue per band */
	__u64 peak_queue_bytes;        /* whole port */
	__u64 pfdct_avg_q;             /* PFDCT LQV: average queue, bytes */
	__u64 pfdct_k_t;               /* PFDCT K_t: current threshold, bytes */
	struct datcp_band_counters band[DATCP_BANDS];
};

/* Value of the map of switch ports; the lock serialises the port's
 * virtual queue between CPUs. */
struct datcp_port_slot {
	struct bpf_spin_lock lock;
	__u32 pad;
	struct datcp_port_config cfg;
	struct datcp_port_state st;
};

/* ---- PFDCT (pfdct_cc.bpf.c, pfdct_core.h) ---- */

/* The three classes of 3.2.3 in the order the switch serves them. */
enum pfdct_class {
	PFDCT_CLASS_RETRANSMIT = 0,
	PFDCT_CLASS_SHORT = 1,
	PFDCT_CLASS_LONG = 2,
};

/* DSCP of each class. EF for retransmissions, CS4 for short flows, AF11 for
 * long flows: none of them is a DATCP precedence DSCP (CS1 8, 0, AF41 34), so
 * a switch port can tell PFDCT's classes from DATCP's (kmod/README.md,
 * "PFDCT and DATCP on one port"). */
#define PFDCT_DSCP_RETRANSMIT 46U
#define PFDCT_DSCP_SHORT 32U
#define PFDCT_DSCP_LONG 10U

/* A sending socket's flow, IPv4: addresses in network byte order, ports in
 * host byte order. */
struct pfdct_flow_key {
	__u32 saddr;
	__u32 daddr;
	__u16 sport;
	__u16 dport;
};

/* Per-flow state the pfdct congestion control publishes once a window. */
struct pfdct_flow_stats {
	__u64 bytes_acked; /* since the connection began */
	__u64 ece_bytes;   /* of them, acknowledged with ECN echo */
	__u32 cls;         /* enum pfdct_class: short or long */
	__u32 max_cwnd;    /* largest window so far, segments */
	__u32 cwnd;        /* segments */
	__u32 alpha_q;     /* Eq. 2, Q10 */
	__u32 lq;          /* Eq. 1, segments */
	__u32 windows;     /* windows (~RTTs) evaluated */
	__u32 rtt_us;      /* smoothed RTT */
	__u32 rtt_min_us;  /* the kernel's windowed minimum RTT */
};

/* What the sender's egress program did, per class of the packet as sent. */
struct pfdct_tx_counters {
	__u64 packets;      /* data segments seen */
	__u64 retransmits;  /* of them, sent again with PFDCT_DSCP_RETRANSMIT */
	__u64 ect_cleared;  /* short-flow segments turned Not-ECT */
};

#endif
