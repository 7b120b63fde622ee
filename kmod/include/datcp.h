/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * libdatcp - load, configure and observe the DATCP kernel data path.
 *
 * Everything lives pinned under /sys/fs/bpf/datcp/, so several processes
 * (the agent, datcpctl, tests, one per container) share one registration of
 * the `datcp` congestion control on the kernel: loading again reuses it.
 *
 * Conventions: functions return 0 or a negative errno; on failure
 * datcp_last_error() gives a message for a person (thread-local, valid
 * until the next call on the same thread). Times are CLOCK_MONOTONIC
 * nanoseconds (see datcp_now_ns), sizes bytes, fixed point Q10 (1024 = 1.0).
 * All functions need root (CAP_BPF + CAP_NET_ADMIN + CAP_SYS_ADMIN).
 * The flow functions keep the pinned flow and statistics maps open per
 * process (thread-safe); after another process unloads and loads again,
 * writes reach the new maps within 50 ms, lookups at once.
 */
#ifndef DATCP_H
#define DATCP_H

#include <stddef.h>
#include <linux/bpf.h>
#include <linux/types.h>
#include "datcp_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DATCP_API __attribute__((visibility("default")))

#define DATCP_PIN_DIR "/sys/fs/bpf/datcp"
#define DATCP_MAX_PORTS 64

/* Zero every field you do not set (memset or "= { 0 }"): fields are only
 * ever appended, and zero is the default of each. */
struct datcp_load_opts {
	__u64 line_rate_bps;    /* default NIC rate (PD2TCP inversion, overdue flows) of
	                         * network namespaces without their own
	                         * (datcp_line_rate_set); 0 = params->line_rate_Bps, else
	                         * the speed of the loader's default-route device, else
	                         * unknown (then only passed deadlines count as overdue) */
	const char *cgroup_path; /* cgroup v2 dir for sockops; NULL = find the mount */
	int no_sockops;         /* 1: do not attach the sockops program */
	const __u16 *ports;     /* ports whose sockets sockops puts on datcp */
	size_t n_ports;
	/* appended (ABI 2): */
	const struct datcp_params *params; /* algorithm parameters; NULL = reuse what is
	                         * loaded, or profile "yield" when loading. Not NULL and
	                         * different from the loaded ones: replace them when no
	                         * flow or switch port is in use, else -EBUSY */
	/* appended (holders): */
	const char *holder;     /* who holds this load, as datcpctl status shows it
	                         * (truncated to DATCP_HOLDER_NAME - 1); NULL = "unnamed" */
};

/* Holders: every load is recorded (DATCP_PIN_DIR/holders) with what it asked for, the
 * sockops program and its ports, so that a loader that leaves removes what only it held
 * and keeps what others share. A hold is alive while its token, a one-byte BPF map, exists:
 * datcp_load's holds (datcpctl load) pin theirs, living until datcp_unload, and holds of the
 * same name merge; datcp_load_held's token is an open descriptor of the calling process, so
 * the hold dies with the process even when it is killed, in any pid namespace. */
#define DATCP_HOLDER_NAME 48
#define DATCP_MAX_HOLDERS 64

struct datcp_holder {
	__u32 id;               /* the hold's token (a BPF map id) */
	__u32 pid;              /* the loader's pid in its own pid namespace */
	char name[DATCP_HOLDER_NAME];
	__u8 pinned;            /* 1: held until datcp_unload; 0: while the process lives */
	__u8 live;              /* the token exists (datcp_holders fills it) */
	__u8 sockops;           /* wants the sockops program attached */
	__u8 n_ports;
	__u16 ports[DATCP_MAX_PORTS]; /* ports it put on datcp */
};

struct datcp_status {
	int cc_registered;      /* "datcp" is in tcp_available_congestion_control */
	int pinned;             /* maps are pinned under DATCP_PIN_DIR */
	int sockops_attached;   /* the sockops link is pinned */
	__u32 flows;            /* registered flows */
	__u32 switch_ports;     /* configured switch ports */
	__u16 ports[DATCP_MAX_PORTS];
	size_t n_ports;
	/* appended (ABI 3): */
	__u32 netns_event_rings; /* network namespaces with their own event ring */
};

/* Last error message of this thread. */
DATCP_API const char *datcp_last_error(void);
/* CLOCK_MONOTONIC now, the clock of deadlines and start times. */
DATCP_API __u64 datcp_now_ns(void);

/* Register `datcp`, attach sockops, pin everything. Idempotent: when it is
 * loaded already, only the ports are added. *reused (may be NULL) tells
 * which happened. Pins of another DATCP_ABI_VERSION (or other requested
 * params) are replaced when no flow or switch port is in use; otherwise
 * load fails with -EBUSY and a message saying so. */
DATCP_API int datcp_load(const struct datcp_load_opts *opts, int *reused);
/* datcp_load held by the calling process (an agent) until datcp_release(*hold) or its
 * exit: *hold is the hold's id. Holds of loaders that are gone are released. -EINVAL
 * with more than DATCP_MAX_PORTS ports. */
