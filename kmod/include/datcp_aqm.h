/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * datcp_aqm.h - the emulated switch port's queue and marking arithmetic.
 *
 * The kernel here has no RED qdisc, so a switch port is HTB (link rate) +
 * bfifo (buffer) with a tc program in front that sees every packet before
 * the shaper. It keeps a byte-accurate virtual queue per strict-priority
 * band, drained as a fluid at the link rate: the elapsed time since the last
 * packet buys rate * dt bytes of service, given to band 0 first, then 1, 2.
 * A packet of band b waits behind the bytes of bands 0..b, so that sum is
 * the queue it sees for marking; the whole port's bytes decide drops
 * (shared buffer). Marking: RED on the instantaneous queue (DATCP Table 1:
 * weight 1.0), the DCTCP step at K, or PFDCT's dynamic threshold (section
 * 3.2.5), which does not mark the short-flow bands.
 *
 * Pure integer functions, shared by datcp_switch.bpf.c and the C tests.
 */
#ifndef DATCP_AQM_H
#define DATCP_AQM_H

#include "datcp_abi.h"
#ifndef __bpf__
#include "datcp_core.h" /* datcp_isqrt, for the loader's K_i */
#endif

#ifndef DATCP_Q
#define DATCP_Q 1024U
#endif

/* Idle gaps longer than this drain any buffer; capping keeps rate * dt
 * within 64 bits for rates below 2^32 B/s (34 Gbit/s). */
#define AQM_MAX_GAP_NS (1ULL << 32)
/* PFDCT: LQV = (1 - h) LQV + h LQ with h = 1/16, K_t moves by one MTU. */
#define AQM_PFDCT_SHIFT_H 4U
#define AQM_PFDCT_STEP_BYTES 1500U
/* PFDCT marks only the long-flow band; retransmissions and short flows
 * (bands 0 and 1 in its preset) are never constrained. */
#define AQM_PFDCT_LONG_BAND (DATCP_BANDS - 1)
#define AQM_PFDCT_SHORT_BAND 1U
/* N of K_u = M / N counts the long flows seen within this window (16.8 ms):
 * every flow sends at least a packet a window when the 150 KB buffer of the
 * paper's port (100 packets) drains at 100 Mbit/s in 12 ms. */
#define AQM_PFDCT_FLOW_WINDOW_NS (1ULL << 24)

/* Bytes the link serves in dt nanoseconds. */
static __always_inline __u64 aqm_service_bytes(__u64 dt_ns, __u64 rate_bps)
{
	__u64 rate_Bps = rate_bps / 8;

	if (dt_ns > AQM_MAX_GAP_NS)
		dt_ns = AQM_MAX_GAP_NS;
	if (rate_Bps >> 32)
		return (dt_ns / 1000) * rate_Bps / 1000000;
	return dt_ns * rate_Bps / 1000000000ULL;
}

/* Strict-priority fluid drain of the per-band virtual queues. */
static __always_inline void aqm_drain(__u64 vq[DATCP_BANDS], __u64 service)
{
	int b;

	for (b = 0; b < DATCP_BANDS; b++) {
		__u64 served = vq[b] < service ? vq[b] : service;

		vq[b] -= served;
		service -= served;
	}
}

/* Bytes a packet of band `band` finds ahead of it (bands 0..band). */
static __always_inline __u64 aqm_queue_ahead(const __u64 vq[DATCP_BANDS], __u32 band)
{
	__u64 q = 0;
	int b;

	for (b = 0; b < DATCP_BANDS; b++)
		if ((__u32)b <= band)
			q += vq[b];
	return q;
}

static __always_inline __u64 aqm_queue_total(const __u64 vq[DATCP_BANDS])
{
	return aqm_queue_ahead(vq, DATCP_BANDS - 1);
}

/* The port's queue at now_ns (>= the last enqueue): the virtual queues
 * drained by what the link served since, without changing the state; what
 * a packet arriving then would find (datcpctl switch queue samples it). */
