// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * pfdct_cc.bpf.c - the sender side of PFDCT (shared/seeds/pfdct.txt, 3.2.3-
 * 3.2.4): a BPF struct_ops congestion control "pfdct" and the sender's tc
 * egress program that makes its classes visible to the switch.
 *
 * This file only attaches and dispatches: the arithmetic is pfdct_core.h
 * (and dctcp_alpha_update of datcp_core.h for Eq. 2).
 *
 * Congestion control. Every socket starts short (DSCP CS4). Once a window
 * (snd_una passes the snd_nxt recorded at the window's start, ~one RTT) it
 * updates alpha from the fraction of bytes acknowledged with ECN echo (Eq. 2,
 * g = 1/16), estimates its queue from the RTT (Eq. 1), and classifies the
 * flow (3.2.3: long after long_bytes sent with a window of long_cwnd
 * segments); a long flow gets DSCP AF11. An ECN echo reduces the window to
 * cwnd (1 - alpha / 2) once a window (Eq. 3, through the kernel's CWR and
 * ssthresh); without marks the window grows as reno's (Eq. 3: +1 a window
 * in congestion avoidance; Algorithm 2's IncreaseWindow is reno's per-ACK
 * step). A loss halves the window, as Linux DCTCP does. As a receiver the
 * socket echoes CE exactly (DCTCP's state machine, dctcp_echo.h). Every
 * pfdct socket negotiates ECN (TCP_CONG_NEEDS_ECN): a short flow's segments
 * are turned Not-ECT on the way out, by the program below.
 *
 * Egress program (tc clsact egress of the sender's interface). For IPv4 TCP
 * data segments of a PFDCT class (DSCP CS4 or AF11) it keeps the highest
 * sequence sent per flow: a segment that ends at or before it is a
 * retransmission and leaves with DSCP EF (Algorithm 1's IsRetransmitted; the
 * paper's switch looks the sequence up in its PIT, the sender knows it
 * exactly). A short flow's segments leave Not-ECT (3.2.1). Other packets,
 * and IPv6, pass untouched.
 */
#define DATCP_CORE_TYPES_DEFINED
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "pfdct_core.h"
#include "dctcp_echo.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define SOL_IP 0
#define IP_TOS 1
#define TCP_CONG_NEEDS_ECN 0x2
#define TC_ACT_OK 0
#define ETH_P_IP 0x0800
#define ETH_HLEN 14
#define IPPROTO_TCP 6
#define IP_CSUM_OFF (ETH_HLEN + 10)
#define ECN_MASK 3U

/* 3.2.3's long-flow rule, set by the loader (datcpctl pfdct load). */
const volatile __u64 pfdct_long_bytes = PFDCT_LONG_BYTES_DEFAULT;
const volatile __u32 pfdct_long_cwnd = PFDCT_LONG_CWND_DEFAULT;

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

struct pfdct_sk {
	struct pfdct_flow_stats st;
	struct pfdct_flow_key key;
	struct dctcp_echo echo;
	__u64 prev_acked;       /* tp->bytes_acked before the current ACK */
	__u64 win_start_acked;  /* tp->bytes_acked at the window's start */
	__u64 win_ece_bytes;    /* bytes acked with ECN echo this window */
	__u32 win_next_seq;     /* the window ends when snd_una passes it */
	__u32 dscp;             /* DSCP last set on the socket */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pfdct_sk);
} pfdct_sk_map SEC(".maps");

/* Per-flow state, for datcpctl pfdct stats and the tests. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pfdct_flow_key);
	__type(value, struct pfdct_flow_stats);
} pfdct_stats SEC(".maps");

/* Highest sequence end sent per flow, seen by the egress program. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pfdct_flow_key);
	__type(value, __u32);
} pfdct_highest_seq SEC(".maps");

/* Egress counters, index: the class the CC gave the segment's flow. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct pfdct_tx_counters);
} pfdct_tx_counts SEC(".maps");

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline void pfdct_set_dscp(struct sock *sk, struct pfdct_sk *s, __u32 dscp)
{
	int tos = dscp << 2;

	if (s->dscp == dscp || sk->__sk_common.skc_family != AF_INET)
		return;
	s->dscp = dscp;
	bpf_setsockopt(sk, SOL_IP, IP_TOS, &tos, sizeof(tos));
}

static __always_inline void pfdct_window_begin(struct pfdct_sk *s, struct tcp_sock *tp)
{
	s->win_next_seq = tp->snd_nxt;
	s->win_start_acked = tp->bytes_acked;
	s->win_ece_bytes = 0;
}

SEC("struct_ops/pfdct_init")
void BPF_PROG(pfdct_init, struct sock *sk)
{
	struct pfdct_sk *s = bpf_sk_storage_get(&pfdct_sk_map, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	struct tcp_sock *tp = tcp_sk(sk);

	if (!s)
		return; /* fail open: the ops below run reno without state */
	__builtin_memset(s, 0, sizeof(*s));
	s->key.saddr = sk->__sk_common.skc_rcv_saddr;
	s->key.daddr = sk->__sk_common.skc_daddr;
	s->key.sport = sk->__sk_common.skc_num;
	s->key.dport = bpf_ntohs(sk->__sk_common.skc_dport);
	s->st.cls = PFDCT_CLASS_SHORT;
	s->st.alpha_q = DATCP_Q; /* as DCTCP (and datcp's DCTCP mode): start cautious */
	s->prev_acked = tp->bytes_acked;
	s->echo.prior_rcv_nxt = tp->rcv_nxt;
	s->dscp = ~0U;
	pfdct_set_dscp(sk, s, PFDCT_DSCP_SHORT);
	pfdct_window_begin(s, tp);
}

