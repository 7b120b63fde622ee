// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * datcp_cc.bpf.c - the DATCP congestion control as BPF struct_ops, and the
 * sockops program that puts shuffle sockets on it.
 *
 * This file only attaches and dispatches: the arithmetic is datcp_core.h.
 * Per socket it keeps, in socket storage, the flow's algorithm state and
 * window bookkeeping. Once per window (snd_una passes the snd_nxt recorded
 * at the window's start, roughly one RTT) it runs datcp_window_step(); on a
 * congestion signal (ECN echo, once per window through CWR, or loss) the
 * kernel calls ssthresh(), which applies the flow's multiplicative decrease
 * b. A packet loss, unlike an ECN mark, means the buffer overflowed: every
 * mode then halves like standard TCP (as Linux DCTCP does), so that a flow
 * with a tiny b cannot keep a full buffer overflowing. The flow's size,
 * deadline, importance, phi and mode come from the pinned map datcp_flows
 * keyed by the socket's network namespace (cookie) and 4-tuple, so that
 * containers on one kernel with the same 4-tuple each have their own entry;
 * a new epoch there starts a new flow on the same connection. A socket without an entry runs reno with ECN and the DCTCP
 * receiver (P = 1, b = 0.5 on an ECN echo, halving on loss).
 *
 * Life of an entry: the agent registers it (before the first byte of the
 * flow); when the socket is destroyed (or leaves datcp) the release op
 * emits DATCP_EV_CLOSED with the epoch's final numbers and deletes the
 * registration and the statistics, so a later connection on the same
 * key starts unregistered. Statistics whose CLOSED event could not be
 * queued (ring full) stay in the LRU statistics map for a reader to find.
 * Events go to the ring of the socket's network namespace when its reader
 * registered one (datcp_netns_events), else to the global ring.
 *
 * Quench: a quenched flow holds cwnd 2; a timer per quenched flow lifts the
 * quench (DATCP_EV_RESUME) when the destination has been quiet, or after a
 * timeout (datcp_resume_due); the agent lifts it by bumping meta.resume.
 */
#define DATCP_CORE_TYPES_DEFINED
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "datcp_core.h"
#include "dctcp_echo.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define SOL_IP 0
#define SOL_IPV6 41
#define SOL_TCP 6
#define IP_TOS 1
#define IPV6_TCLASS 67
#define TCP_CONGESTION 13
#define TCP_CONG_NEEDS_ECN 0x2

/* Algorithm parameters (datcp_core.h, "Parameters"), set by the loader. */
const volatile struct datcp_params datcp_params = DATCP_PARAMS_DEFAULT;
/* Layout version of maps and rodata: a loader refuses or replaces pins of
 * another version (datcp_load). */
const volatile __u32 datcp_abi_version = DATCP_ABI_VERSION;
/* DSCP for precedence classes low (P < 0.9), standard, high (P >= 1.5). */
const volatile __u8 datcp_class_dscp[3] = { 8, 0, 34 };

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* The loaded parameters for the core's functions. A plain cast that drops
 * volatile let clang fold every read to the initializer above: until
 * 2026-11-27 the kernel ran tuned whatever profile was loaded. barrier_var
 * hides where the pointer points, so each read is a load from the map. */
static __always_inline const struct datcp_params *datcp_params_loaded(void)
{
	const struct datcp_params *p = (const struct datcp_params *)&datcp_params;

	barrier_var(p);
	return p;
}

struct datcp_sk {
	struct datcp_flow_state st;
	__u64 netns_ino;      /* the socket's network namespace */
	__u64 line_rate_Bps;  /* its NIC rate (0: unknown), looked up per epoch */
	struct datcp_flow_meta meta;  /* copy of the epoch's meta */
	struct datcp_flow_key key;
	__u64 epoch_acked;    /* tp->bytes_acked when the epoch began */
	__u64 prev_acked;     /* tp->bytes_acked before the current ACK */
	__u64 tx_start_acked; /* tp->bytes_acked when the next response began to send */
	__u64 fct_ns;
	__u64 win_start_ns;
	__u64 win_start_acked;
	__u32 win_next_seq;
	__u64 win_ece_bytes;  /* bytes acked with ECN echo this window */
	__u32 ece_count;
	__u32 windows;
	struct dctcp_echo echo; /* receiver: DCTCP CE state machine */
	__u8 have_meta;
	__u8 tx_start_seen;   /* tx_start_acked holds a start not yet given to an epoch */
	__u8 finished;
	__u8 met;
	__u8 dscp_class;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct datcp_sk);
} datcp_sk_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct datcp_flow_key);
	__type(value, struct datcp_flow_meta);
} datcp_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct datcp_flow_key);
	__type(value, struct datcp_flow_stats);
} datcp_stats SEC(".maps");