static __always_inline __u64 aqm_queue_now(const struct datcp_port_config *cfg,
					   const struct datcp_port_state *st, __u64 now_ns)
{
	__u64 vq[DATCP_BANDS];
	int b;

	for (b = 0; b < DATCP_BANDS; b++)
		vq[b] = st->vq_bytes[b];
	if (now_ns > st->last_ns)
		aqm_drain(vq, aqm_service_bytes(now_ns - st->last_ns, cfg->rate_bps));
	return aqm_queue_total(vq);
}

/* RED on the instantaneous queue: no mark below min, always at or above
 * max, in between with p = max_p (q - min) / (max - min). rnd is uniform. */
static __always_inline int aqm_red_mark(__u64 q, __u32 min, __u32 max, __u32 maxp_q, __u32 rnd)
{
	__u64 p_q;

	if (q < min)
		return 0;
	if (q >= max || max <= min)
		return 1;
	p_q = (__u64)maxp_q * (q - min) / (max - min);
	return (rnd & (DATCP_Q - 1)) < p_q;
}

/* DCTCP: mark when the queue exceeds K. */
static __always_inline int aqm_step_mark(__u64 q, __u32 k)
{
	return q > k;
}

#ifndef __bpf__
/* PFDCT's ideal marking threshold K_i (Eq. 15) for a port of rate_bps with
 * round-trip time rtt_ns and packets of mtu bytes, in bytes: the least K that
 * keeps the sawtooth's minimum queue above 0 for N = 1 (Eq. 13-14,
 * 2K^2 + 3K + 2 - C*RTT/N >= 0), K_i = (sqrt(8 C RTT - 7) - 3) / 4 packets;
 * 0 when C*RTT is at most 2 packets. Computed in Q8 packets: C*RTT beyond
 * 8,000 packets saturates (12 MB at 1500 B). The loader computes it once per
 * port configuration; the BPF program only reads the result. */
static __always_inline __u32 aqm_pfdct_ideal_k(__u64 rate_bps, __u64 rtt_ns, __u32 mtu)
{
	__u64 bdp_q10, x_q10, s_q8;

	if (!mtu)
		return 0;
	bdp_q10 = aqm_service_bytes(rtt_ns, rate_bps) * DATCP_Q / mtu;
	if (bdp_q10 > 8000ULL * DATCP_Q)
		bdp_q10 = 8000ULL * DATCP_Q;
	x_q10 = 8 * bdp_q10; /* 8 C RTT, Q10 packets */
	if (x_q10 <= 16ULL * DATCP_Q) /* sqrt(8 C RTT - 7) <= 3 */
		return 0;
	s_q8 = datcp_isqrt((x_q10 - 7ULL * DATCP_Q) << 6);
	return (__u32)((s_q8 - 3 * 256) / 4 * mtu / 256);
}
#endif

/* PFDCT 3.2.5: LQV = (1 - h) LQV + h LQ (Eq. 4); K_t moves toward keeping
 * LQV at the ideal K_i (Eq. 5): down (more marking) while LQV > K_i, up while
 * LQV < K_i, within [K_l, K_u] = [0, M / N] for a buffer of M bytes shared by
 * N long flows (n_flows 0 counts as 1). Returns the new K_t. */
static __always_inline __u64 aqm_pfdct_threshold(__u64 *avg_q, __u64 k_t, __u64 q, __u32 k_ideal,
						 __u32 buffer, __u32 n_flows)
{
	__u64 k_up = buffer / (n_flows ? n_flows : 1);

	*avg_q = *avg_q - (*avg_q >> AQM_PFDCT_SHIFT_H) + (q >> AQM_PFDCT_SHIFT_H);
	if (*avg_q > k_ideal)
		k_t = k_t > AQM_PFDCT_STEP_BYTES ? k_t - AQM_PFDCT_STEP_BYTES : 0;
	else if (*avg_q < k_ideal)
		k_t = k_t + AQM_PFDCT_STEP_BYTES;
	return k_t < k_up ? k_t : k_up;
}

/* PFDCT Algorithm 1 (SetPrio): retransmissions in the highest band; of the
 * rest, a packet with ECN enabled is a long flow's, in the lowest band, the
 * one that is marked. The DSCP picks the band first (dscp_band, so that the
 * port can also carry other traffic); an ECN-capable packet whose DSCP maps
 * to the unmarked short-flow band is moved to the long band, so that an ECT
 * flow (a DATCP one, say) never escapes marking there. */
