/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dcudp_core.h - the control law of DCUDP (shared/seeds/dcudp.txt, Ye,
 * Mhamdi, Hamdi, CloudNet 2014), as pure integer functions.
 *
 * A DCUDP sender starts in UDP Mode: it sends as fast as the application
 * offers (section V-A: CBR at 1.6x the bottleneck) and the receiver sends no
 * ACKs. Rates below are bounded by C, the bottleneck's capacity. The first CE-marked datagram puts the
 * receiver in Congestion Mode: it sends one ACK per RTT (ECE when a CE came
 * in since the last ACK), the sender answers each with an ACK2, from which
 * the receiver measures the RTT (EWMA, alpha = 1/8). The sender adapts a
 * data rate Rate_data under a ceiling Rate_max (Fig. 4): an ECE cuts both
 * by 1 / (1 + (n_ecn / n_ack) / W) where W = Rate_data * RTT is the packets
 * in flight per RTT (Eq. 1, 2); an ACK without ECE doubles Rate_data until
 * it passes Rate_max; a NAK drops Rate_data to one packet per RTT and
 * halves Rate_max; after a cut the rates are frozen until the next data
 * packet leaves. The receiver watches the RTT trend (Eq. 3) and the trend
 * of the CE fraction (Eq. 4) in windows of K samples and, when both have
 * fallen to the end and no CE arrives, tells the sender to return to UDP
 * Mode (Conditions 1 and 2 of section IV-C).
 *
 * The host library and the C unit tests (tests/core_test.c against the
 * vectors in tests/vectors/) include this very file. No floats, no
 * division by zero. Rates are packets per second, times are nanoseconds,
 * fractions are Q10 (DCUDP_Q = 1024 is 1.0).
 */
#ifndef DCUDP_CORE_H
#define DCUDP_CORE_H

#include <stdbool.h>
#include <stdint.h>

#define DCUDP_Q 1024U
#define DCUDP_NSEC_PER_SEC 1000000000ULL

/* RTT = (1 - alpha) RTT + alpha RTT_current, alpha = 0.125 (section IV-A.2). */
#define DCUDP_RTT_ALPHA_SHIFT 3U

/* Thresholds of Conditions 1 and 2 (section IV-C footnote: theta_ecn 0.5,
 * theta_RTT 0.2, beta 2). */
#define DCUDP_THETA_ECN_Q (DCUDP_Q / 2)
#define DCUDP_THETA_RTT_Q (DCUDP_Q / 5)
#define DCUDP_BETA 2U

/*
 * K, the window size of getDelayTrend() and getEcnTrend(). The paper leaves
 * it to "the average congestion length and RTT". Condition 2 needs every one
 * of the K - 1 steps in the RTT window to be non-increasing; once the queue
 * is empty the RTT samples are noise, and K - 1 non-increasing steps of
 * noise come up with probability 1/(K-1)!: 1/6 per ACK2 for K = 4, so the
 * receiver leaves Congestion Mode some 6 RTTs after the marks stop, while
 * K = 8 would wait ~5000 RTTs. The CE window then spans K^2 = 16 data
 * packets, 2 ms at 100 Mbit/s: a burst of marks shorter than that still
 * counts as one congestion period.
 */
#define DCUDP_K 4U

/* Sender state of the rate law in Congestion Mode (Fig. 4). */
struct dcudp_rate {
	uint64_t rate_data; /* Rate_data, packets/s */
	uint64_t rate_max;  /* Rate_max, packets/s */
	uint64_t rate_line; /* C / PktSize, the bottleneck: no rate goes above it */
	uint32_t n_ack;	    /* ACKs (and NAKs) in this Congestion Mode period */
	uint32_t n_ecn;	    /* ECN-echo ACKs (and NAKs) in it */
	bool freeze;	    /* rate adjustment lock, released by the next data packet sent */
};

/* Rate_data = C * 10^6 / (8 * PktSize) packets/s (section IV-A.3, C in Mbit/s here). */
static inline uint64_t dcudp_line_rate(uint64_t link_bps, uint32_t pkt_bytes)
{
	uint64_t r;

	if (pkt_bytes == 0)
		return 1;
	r = link_bps / (8ULL * pkt_bytes);
	return r ? r : 1;
}

/* Interval_data = 1 / Rate_data, in ns. */
static inline uint64_t dcudp_interval_ns(uint64_t rate_pps)
{
	return DCUDP_NSEC_PER_SEC / (rate_pps ? rate_pps : 1);
}

/* 1/RTT packets/s: the floor of both rates, one data packet per RTT (section IV-A.3). */
static inline uint64_t dcudp_rate_floor(uint64_t rtt_ns)
{
	uint64_t r;

	if (rtt_ns == 0)
		rtt_ns = 1;
	r = DCUDP_NSEC_PER_SEC / rtt_ns;
	return r ? r : 1;
}

/*
 * rate / (1 + n_ecn / (n_ack * Rate_data * RTT))  (Eq. 1, 2)
 *   = rate * n_ack * Rate_data * RTT / (n_ack * Rate_data * RTT + n_ecn)
 * with RTT in ns: rate * n_ack * w / (n_ack * w + n_ecn * 10^9), w = Rate_data * RTT_ns.
 * Products in 128 bits: rates < 2^40, RTT < 2^40 ns, n_ack < 2^32.
 */