SEC("struct_ops/pfdct_in_ack_event")
void BPF_PROG(pfdct_in_ack_event, struct sock *sk, __u32 flags)
{
	struct pfdct_sk *s = bpf_sk_storage_get(&pfdct_sk_map, sk, 0, 0);
	struct tcp_sock *tp = tcp_sk(sk);
	__u64 acked;

	if (!s)
		return;
	acked = tp->bytes_acked - s->prev_acked;
	s->prev_acked = tp->bytes_acked;
	if (flags & CA_ACK_ECE) {
		s->win_ece_bytes += acked;
		s->st.ece_bytes += acked;
	}
	if (tp->snd_cwnd > s->st.max_cwnd)
		s->st.max_cwnd = tp->snd_cwnd;
	if ((__s32)(tp->snd_una - s->win_next_seq) <= 0)
		return;

	/* one window (~RTT) acknowledged */
	/* Eq. 2: alpha = (1 - g) alpha + g F, F the fraction of bytes marked; g = 1/16 */
	s->st.alpha_q = dctcp_alpha_update(s->st.alpha_q, s->win_ece_bytes,
					   tp->bytes_acked - s->win_start_acked, DCTCP_G_Q);
	s->st.rtt_us = tp->srtt_us >> 3;
	s->st.rtt_min_us = tp->rtt_min.s[0].v;
	/* Eq. 1: LQ = (RTT_c - RTT_min) / RTT_c * cwnd */
	s->st.lq = pfdct_queue_estimate(s->st.rtt_us, s->st.rtt_min_us, tp->snd_cwnd);
	s->st.cls = pfdct_classify(s->st.cls, tp->bytes_acked, s->st.max_cwnd, pfdct_long_bytes,
				   pfdct_long_cwnd);
	pfdct_set_dscp(sk, s, s->st.cls == PFDCT_CLASS_LONG ? PFDCT_DSCP_LONG : PFDCT_DSCP_SHORT);
	s->st.windows++;
	s->st.bytes_acked = tp->bytes_acked;
	s->st.cwnd = tp->snd_cwnd;
	bpf_map_update_elem(&pfdct_stats, &s->key, &s->st, BPF_ANY);
	pfdct_window_begin(s, tp);
}

/* Eq. 3, F > 0: the kernel calls this once a window on ECN echo (CWR). */
SEC("struct_ops/pfdct_ssthresh")
__u32 BPF_PROG(pfdct_ssthresh_op, struct sock *sk)
{
	struct pfdct_sk *s = bpf_sk_storage_get(&pfdct_sk_map, sk, 0, 0);

	return pfdct_ssthresh(tcp_sk(sk)->snd_cwnd, s ? s->st.alpha_q : DATCP_Q);
}

SEC("struct_ops/pfdct_cong_avoid")
void BPF_PROG(pfdct_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

/* Loss: halve (alpha = 1 in Eq. 3), whatever alpha says. */
static __always_inline void pfdct_react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tp->snd_ssthresh = pfdct_ssthresh(tp->snd_cwnd, DATCP_Q);
}

SEC("struct_ops/pfdct_set_state")
void BPF_PROG(pfdct_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Recovery)
		pfdct_react_to_loss(sk);
}