static __always_inline __u32 aqm_pfdct_band(__u32 dscp_band, __u32 ecn)
{
	if (dscp_band == AQM_PFDCT_SHORT_BAND && ecn != 0)
		return AQM_PFDCT_LONG_BAND;
	return dscp_band;
}

/* N for K_u = M / N: the long flows seen on the port in the last window,
 * counted as set bits of a 64-bucket bitmap of their flow hashes (two flows
 * in one bucket count once, so N is low by a few when it nears 64).
 * seen[0] fills during the current window, seen[1] is the previous one. */
struct aqm_pfdct_flows {
	__u64 seen[2];
	__u64 window_start_ns;
};

/* A packet at now_ns, of a long flow with hash `hash` when is_long; returns N
 * (at least 1). */
static __always_inline __u32 aqm_pfdct_count_flow(struct aqm_pfdct_flows *f, __u32 hash, int is_long,
						  __u64 now_ns)
{
	__u32 a, b;

	if (now_ns - f->window_start_ns > AQM_PFDCT_FLOW_WINDOW_NS) {
		f->seen[1] = f->seen[0];
		f->seen[0] = 0;
		f->window_start_ns = now_ns;
	}
	if (is_long)
		f->seen[0] |= 1ULL << (hash & 63);
	a = (__u32)__builtin_popcountll(f->seen[0]);
	b = (__u32)__builtin_popcountll(f->seen[1]);
	a = a > b ? a : b;
	return a ? a : 1;
}

enum aqm_verdict {
	AQM_PASS = 0,
	AQM_MARK = 1,
	AQM_DROP = 2,
};

/* One packet of len bytes and band `band` arriving at now_ns: drain, then
 * drop if the buffer is full, else enqueue and decide marking. Updates the
 * state and counters (marks are counted by the caller once CE is set, as
 * only ECN-capable packets can carry it). pfdct_flows: N of PFDCT's K_u. */
static __always_inline int aqm_enqueue(const struct datcp_port_config *cfg,
				       struct datcp_port_state *st, __u64 now_ns, __u32 len,
				       __u32 band, __u32 rnd, __u32 pfdct_flows)
{
	struct datcp_band_counters *c;
	__u64 q, total;
	int mark = 0;

	if (band >= DATCP_BANDS)
		band = DATCP_BANDS - 1;
	c = &st->band[band];
	if (now_ns > st->last_ns) {
		aqm_drain(st->vq_bytes, aqm_service_bytes(now_ns - st->last_ns, cfg->rate_bps));
		st->last_ns = now_ns;
	}
	total = aqm_queue_total(st->vq_bytes);
	if (total + len > cfg->buffer_bytes) {
		c->drops++;
		return AQM_DROP;
	}
	st->vq_bytes[band] += len;
	c->bytes += len;
	c->packets++;
	if (st->vq_bytes[band] > c->peak_queue_bytes)
		c->peak_queue_bytes = st->vq_bytes[band];
	if (total + len > st->peak_queue_bytes)
		st->peak_queue_bytes = total + len;
	q = aqm_queue_ahead(st->vq_bytes, band);

	switch (cfg->mark_mode) {
	case DATCP_MARK_RED:
		mark = aqm_red_mark(q, cfg->red_min_bytes, cfg->red_max_bytes, cfg->red_maxp_q, rnd);
		break;
	case DATCP_MARK_STEP:
		mark = aqm_step_mark(q, cfg->k_bytes);
		break;
	case DATCP_MARK_PFDCT:
		st->pfdct_k_t = aqm_pfdct_threshold(&st->pfdct_avg_q, st->pfdct_k_t, total + len,
						    cfg->k_bytes, cfg->buffer_bytes, pfdct_flows);
		mark = band == AQM_PFDCT_LONG_BAND && aqm_step_mark(q, (__u32)st->pfdct_k_t);
		break;
	}
	return mark ? AQM_MARK : AQM_PASS;
}

#endif
