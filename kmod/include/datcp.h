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

struct datcp_load_opts {
	__u64 line_rate_bps;    /* host NIC rate for PD2TCP; 0 = 100 Mbit/s */
	const char *cgroup_path; /* cgroup v2 dir for sockops; NULL = find the mount */
	int no_sockops;         /* 1: do not attach the sockops program */
	const __u16 *ports;     /* ports whose sockets sockops puts on datcp */
	size_t n_ports;
};

struct datcp_status {
	int cc_registered;      /* "datcp" is in tcp_available_congestion_control */
	int pinned;             /* maps are pinned under DATCP_PIN_DIR */
	int sockops_attached;   /* the sockops link is pinned */
	__u32 flows;            /* registered flows */
	__u32 switch_ports;     /* configured switch ports */
	__u16 ports[DATCP_MAX_PORTS];
	size_t n_ports;
};

/* Last error message of this thread. */
DATCP_API const char *datcp_last_error(void);
/* CLOCK_MONOTONIC now, the clock of deadlines and start times. */
DATCP_API __u64 datcp_now_ns(void);

/* Register `datcp`, attach sockops, pin everything. Idempotent: when it is
 * loaded already, only the ports are added. *reused (may be NULL) tells
 * which happened. */
DATCP_API int datcp_load(const struct datcp_load_opts *opts, int *reused);
/* Remove switch ports, sockops, the registration and all pins. Idempotent.
 * Other processes on this kernel may be using datcp: without force it
 * refuses (-EBUSY) while flows are registered or switch ports configured. */
DATCP_API int datcp_unload(int force);
DATCP_API int datcp_get_status(struct datcp_status *st);

/* Ports whose sockets sockops switches to datcp. */
DATCP_API int datcp_port_add(__u16 port);
DATCP_API int datcp_port_del(__u16 port);

/* "ip:port" or "[ipv6]:port" of the sender's socket and its peer. */
DATCP_API int datcp_flow_key_parse(struct datcp_flow_key *key, const char *src, const char *dst);
/* Text form of one end ("10.0.0.1:5001", "[fe80::1]:80"); buf >= 64 bytes. */
DATCP_API void datcp_flow_key_format(const struct datcp_flow_key *key, int dst, char *buf, size_t len);

/* Register (or replace) a flow. start_ns 0 means now. A changed epoch makes
 * the kernel start a new flow on the connection. */
DATCP_API int datcp_flow_set(const struct datcp_flow_key *key, const struct datcp_flow_meta *meta);
/* meta and/or stats may be NULL; -ENOENT when neither exists. */
DATCP_API int datcp_flow_get(const struct datcp_flow_key *key, struct datcp_flow_meta *meta,
			     int *has_meta, struct datcp_flow_stats *stats, int *has_stats);
DATCP_API int datcp_flow_delete(const struct datcp_flow_key *key);

/* Visit every flow that has a registration or statistics (meta or stats is
 * NULL when absent). A non-zero return from fn stops and is returned. */
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

/* Events of the congestion control. datcp_events_open() attaches to the
 * pinned ring buffer; datcp_events_poll() waits up to timeout_ms (-1:
 * forever) and calls fn for each event; it returns the number handled or a
 * negative errno (-EINTR when interrupted by a signal). */
struct datcp_events;
typedef int (*datcp_event_fn)(const struct datcp_event *ev, void *ctx);
DATCP_API struct datcp_events *datcp_events_open(datcp_event_fn fn, void *ctx);
DATCP_API int datcp_events_poll(struct datcp_events *evs, int timeout_ms);
DATCP_API void datcp_events_close(struct datcp_events *evs);

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