static inline uint64_t dcudp_ecn_cut(uint64_t rate, uint64_t rate_data, uint32_t n_ecn, uint32_t n_ack,
				     uint64_t rtt_ns)
{
	unsigned __int128 w = (unsigned __int128)rate_data * rtt_ns * (n_ack ? n_ack : 1);
	unsigned __int128 den = w + (unsigned __int128)n_ecn * DCUDP_NSEC_PER_SEC;

	if (den == 0)
		return rate;
	return (uint64_t)((unsigned __int128)rate * w / den);
}

/* At least one packet per RTT, at most the line rate: on a path whose RTT is
 * shorter than a packet's time at the line rate (a bare veth), the line wins. */
static inline uint64_t dcudp_clamp_rate(uint64_t rate, uint64_t floor, uint64_t line)
{
	if (rate < floor)
		rate = floor;
	return rate > line ? line : rate;
}

/* Step 2 of entering Congestion Mode: Rate_data = Rate_max = C / PktSize, counters cleared. */
static inline void dcudp_rate_enter(struct dcudp_rate *s, uint64_t rate_line)
{
	s->rate_line = rate_line;
	s->rate_data = rate_line;
	s->rate_max = rate_line;
	s->n_ack = 0;
	s->n_ecn = 0;
	s->freeze = false;
}

/*
 * Fig. 4, "If (ACK)". The printed speed-up reads
 *     if (Rate_data > Rate_max) { Rate_max++; Rate_max = Rate_data; } else Rate_data *= 2;
 * where the second assignment makes the increment dead and lets Rate_max
 * follow Rate_data up without bound, so Rate_max would cap nothing; and
 * read with the assignment reversed (Rate_data = Rate_max) the uncapped
 * doubling alternates every RTT between 2 Rate_max and Rate_max. Taken here,
 * after the text's definition of Rate_max as "the maximum Rate_data a
 * sender is allowed to achieve": Rate_data doubles up to Rate_max; once it is
 * there the ceiling probes up by one packet per RTT (the unit of the paper's
 * own floor) and Rate_data follows it:
 *     if (Rate_data >= Rate_max) { Rate_max += 1/RTT; Rate_data = Rate_max; }
 *     else Rate_data = min(2 Rate_data, Rate_max);
 * Neither rate exceeds C / PktSize.
 */
static inline void dcudp_rate_on_ack(struct dcudp_rate *s, bool ece, uint64_t rtt_ns)
{
	uint64_t floor = dcudp_rate_floor(rtt_ns);

	s->n_ack++;
	if (ece) {
		s->n_ecn++;
		if (!s->freeze) {
			uint64_t old_data = s->rate_data;

			/* Eq. 1 and Eq. 2: one factor, from the Rate_data before the cut */
			s->rate_data = dcudp_ecn_cut(s->rate_data, old_data, s->n_ecn, s->n_ack, rtt_ns);
			s->rate_max = dcudp_ecn_cut(s->rate_max, old_data, s->n_ecn, s->n_ack, rtt_ns);
			s->rate_max = dcudp_clamp_rate(s->rate_max, floor, s->rate_line);
			s->rate_data = dcudp_clamp_rate(s->rate_data, floor, s->rate_line);
			s->freeze = true;
		}
		return;
	}
	if (s->rate_data >= s->rate_max) {
		s->rate_max = dcudp_clamp_rate(s->rate_max + floor, floor, s->rate_line);
		s->rate_data = s->rate_max;
	} else {
		s->rate_data = dcudp_clamp_rate(s->rate_data * 2 < s->rate_max ? s->rate_data * 2 : s->rate_max, floor,
						s->rate_line);
	}
}

/* Fig. 4, "If (NAK)": both counters grow; Rate_data = 1/RTT, Rate_max halves. */
static inline void dcudp_rate_on_nak(struct dcudp_rate *s, uint64_t rtt_ns)
{
	uint64_t floor = dcudp_rate_floor(rtt_ns);

	s->n_ack++;
	s->n_ecn++;
	if (s->freeze)
		return;
	s->rate_data = dcudp_clamp_rate(floor, floor, s->rate_line);
	s->rate_max = dcudp_clamp_rate(s->rate_max / 2, floor, s->rate_line);
	s->freeze = true;
}

/* "Each time the sender sends out a data packet after Interval_data, it sets freeze as false." */
static inline void dcudp_rate_on_data_sent(struct dcudp_rate *s)
{
	s->freeze = false;
}

/* RTT = (1 - alpha) RTT + alpha RTT_current, alpha = 1/8 (section IV-A.2). */
static inline uint64_t dcudp_rtt_update(uint64_t rtt_ns, uint64_t sample_ns)
{
	if (rtt_ns == 0)
		return sample_ns;
	return rtt_ns - (rtt_ns >> DCUDP_RTT_ALPHA_SHIFT) + (sample_ns >> DCUDP_RTT_ALPHA_SHIFT);
}