/* Events of sockets whose network namespace has no ring of its own. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DATCP_EVENTS_RING_BYTES);
} datcp_events SEC(".maps");

struct datcp_ns_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, DATCP_EVENTS_RING_BYTES);
};

/* The event ring of a network namespace (inode), registered by its reader
 * (datcp_events_open_netns): several agents on one kernel, one per
 * container, each read only their own namespace's events; ring buffer
 * consumption is destructive, so a shared ring handed each agent the others'. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__array(values, struct datcp_ns_ring);
} datcp_netns_events SEC(".maps");

struct datcp_addr {
	__u8 a[16];
};

/* NIC rate (bytes/s) of a network namespace (inode), for PD2TCP's and the
 * overdue test's "not even at line rate"; absent: datcp_params.line_rate_Bps. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u64);
} datcp_line_rates SEC(".maps");

/* Last ECN echo seen by any datcp socket towards a destination address:
 * the load signal for resuming quenched flows. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct datcp_addr);
	__type(value, __u64);
} datcp_marks SEC(".maps");

/* One timer per quenched flow (datcp_resume_due). */
struct datcp_quenched {
	struct bpf_timer timer;
	__u64 quenched_ns;
	__u64 netns_ino;      /* the socket's, for the RESUME event's ring */
	__u32 epoch;
	__u8 resume;          /* meta.resume at the quench */
	__u8 pad[3];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct datcp_flow_key);
	__type(value, struct datcp_quenched);
} datcp_quench_timers SEC(".maps");

/* How often a quenched flow's timer checks for a resume. */
#define DATCP_RESUME_CHECK_NS 20000000ULL
#define CLOCK_MONOTONIC 1

/* Ports whose sockets sockops switches to datcp (value unused). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u16);
	__type(value, __u8);
} datcp_ports SEC(".maps");

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline int seq_after(__u32 a, __u32 b)
{
	return (__s32)(a - b) > 0;
}

static __always_inline void datcp_key_of(const struct sock *sk, struct datcp_flow_key *k)
{
	__builtin_memset(k, 0, sizeof(*k));
	if (sk->__sk_common.skc_family == AF_INET6) {
		__builtin_memcpy(k->saddr, &sk->__sk_common.skc_v6_rcv_saddr, 16);
		__builtin_memcpy(k->daddr, &sk->__sk_common.skc_v6_daddr, 16);
	} else {
		__u32 s = sk->__sk_common.skc_rcv_saddr, d = sk->__sk_common.skc_daddr;

		k->saddr[10] = k->saddr[11] = 0xff;
		k->daddr[10] = k->daddr[11] = 0xff;
		__builtin_memcpy(&k->saddr[12], &s, 4);
		__builtin_memcpy(&k->daddr[12], &d, 4);
	}
	k->sport = sk->__sk_common.skc_num;
	k->dport = bpf_ntohs(sk->__sk_common.skc_dport);
	/* the value bpf_get_netns_cookie() and SO_NETNS_COOKIE give, read from
	 * the BTF-typed socket as the other fields are */
	k->netns_cookie = sk->__sk_common.skc_net.net->net_cookie;
}

static __always_inline void datcp_window_begin(struct datcp_sk *s, struct tcp_sock *tp, __u64 now)
{
	s->win_next_seq = tp->snd_nxt;
	s->win_start_ns = now;
	s->win_start_acked = tp->bytes_acked;
	s->win_ece_bytes = 0;
}

static __always_inline __u64 datcp_line_rate_of(__u64 netns_ino)
{
	__u64 *r = bpf_map_lookup_elem(&datcp_line_rates, &netns_ino);

	return r ? *r : datcp_params.line_rate_Bps;
}

/* Pick up a new or changed registration: a new epoch starts a new flow at
 * the bytes acked before this ACK. */