DATCP_API int datcp_load_held(const struct datcp_load_opts *opts, int *reused, __u32 *hold);
/* Release hold (0: none) and every hold whose loader is gone (killed): ports that no live
 * hold names leave the datcp port set and the sockops link is detached when no live hold
 * wants it, so no new socket is put on datcp by them. The registration, the pinned maps and
 * the flow entries stay: sockets already on datcp keep their entries (an agent restarting
 * hands its flows over), and datcp_unload removes the rest. */
DATCP_API int datcp_release(__u32 hold);
/* The recorded holds, live or not: up to max into out, *n their number (may exceed max). */
DATCP_API int datcp_holders(struct datcp_holder *out, size_t max, size_t *n);
/* Remove switch ports, sockops, the registration and all pins (the holds
 * too). Idempotent. Other processes on this kernel may be using datcp:
 * without force it refuses (-EBUSY) while flows are registered, switch
 * ports configured or a live process holds datcp (datcp_load_held). */
DATCP_API int datcp_unload(int force);
DATCP_API int datcp_get_status(struct datcp_status *st);

/* Ports whose sockets sockops switches to datcp. */
DATCP_API int datcp_port_add(__u16 port);
DATCP_API int datcp_port_del(__u16 port);

/* Flow entries are per network namespace (datcp_abi.h): the flow functions
 * below (set, get, resume, delete) act on the caller's namespace only, the
 * one this process was in at its first flow call. A key's netns_cookie 0
 * means that namespace; a key of another namespace is refused with -EPERM.
 * To act on another namespace's flows, run the caller in it (nsenter --net;
 * not ip netns exec, which hides bpffs). datcp_netns_cookie() gives the
 * caller's cookie (SO_NETNS_COOKIE: Linux >= 5.14). */
DATCP_API int datcp_netns_cookie(__u64 *cookie);
/* "ip:port" or "[ipv6]:port" of the sender's socket and its peer; the key's
 * namespace is the caller's. */
DATCP_API int datcp_flow_key_parse(struct datcp_flow_key *key, const char *src, const char *dst);
/* Text form of one end ("10.0.0.1:5001", "[fe80::1]:80"); buf >= 64 bytes. */
DATCP_API void datcp_flow_key_format(const struct datcp_flow_key *key, int dst, char *buf, size_t len);

/* Register (or replace) a flow. start_ns 0 means now. A changed epoch makes
 * the kernel start a new flow on the connection. The entry lives until the
 * socket is destroyed (then DATCP_EV_CLOSED reports the epoch's final
 * numbers and the kernel deletes registration and statistics) or until
 * datcp_flow_delete. -EINVAL with a message for: ports 0, unknown mode,
 * quench or flags, phi outside [0, 1], importance outside [0, 10], size
 * above DATCP_SIZE_MAX, a deadline without a size, a deadline not after
 * now (and start) or more than DATCP_DEADLINE_MAX_NS ahead. */
#define DATCP_SIZE_MAX (1ULL << 50)                         /* 1 PiB */
#define DATCP_DEADLINE_MAX_NS (366ULL * 24 * 3600 * 1000000000ULL) /* a year */
DATCP_API int datcp_flow_set(const struct datcp_flow_key *key, const struct datcp_flow_meta *meta);
/* meta and/or stats may be NULL; -ENOENT when neither exists. */
DATCP_API int datcp_flow_get(const struct datcp_flow_key *key, struct datcp_flow_meta *meta,
			     int *has_meta, struct datcp_flow_stats *stats, int *has_stats);
DATCP_API int datcp_flow_delete(const struct datcp_flow_key *key);
/* Lift the flow's quench (bumps meta.resume); its quench mode stays armed. */
DATCP_API int datcp_flow_resume(const struct datcp_flow_key *key);

/* NIC rate of network namespace netns (as for the switch functions), for
 * PD2TCP's and the overdue test's "not even at line rate"; rate_bps 0
 * removes it (the load-time default applies). Read at each flow's start. */
DATCP_API int datcp_line_rate_set(const char *netns, __u64 rate_bps);
/* Speed of interface ifname in netns from its driver (ethtool), bits/s. */
DATCP_API int datcp_link_speed(const char *netns, const char *ifname, __u64 *rate_bps);

/* Algorithm parameters (struct datcp_params; datcp_core.h explains each).
 * datcp_params_profile fills a profile: "yield" (tuned with agnostic_u_min;
 * the default, also for name NULL), "tuned" or "paper".
 * datcp_param_set sets one by name ("g", "alpha", "u_max", "theta",
 * "quench_p_max", "quench_draws", "resume_quiet_ms", "quench_timeout_ms",
 * "ewma" (new|paper), "guard_shift", "slow_start_raise_only",
 * "hopeful_below_u_max", "overdue_give_up", "line_rate_mbit",
 * "agnostic_u_min"); fractions
 * as decimals ("0.05"). datcp_params_get reads the loaded ones;
 * datcp_params_format writes "name=value ..." (buf >= 512 bytes). */