/* A window of the K most recent samples (RTTs in ns, or CE fractions in Q10). */
struct dcudp_window {
	uint64_t v[DCUDP_K];
	uint32_t n;    /* samples stored, at most K */
	uint32_t next; /* slot of the next sample: the oldest is replaced once full */
};

static inline void dcudp_window_push(struct dcudp_window *w, uint64_t sample)
{
	w->v[w->next] = sample;
	w->next = (w->next + 1) % DCUDP_K;
	if (w->n < DCUDP_K)
		w->n++;
}

static inline uint64_t dcudp_window_latest(const struct dcudp_window *w)
{
	return w->n ? w->v[(w->next + DCUDP_K - 1) % DCUDP_K] : 0;
}

/*
 * Eq. 3 and Eq. 4: the fraction (Q10) of samples not larger than the one
 * before them, over the consecutive pairs in the window, oldest first. The
 * first sample has no predecessor, so a full window has K - 1 pairs; with
 * fewer than two samples there is no trend and the result is 0.
 */
static inline uint32_t dcudp_trend(const struct dcudp_window *w)
{
	uint32_t i, le = 0, start = w->n < DCUDP_K ? 0 : w->next;

	if (w->n < 2)
		return 0;
	for (i = 1; i < w->n; i++) {
		uint64_t cur = w->v[(start + i) % DCUDP_K], prev = w->v[(start + i - 1) % DCUDP_K];

		if (cur <= prev)
			le++;
	}
	return le * DCUDP_Q / (w->n - 1);
}

/* The CE fraction of K data packets, Q10 (getEcnTrend(): p_ecn). */
static inline uint32_t dcudp_p_ecn(uint32_t ce, uint32_t packets)
{
	return packets ? (uint32_t)((uint64_t)(ce > packets ? packets : ce) * DCUDP_Q / packets) : 0;
}

enum dcudp_exit_step {
	DCUDP_STAY = 0,	     /* keep ACKing every RTT */
	DCUDP_SLOW_ACKS = 1, /* Condition 1: Interval_ACK = beta * RTT_idle */
	DCUDP_QUIT = 2,	     /* Condition 2 after Condition 1: ACK with OBS = 0 */
};

/*
 * Section IV-C, evaluated at each ACK2. The paper prints Condition 1 as
 * "P_pecn < theta_ecn AND P_RTT < theta_RTT AND latest p_ecn = 0". Read that
 * way it can never hold once the marks stop: a window of CE fractions that
 * falls to zero and stays there has every step non-increasing, P = 1, and
 * the receiver would never leave Congestion Mode. Taken here: Condition 1
 * is the trends starting to fall, P_pecn >= theta_ecn and P_RTT >= theta_RTT
 * (latest p_ecn = 0), and Condition 2, checked only after Condition 1 held,
 * is both trends falling throughout (P = 1, latest p_ecn = 0). Both need
 * full windows (K samples each), so that a single ACK2 cannot end a period.
 */
static inline enum dcudp_exit_step dcudp_exit_check(const struct dcudp_window *rtt_w,
						    const struct dcudp_window *pecn_w, bool cond1_held)
{
	uint32_t p_rtt, p_ecn;

	if (rtt_w->n < DCUDP_K || pecn_w->n < DCUDP_K || dcudp_window_latest(pecn_w) != 0)
		return DCUDP_STAY;
	p_rtt = dcudp_trend(rtt_w);
	p_ecn = dcudp_trend(pecn_w);
	if (cond1_held && p_rtt == DCUDP_Q && p_ecn == DCUDP_Q)
		return DCUDP_QUIT;
	if (p_ecn >= DCUDP_THETA_ECN_Q && p_rtt >= DCUDP_THETA_RTT_Q)
		return DCUDP_SLOW_ACKS;
	return DCUDP_STAY;
}

/*
 * The paper's inequality for th_max (section IV-A.1), in packets:
 *   th_max + N (RTT_idle + th_max Delay) / Interval - (RTT_idle + th_max Delay) / Delay <= Max_qsize
 * Returns the largest th_max (<= max_qsize) for which it holds, 0 if none.
 * Times in ns; Delay is the time the link takes per packet.
 */
static inline uint32_t dcudp_th_max(uint32_t max_qsize, uint32_t n, uint64_t rtt_idle_ns, uint64_t delay_ns,
				    uint64_t interval_ns)
{
	uint32_t th;

	if (delay_ns == 0 || interval_ns == 0)
		return 0;
	for (th = max_qsize; th > 0; th--) {
		/* all terms scaled by interval * delay to stay in integers */
		unsigned __int128 t = (unsigned __int128)rtt_idle_ns + (unsigned __int128)th * delay_ns;
		unsigned __int128 lhs = (unsigned __int128)th * interval_ns * delay_ns + (unsigned __int128)n * t * delay_ns;
		unsigned __int128 rhs = (unsigned __int128)max_qsize * interval_ns * delay_ns + t * interval_ns;

		if (lhs <= rhs)
			return th;
	}
	return 0;
}

#endif /* DCUDP_CORE_H */