static __always_inline void datcp_refresh_meta(struct datcp_sk *s, struct tcp_sock *tp, __u64 now)
{
	struct datcp_flow_meta *m = bpf_map_lookup_elem(&datcp_flows, &s->key);

	if (!m) {
		s->have_meta = 0;
		return;
	}
	if (!s->have_meta || m->epoch != s->meta.epoch) {
		datcp_flow_state_init(&s->st, m->start_ns ? m->start_ns : now);
		/* a registration that came after the response began sending (the plugin's wait
		 * is bounded) still counts the response from its first byte */
		s->epoch_acked = s->tx_start_seen ? s->tx_start_acked : s->prev_acked;
		s->tx_start_seen = 0;
		s->finished = 0;
		s->met = 0;
		s->fct_ns = 0;
		s->windows = 0;
		s->ece_count = 0;
		s->line_rate_Bps = datcp_line_rate_of(s->netns_ino);
		datcp_window_begin(s, tp, now);
	} else if (s->st.quenched != DATCP_QS_NONE &&
		   (m->quench == DATCP_QUENCH_OFF || m->resume != s->meta.resume)) {
		/* resume order (agent or kernel timer); quenching stays armed */
		datcp_flow_state_resume(&s->st);
	}
	s->meta = *m;
	s->have_meta = 1;
}

/* A slot on the event ring of network namespace netns_ino, else on the
 * global ring; NULL when that ring is full (no fallback to the other: its
 * reader is another agent). The reserve sits in each branch on its own map,
 * as the verifier wants a known map per call. */
static __always_inline struct datcp_event *datcp_event_reserve(__u64 netns_ino)
{
	void *ring = bpf_map_lookup_elem(&datcp_netns_events, &netns_ino);

	if (ring)
		return bpf_ringbuf_reserve(ring, sizeof(struct datcp_event), 0);
	return bpf_ringbuf_reserve(&datcp_events, sizeof(struct datcp_event), 0);
}