DATCP_API int datcp_params_profile(const char *name, struct datcp_params *out);
DATCP_API int datcp_param_set(struct datcp_params *p, const char *name, const char *value);
DATCP_API int datcp_params_get(struct datcp_params *out);
DATCP_API void datcp_params_format(const struct datcp_params *p, char *buf, size_t len);

/* Visit every flow that has a registration or statistics (meta or stats is
 * NULL when absent), of every network namespace (key->netns_cookie tells
 * which). A non-zero return from fn stops and is returned. */
typedef int (*datcp_flow_fn)(const struct datcp_flow_key *key, const struct datcp_flow_meta *meta,
			     const struct datcp_flow_stats *stats, void *ctx);
DATCP_API int datcp_flow_foreach(datcp_flow_fn fn, void *ctx);

/* Emulated switch port on interface ifname of network namespace netns (a
 * name under /var/run/netns, a path, or NULL for the caller's): HTB at
 * cfg->rate_bps with a bfifo of cfg->buffer_bytes per band, and the AQM
 * program in front of it. Replaces an existing configuration. */
DATCP_API int datcp_switch_configure(const char *netns, const char *ifname,
				     const struct datcp_port_config *cfg);
DATCP_API int datcp_switch_read(const char *netns, const char *ifname,
				struct datcp_port_config *cfg, struct datcp_port_state *st);
DATCP_API int datcp_switch_reset(const char *netns, const char *ifname);

/* Events of the congestion control. Each goes to the event ring of the
 * sending socket's network namespace when a reader registered one, else to
 * the global ring. datcp_events_open_netns() creates a ring (of
 * DATCP_EVENTS_RING_BYTES) and registers it for the caller's network
 * namespace, replacing an earlier reader's (an agent that crashed; that one
 * reads nothing more); it is the reader to use where several readers share
 * a kernel (agents in containers): ring consumption is destructive.
 * datcp_events_open() reads the global ring: the events of namespaces
 * without a ring of their own. datcp_events_close() unregisters the ring if
 * the namespace's entry still names it. A ring that is full drops the event
 * (the flow's statistics keep its outcome), like the global ring.
 * datcp_events_poll() waits up to timeout_ms (-1: forever) and calls fn for
 * each event; it returns the number handled or a negative errno (-EINTR
 * when interrupted by a signal). */
struct datcp_events;
typedef int (*datcp_event_fn)(const struct datcp_event *ev, void *ctx);
DATCP_API struct datcp_events *datcp_events_open_netns(datcp_event_fn fn, void *ctx);
DATCP_API struct datcp_events *datcp_events_open(datcp_event_fn fn, void *ctx);
DATCP_API int datcp_events_poll(struct datcp_events *evs, int timeout_ms);
DATCP_API void datcp_events_close(struct datcp_events *evs);

/* ---- PFDCT (shared/seeds/pfdct.txt; pfdct_cc.bpf.c) ----
 * The "pfdct" congestion control and its senders' egress program, pinned
 * under PFDCT_PIN_DIR apart from datcp's (they load and unload on their own).
 * Load options: zero fields take the paper's values (1 MB, 20 segments). */
#define PFDCT_PIN_DIR "/sys/fs/bpf/pfdct"

struct pfdct_load_opts {
	__u64 long_bytes; /* 3.2.3: a flow is long after sending more than this */
	__u32 long_cwnd;  /* ... with a window that reached this many segments */
	__u32 pad;
};

/* Register "pfdct" and pin its programs and maps. *reused: 1 when it was
 * already loaded with the same options (then nothing changes); loaded with
 * other options: -EBUSY. */
DATCP_API int pfdct_load(const struct pfdct_load_opts *opts, int *reused);
/* Unregister "pfdct" and remove the pins; sockets on it keep running it. */
DATCP_API int pfdct_unload(void);
/* Attach the egress program (class DSCPs, retransmissions, Not-ECT short
 * flows) to interface ifname of network namespace netns (NULL: own). */
DATCP_API int pfdct_attach_tx(const char *netns, const char *ifname);
DATCP_API int pfdct_detach_tx(const char *netns, const char *ifname);
/* The loaded options; -ENOENT when not loaded. */
DATCP_API int pfdct_loaded_opts(struct pfdct_load_opts *opts);
/* Per-flow state: fn is called for each flow the congestion control saw. */
typedef void (*pfdct_flow_fn)(const struct pfdct_flow_key *key, const struct pfdct_flow_stats *st,
			      void *ctx);
DATCP_API int pfdct_flows(pfdct_flow_fn fn, void *ctx);
/* The egress counters, per class (index enum pfdct_class). */
DATCP_API int pfdct_tx_counts(struct pfdct_tx_counters out[3]);

DATCP_API const char *datcp_mode_name(int mode);
DATCP_API int datcp_mode_parse(const char *name);           /* -1 if unknown */
DATCP_API const char *datcp_quench_name(int quench_mode);
DATCP_API int datcp_quench_parse(const char *name);         /* -1 if unknown */
DATCP_API const char *datcp_mark_name(int mark_mode);
DATCP_API int datcp_mark_parse(const char *name);           /* -1 if unknown */

#ifdef __cplusplus
}
#endif
#endif