SEC("struct_ops/pfdct_cwnd_event")
void BPF_PROG(pfdct_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct pfdct_sk *s;

	if (ev == CA_EVENT_LOSS) { /* retransmission timeout */
		pfdct_react_to_loss(sk);
		return;
	}
	if (ev != CA_EVENT_ECN_IS_CE && ev != CA_EVENT_ECN_NO_CE)
		return;
	s = bpf_sk_storage_get(&pfdct_sk_map, sk, 0, 0);
	if (s)
		dctcp_echo_update(sk, &s->echo, ev == CA_EVENT_ECN_IS_CE);
}

SEC("struct_ops/pfdct_undo_cwnd")
__u32 BPF_PROG(pfdct_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops pfdct = {
	.init = (void *)pfdct_init,
	.ssthresh = (void *)pfdct_ssthresh_op,
	.cong_avoid = (void *)pfdct_cong_avoid,
	.in_ack_event = (void *)pfdct_in_ack_event,
	.cwnd_event = (void *)pfdct_cwnd_event,
	.set_state = (void *)pfdct_set_state,
	.undo_cwnd = (void *)pfdct_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN,
	.name = "pfdct",
};

/* Rewrite the IPv4 TOS byte (DSCP and ECN) and the header checksum. */
static __always_inline void pfdct_set_tos(struct __sk_buff *skb, __u8 ver_ihl, __u8 old_tos, __u8 new_tos)
{
	__u16 old_w = bpf_htons(((__u16)ver_ihl << 8) | old_tos);
	__u16 new_w = bpf_htons(((__u16)ver_ihl << 8) | new_tos);

	bpf_l3_csum_replace(skb, IP_CSUM_OFF, old_w, new_w, 2);
	bpf_skb_store_bytes(skb, ETH_HLEN + 1, &new_tos, 1, 0);
}

SEC("tc")
int pfdct_tx(struct __sk_buff *skb)
{
	struct pfdct_flow_key key = {};
	struct pfdct_tx_counters *c;
	struct iphdr ip;
	struct tcphdr th;
	__u32 cls, dscp, ihl, payload, end, *highest;
	__u8 tos;

	if (skb->protocol != bpf_htons(ETH_P_IP) ||
	    bpf_skb_load_bytes(skb, ETH_HLEN, &ip, sizeof(ip)) || ip.protocol != IPPROTO_TCP)
		return TC_ACT_OK;
	dscp = ip.tos >> 2;
	if (dscp != PFDCT_DSCP_SHORT && dscp != PFDCT_DSCP_LONG)
		return TC_ACT_OK;
	ihl = (ip.ihl & 0xf) * 4;
	if (ihl < sizeof(ip) || bpf_skb_load_bytes(skb, ETH_HLEN + ihl, &th, sizeof(th)))
		return TC_ACT_OK;
	payload = bpf_ntohs(ip.tot_len);
	if (payload <= ihl + th.doff * 4)
		return TC_ACT_OK; /* no data: SYN, pure ACK, bare FIN */
	payload -= ihl + th.doff * 4;
	cls = dscp == PFDCT_DSCP_SHORT ? PFDCT_CLASS_SHORT : PFDCT_CLASS_LONG;
	c = bpf_map_lookup_elem(&pfdct_tx_counts, &cls);
	if (c)
		__sync_fetch_and_add(&c->packets, 1);
	key.saddr = ip.saddr;
	key.daddr = ip.daddr;
	key.sport = bpf_ntohs(th.source);
	key.dport = bpf_ntohs(th.dest);
	end = bpf_ntohl(th.seq) + payload;
	tos = ip.tos;
	highest = bpf_map_lookup_elem(&pfdct_highest_seq, &key);
	if (highest && pfdct_is_retransmit(end, *highest)) {
		tos = PFDCT_DSCP_RETRANSMIT << 2 | (tos & ECN_MASK);
		if (c)
			__sync_fetch_and_add(&c->retransmits, 1);
	} else if (highest) {
		*highest = end;
	} else {
		bpf_map_update_elem(&pfdct_highest_seq, &key, &end, BPF_ANY);
	}
	if (cls == PFDCT_CLASS_SHORT && (tos & ECN_MASK)) {
		tos &= ~ECN_MASK;
		if (c)
			__sync_fetch_and_add(&c->ect_cleared, 1);
	}
	if (tos != ip.tos)
		pfdct_set_tos(skb, *(__u8 *)&ip, ip.tos, tos);
	return TC_ACT_OK;
}