static __always_inline void datcp_emit(struct datcp_sk *s, __u32 type, __u32 action)
{
	struct datcp_event *e = datcp_event_reserve(s->netns_ino);

	if (!e)
		return; /* ring full: statistics still carry the outcome */
	__builtin_memset(e, 0, sizeof(*e));
	e->key = s->key;
	e->type = type;
	e->epoch = s->meta.epoch;
	e->fct_ns = s->fct_ns;
	e->met = s->met;
	e->action = action;
	e->precedence_q = s->st.precedence_q;
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void datcp_publish(struct datcp_sk *s, struct tcp_sock *tp)
{
	struct datcp_flow_stats v = {
		.bytes_acked = tp->bytes_acked - s->epoch_acked,
		.r_avg_Bps = s->st.r_avg,
		.r_desired_Bps = s->st.r_desired,
		.start_ns = s->st.start_ns,
		.fct_ns = s->fct_ns,
		.epoch = s->meta.epoch,
		.urgency_q = s->st.urgency_q,
		.precedence_q = s->st.precedence_q,
		.b_q = s->st.b_q,
		.alpha_q = s->st.alpha_q,
		.cwnd = tp->snd_cwnd,
		.ece_count = s->ece_count,
		.windows = s->windows,
		.mode = s->meta.mode,
		.quench = s->st.quenched,
		.finished = s->finished,
		.met = s->met,
		.quench_ms = s->st.quenched != DATCP_QS_NONE && s->st.quenched_ns > s->st.start_ns
				     ? (__u32)((s->st.quenched_ns - s->st.start_ns) / 1000000)
				     : 0,
	};

	bpf_map_update_elem(&datcp_stats, &s->key, &v, BPF_ANY);
}

/* The quench timer: lift the quench when datcp_resume_due says so, by
 * bumping the registration's resume order (the socket reads it on its next
 * ACK), and tell the agent. Gone or resumed flows drop their timer. */
static int datcp_quench_timer_cb(void *map, struct datcp_flow_key *key, struct datcp_quenched *q)
{
	struct datcp_flow_meta *m = bpf_map_lookup_elem(&datcp_flows, key);
	struct datcp_flow_stats *st;
	struct datcp_event *e;
	struct datcp_addr dst;
	__u64 now = bpf_ktime_get_ns(), *mark;
	__u32 why;

	if (!m || m->epoch != q->epoch || m->resume != q->resume || m->quench == DATCP_QUENCH_OFF) {
		bpf_map_delete_elem(map, key);
		return 0;
	}
	__builtin_memcpy(dst.a, key->daddr, sizeof(dst.a));
	mark = bpf_map_lookup_elem(&datcp_marks, &dst);
	why = datcp_resume_due(now, q->quenched_ns, mark ? *mark : 0, datcp_params_loaded());
	if (!why) {
		bpf_timer_start(&q->timer, DATCP_RESUME_CHECK_NS, 0);
		return 0;
	}
	m->resume++;
	st = bpf_map_lookup_elem(&datcp_stats, key);
	if (st && st->epoch == q->epoch) {
		st->quench = DATCP_QS_NONE;
		st->quench_ms = 0;
	}
	e = datcp_event_reserve(q->netns_ino);
	if (e) {
		__builtin_memset(e, 0, sizeof(*e));
		e->key = *key;
		e->type = DATCP_EV_RESUME;
		e->epoch = q->epoch;
		e->reason = why;
		bpf_ringbuf_submit(e, 0);
	}
	bpf_map_delete_elem(map, key);
	return 0;
}

static __always_inline void datcp_arm_quench_timer(struct datcp_sk *s, __u64 now)
{
	struct datcp_quenched init = { .quenched_ns = now, .netns_ino = s->netns_ino,
				       .epoch = s->meta.epoch, .resume = s->meta.resume }, *q;

	if (!datcp_params.resume_quiet_ms && !datcp_params.quench_timeout_ms)
		return;
	if (bpf_map_update_elem(&datcp_quench_timers, &s->key, &init, BPF_ANY))
		return; /* no timer: the stats show the quench and its age */
	q = bpf_map_lookup_elem(&datcp_quench_timers, &s->key);
	if (!q)
		return;
	bpf_timer_init(&q->timer, &datcp_quench_timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&q->timer, datcp_quench_timer_cb);
	bpf_timer_start(&q->timer, DATCP_RESUME_CHECK_NS, 0);
}

/* Remember that the path to this socket's destination is congested now. */
static __always_inline void datcp_note_mark(struct datcp_sk *s, __u64 now)
{
	struct datcp_addr dst;
	__u64 *last;

	__builtin_memcpy(dst.a, s->key.daddr, sizeof(dst.a));
	last = bpf_map_lookup_elem(&datcp_marks, &dst);
	if (last) {
		if (now - *last > 1000000) /* at most one write a millisecond */
			*last = now;
		return;
	}
	bpf_map_update_elem(&datcp_marks, &dst, &now, BPF_ANY);
}

/* DSCP from the precedence class; only on change, and only for flows the
 * agent registered. */
static __always_inline void datcp_update_dscp(struct sock *sk, struct datcp_sk *s)
{
	__u8 cls = s->st.precedence_q < DATCP_Q * 9 / 10 ? 0 : s->st.precedence_q < DATCP_Q * 3 / 2 ? 1 : 2;
	int tos;

	if (cls == s->dscp_class)
		return;
	s->dscp_class = cls;
	tos = datcp_class_dscp[cls] << 2;
	if (sk->__sk_common.skc_family == AF_INET6)
		bpf_setsockopt(sk, SOL_IPV6, IPV6_TCLASS, &tos, sizeof(tos));
	else
		bpf_setsockopt(sk, SOL_IP, IP_TOS, &tos, sizeof(tos));
}

SEC("struct_ops/datcp_init")
void BPF_PROG(datcp_init, struct sock *sk)
{
	struct datcp_sk *s = bpf_sk_storage_get(&datcp_sk_map, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 now = bpf_ktime_get_ns();

	if (!s)
		return; /* fail open: ops below treat a missing state as reno */
	__builtin_memset(s, 0, sizeof(*s));
	datcp_key_of(sk, &s->key);
	s->netns_ino = sk->__sk_common.skc_net.net->ns.inum;
	datcp_flow_state_init(&s->st, now);
	s->dscp_class = 1;
	s->prev_acked = tp->bytes_acked;
	s->echo.prior_rcv_nxt = tp->rcv_nxt;
	datcp_window_begin(s, tp, now);
}

/* Runs on every ACK before the kernel's cwnd reduction: an episode that
 * began without datcp's ssthresh (see datcp_reduction_repair) gets Eq. 5's
 * ssthresh back before PRR sizes the next burst from it. */
static __always_inline void datcp_repair_reduction(struct sock *sk, struct datcp_sk *s)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u8 ca_state = ((struct inet_connection_sock *)sk)->icsk_ca_state;
	__u32 b_q = ca_state == TCP_CA_Recovery || !s || !s->have_meta ? DATCP_Q / 2 : s->st.b_q;
	__u32 fix = datcp_reduction_repair(ca_state == TCP_CA_CWR || ca_state == TCP_CA_Recovery,
					   tp->prior_cwnd, tp->snd_ssthresh, tp->prior_ssthresh, b_q);

	if (!fix)
		return;
	tp->snd_ssthresh = fix;
	if (tp->snd_cwnd > tp->prior_cwnd)
		tp->snd_cwnd = fix;
}

SEC("struct_ops/datcp_in_ack_event")
void BPF_PROG(datcp_in_ack_event, struct sock *sk, __u32 flags)
{
	struct datcp_sk *s = bpf_sk_storage_get(&datcp_sk_map, sk, 0, 0);
	struct tcp_sock *tp = tcp_sk(sk);
	struct datcp_window w;
	__u64 now, acked_total;
	__u32 action;

	datcp_repair_reduction(sk, s);
	if (!s)
		return;
	now = bpf_ktime_get_ns();
	if (flags & CA_ACK_ECE) {
		s->ece_count++;
		s->win_ece_bytes += tp->bytes_acked - s->prev_acked;
		datcp_note_mark(s, now);
	}
	datcp_refresh_meta(s, tp, now);
	s->prev_acked = tp->bytes_acked;
	if (!s->have_meta)
		return;
	acked_total = tp->bytes_acked - s->epoch_acked;

	if (!s->finished && (s->meta.flags & DATCP_F_SIZE_KNOWN) && acked_total >= s->meta.size_bytes) {
		s->finished = 1;
		s->fct_ns = now - s->st.start_ns;
		s->met = s->meta.deadline_ns == 0 || now <= s->meta.deadline_ns;
		datcp_emit(s, DATCP_EV_FINISHED, DATCP_QS_NONE);
		datcp_publish(s, tp);
	}
	if (!seq_after(tp->snd_una, s->win_next_seq))
		return;

	/* one window (~RTT) of data acknowledged */
	w.now_ns = now;
	w.acked_bytes = tp->bytes_acked - s->win_start_acked;
	w.window_ns = now - s->win_start_ns;
	w.acked_total = acked_total;
	w.ece_bytes = s->win_ece_bytes;
	w.rnd = bpf_get_prandom_u32();
	w.slow_start = tp->snd_cwnd < tp->snd_ssthresh;
	action = datcp_window_step(&s->st, &s->meta, &w, datcp_params_loaded(), s->line_rate_Bps);
	s->windows++;
	if (action != DATCP_QS_NONE) {
		datcp_emit(s, DATCP_EV_QUENCH, action);
		datcp_arm_quench_timer(s, now);
	}
	datcp_update_dscp(sk, s);
	datcp_publish(s, tp);
	datcp_window_begin(s, tp, now);
}

/* The socket is destroyed or leaves datcp: report the epoch's outcome and
 * forget the flow, so that nothing stays behind and a later connection on
 * the same 4-tuple starts unregistered. */
SEC("struct_ops/datcp_release")
void BPF_PROG(datcp_release, struct sock *sk)
{
	struct datcp_sk *s = bpf_sk_storage_get(&datcp_sk_map, sk, 0, 0);
	struct tcp_sock *tp = tcp_sk(sk);
	struct datcp_flow_meta *m;
	struct datcp_event *e;
	struct datcp_flow_key key;
	__u32 epoch;

	if (!s)
		return;
	key = s->key;
	m = bpf_map_lookup_elem(&datcp_flows, &key);
	if (!m && !bpf_map_lookup_elem(&datcp_stats, &key))
		return; /* never registered (receivers, plain sockets) */
	/* registered but no ACK seen since: report the registration's epoch */
	epoch = s->have_meta || !m ? s->meta.epoch : m->epoch;
	bpf_map_delete_elem(&datcp_flows, &key);
	bpf_map_delete_elem(&datcp_quench_timers, &key);
	e = datcp_event_reserve(s->netns_ino);
	if (!e)
		return; /* ring full: the LRU statistics keep the outcome */
	__builtin_memset(e, 0, sizeof(*e));
	e->key = key;
	e->type = DATCP_EV_CLOSED;
	e->epoch = epoch;
	e->fct_ns = s->fct_ns;
	e->met = s->met;
	e->finished = s->finished;
	e->action = s->st.quenched;
	e->precedence_q = s->st.precedence_q;
	e->bytes_acked = tp->bytes_acked - s->epoch_acked;
	bpf_ringbuf_submit(e, 0);
	bpf_map_delete_elem(&datcp_stats, &key);
}

SEC("struct_ops/datcp_ssthresh")
__u32 BPF_PROG(datcp_ssthresh_op, struct sock *sk)
{
	struct datcp_sk *s = bpf_sk_storage_get(&datcp_sk_map, sk, 0, 0);
	struct tcp_sock *tp = tcp_sk(sk);

	/* Eq. 5 / DCTCP family: cwnd * (1 - b) on ECN; reno's b = 0.5 without
	 * meta (losses are set to b = 0.5 afterwards, see datcp_react_to_loss) */
	return datcp_ssthresh(tp->snd_cwnd, s && s->have_meta ? s->st.b_q : DATCP_Q / 2);
}

SEC("struct_ops/datcp_cong_avoid")
void BPF_PROG(datcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct datcp_sk *s = bpf_sk_storage_get(&datcp_sk_map, sk, 0, 0);
	struct tcp_sock *tp = tcp_sk(sk);

	/* Algorithm 2: a quenched flow holds the minimum window until the
	 * application suspends (or kills) it and later resumes it. */
	if (s && s->have_meta && s->st.quenched != DATCP_QS_NONE) {
		tp->snd_cwnd = DATCP_CWND_MIN;
		return;
	}
	tcp_reno_cong_avoid(sk, ack, acked);
}

/* Loss: standard TCP's halving, whatever the mode's b (see the top). */
static __always_inline void datcp_react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tp->snd_ssthresh = tp->snd_cwnd > 2 * DATCP_CWND_MIN ? tp->snd_cwnd >> 1 : DATCP_CWND_MIN;
}

/* Entering fast recovery: the kernel has just taken ssthresh() (the ECN
 * decrease); replace it with the loss response. */
SEC("struct_ops/datcp_set_state")
void BPF_PROG(datcp_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Recovery)
		datcp_react_to_loss(sk);
}

SEC("struct_ops/datcp_cwnd_event")
void BPF_PROG(datcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct datcp_sk *s;

	if (ev == CA_EVENT_LOSS) { /* retransmission timeout */
		datcp_react_to_loss(sk);
		return;
	}
	if (ev == CA_EVENT_TX_START) {
		s = bpf_sk_storage_get(&datcp_sk_map, sk, 0, 0);
		/* sending after idle with no flow running: a response begins (later idles
		 * within it, window or application limited, are not its start) */
		if (s && !s->tx_start_seen && (!s->have_meta || s->finished)) {
			s->tx_start_acked = tcp_sk(sk)->bytes_acked;
			s->tx_start_seen = 1;
		}
		return;
	}
	if (ev != CA_EVENT_ECN_IS_CE && ev != CA_EVENT_ECN_NO_CE)
		return;
	s = bpf_sk_storage_get(&datcp_sk_map, sk, 0, 0);
	if (s)
		dctcp_echo_update(sk, &s->echo, ev == CA_EVENT_ECN_IS_CE);
}

SEC("struct_ops/datcp_undo_cwnd")
__u32 BPF_PROG(datcp_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops datcp = {
	.init = (void *)datcp_init,
	.release = (void *)datcp_release,
	.ssthresh = (void *)datcp_ssthresh_op,
	.cong_avoid = (void *)datcp_cong_avoid,
	.in_ack_event = (void *)datcp_in_ack_event,
	.cwnd_event = (void *)datcp_cwnd_event,
	.set_state = (void *)datcp_set_state,
	.undo_cwnd = (void *)datcp_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "datcp",
};

static const char datcp_name[] = "datcp";

static __always_inline int datcp_port_wanted(__u16 port)
{
	return bpf_map_lookup_elem(&datcp_ports, &port) != 0;
}

/* Put sockets on configured ports on datcp: the active side before its SYN
 * (so that NEEDS_ECN negotiates ECN), listeners so that accepted sockets
 * inherit it, and accepted sockets of listeners that predate the port.
 * A route's congctl replaces the active side's congestion control after
 * CONNECT_CB (tcp_connect_init): such a socket still asks for ECN in its SYN
 * (NEEDS_ECN) and is put back on datcp once established. */
SEC("sockops")
int datcp_sockops(struct bpf_sock_ops *ops)
{
	__u16 lport = ops->local_port, rport = bpf_ntohl(ops->remote_port);

	switch (ops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		if (datcp_port_wanted(rport) || datcp_port_wanted(lport))
			bpf_setsockopt(ops, SOL_TCP, TCP_CONGESTION, (void *)datcp_name, sizeof(datcp_name));
		break;
	case BPF_SOCK_OPS_NEEDS_ECN:
		if (datcp_port_wanted(rport) || datcp_port_wanted(lport))
			ops->reply = 1;
		break;
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		if (datcp_port_wanted(lport))
			bpf_setsockopt(ops, SOL_TCP, TCP_CONGESTION, (void *)datcp_name, sizeof(datcp_name));
		break;
	}
	return 1;
}
