/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * fqcn_core.h - QCN (IEEE 802.1Qau) and FQCN (shared/seeds/fqcn.txt: Zhang,
 * Ansari, "On Mitigating TCP Incast in Data Center Networks", INFOCOM 2011)
 * as pure integer functions.
 *
 * QCN has two halves. The congestion point (CP, the switch port) samples
 * arriving frames; at a sample it computes Fb = -(Q_off + w Q_delta) from the
 * queue Q in bytes (Eq. 1), and when Fb < 0 sends a congestion notification
 * message (CNM) carrying |Fb| quantised to 6 bits to the source of the
 * sampled frame. The next sample comes after a number of arrived bytes that
 * shrinks as |Fb| grows (the sampling table). The reaction point (RP, a rate
 * limiter at the source) cuts its current rate CR by G_d |Fb| on a CNM
 * (Eq. 2) after saving it as the target rate TR, and raises it on its own
 * through a byte counter (BC) and a timer, each counting cycles: five cycles
 * of fast recovery (CR halfway to TR), then active increase (TR += R_AI) and,
 * once both counters are past fast recovery, hyper-active increase
 * (TR += i R_HAI).
 *
 * FQCN changes only the CP (section III): it counts the arrivals A_i of each
 * flow between samples, and when Fb < 0 it sends a CNM to every flow at or
 * over its equal share of the arrivals, each with its part of the feedback,
 * weighted by its arrivals.
 *
 * The tools (fqcn-cp, fqcn-cbr) and the C unit tests (tests/core_test.c
 * against tests/vectors/) include this very file. No floats, no division by
 * zero. Queues and counters are bytes, rates bit/s, times nanoseconds.
 */
#ifndef FQCN_CORE_H
#define FQCN_CORE_H

#include <stdbool.h>
#include <stdint.h>

/* w, the weight of Q_delta in Eq. 1: "taken to be 2 for the baseline
 * implementation" (section II-A); IEEE8021-CN-MIB cpFeedbackWeight 1 = 2^1. */
#define FQCN_W 2
/* "quantized to 6 bits" (section II-A). */
#define FQCN_FB_MAX_Q 63U

/*
 * |Fb| saturates at Q_eq (2w + 1): the queue at twice Q_eq and still growing
 * by Q_eq per sample. This is the scale of the Linux QCN congestion point
 * that follows the QCN pseudo-code (sch_fifo.c, qcn_algorithm: Fb clamped to
 * -Q_EQ * (2 * QCN_W + 1)); the quantisation is linear over it.
 */
static inline uint64_t fqcn_fb_range(uint64_t q_eq)
{
	return q_eq * (2 * FQCN_W + 1);
}

/* Eq. 1: Fb = -(Q_off + w Q_delta), Q_off = Q - Q_eq, Q_delta = Q - Q_old. */
static inline int64_t fqcn_fb(uint64_t q, uint64_t q_old, uint64_t q_eq)
{
	int64_t q_off = (int64_t)q - (int64_t)q_eq;
	int64_t q_delta = (int64_t)q - (int64_t)q_old;

	return -(q_off + FQCN_W * q_delta);
}

/* |Fb| of a negative Fb on 6 bits, floor(63 |Fb| / range) saturated at 63;
 * 0 when Fb >= 0, where QCN sends no message. */
static inline uint32_t fqcn_fb_quantize(int64_t fb, uint64_t q_eq)
{
	uint64_t range = fqcn_fb_range(q_eq), mag;

	if (fb >= 0 || range == 0)
		return 0;
	mag = (uint64_t)(-fb);
	if (mag >= range)
		return FQCN_FB_MAX_Q;
	return (uint32_t)(mag * FQCN_FB_MAX_Q / range);
}

/*
 * The sampling table: bytes of arrivals until the next sample, by the top
 * three bits of the quantised |Fb| (150, 75, 50, 37.5, 30, 25, 21.5, 18.5
 * KB, KB = 1024 B: the mark table of the QCN pseudo-code as the Linux QCN
 * congestion point carries it, qcn_mark_table; the base 150 KB is the
 * standard's cpMinSampleBase of 150000 octets in IEEE8021-CN-MIB). For
 * 1500-byte frames it samples 1% of frames at |Fb| < 8 rising to 8% at
 * |Fb| >= 56: the paper's Fig. 1b draws 1% to 10%.
 */
static inline uint32_t fqcn_sample_interval(uint32_t fb_q)
{
	static const uint32_t table[8] = { 153600, 76800, 51200, 38400, 30720, 25600, 22016, 18944 };

	return table[(fb_q > FQCN_FB_MAX_Q ? FQCN_FB_MAX_Q : fb_q) >> 3];
}

/* The table's base, its interval at |Fb| < 8: 150 KB. */
#define FQCN_SAMPLE_BASE 153600U

/* The congestion point of one switch port. */
struct fqcn_cp {
	uint64_t q_eq;	      /* Q_eq, the operating point, bytes */
	uint64_t q_old;	      /* Q at the previous sample */
	int64_t sample_left;  /* bytes that may still arrive before the next sample */
	uint32_t sample_base; /* the interval at |Fb| < 8; the table scales with it */
};

/* The sampling interval at |Fb| = fb_q, the table scaled to the point's base
 * (FQCN_SAMPLE_BASE: the standard's; a testbed that scales the paper's bytes
 * down scales its sampling with them, README). */
static inline uint32_t fqcn_cp_interval(const struct fqcn_cp *cp, uint32_t fb_q)
{
	return (uint32_t)((uint64_t)fqcn_sample_interval(fb_q) * cp->sample_base / FQCN_SAMPLE_BASE);
}

static inline void fqcn_cp_init(struct fqcn_cp *cp, uint64_t q_eq, uint32_t sample_base)
{
	cp->q_eq = q_eq;
	cp->q_old = 0;
	cp->sample_base = sample_base;
	cp->sample_left = fqcn_cp_interval(cp, 0);
}

/* A frame of len bytes arrived: is it the sampled one? */
static inline bool fqcn_cp_arrival(struct fqcn_cp *cp, uint32_t len)
{
	cp->sample_left -= len;
	return cp->sample_left < 0;
}

/*
 * At a sampled frame, with the port's queue q: the quantised |Fb| of Eq. 1
 * (0: no message), Q_old becomes q and the next sampling interval is the
 * table's for this |Fb| (counted afresh, as the Linux congestion point does).
 */
static inline uint32_t fqcn_cp_sample(struct fqcn_cp *cp, uint64_t q)
{
	uint32_t fb_q = fqcn_fb_quantize(fqcn_fb(q, cp->q_old, cp->q_eq), cp->q_eq);

	cp->q_old = q;
	cp->sample_left = fqcn_cp_interval(cp, fb_q);
	return fb_q;
}

/*
 * FQCN's fair-share test (section III): a flow "which send[s] packets with
 * the sending rate over [its] share of the link capacity" gets a CNM. The
 * share is measured on arrivals in the sampling interval: the equal share
 * (sum A_j) / N, N the flows that sent in it (A_j > 0). A flow at its share
 * counts as over it, A_i >= (sum A_j) / N: with a strict test, N equal flows
 * that together overload the port (the paper's four CBR sources) would never
 * be told, and neither would a flow alone.
 */
static inline bool fqcn_over_share(uint64_t a_i, uint64_t a_sum, uint32_t n_active)
{
	return a_i > 0 && a_i * n_active >= a_sum;
}

/*
 * FQCN's feedback (section III) for n flows with arrivals a[i]: fb_out[i] is
 * the quantised |Fb(i)| of flow i's CNM (0: none). The seed's copy of the
 * formula is cut after "Fb(i) = A_i"; taken here is the reading of the
 * paper's published text,
 *     Fb(i) = A_i / (sum over the flows k over their share of A_k) * Fb,
 * so the flows over their share split the port's feedback in proportion to
 * their arrivals and the sum of their cuts is QCN's single cut. (The other
 * reading, a sum over all flows, gives each culprit less than its part and
 * the port less than Fb in total whenever some flow is below its share.)
 * Computed on the 6-bit |Fb|, floored: a culprit whose part rounds to 0 gets
 * no message. Returns the number of CNMs.
 */
static inline uint32_t fqcn_fair_feedback(const uint64_t *a, uint32_t n, uint32_t fb_q, uint32_t *fb_out)
{
	uint64_t a_sum = 0, a_high = 0;
	uint32_t i, active = 0, sent = 0;

	for (i = 0; i < n; i++) {
		fb_out[i] = 0;
		a_sum += a[i];
		active += a[i] > 0;
	}
	if (fb_q == 0 || active == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (fqcn_over_share(a[i], a_sum, active))
			a_high += a[i];
	if (a_high == 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (!fqcn_over_share(a[i], a_sum, active))
			continue;
		fb_out[i] = (uint32_t)(fb_q * a[i] / a_high);
		sent += fb_out[i] > 0;
	}
	return sent;
}

/*
 * Reaction point parameters. The seed lost the values, and the QCN
 * pseudo-code v2.0 the paper cites for them was not found; the defaults
 * (FQCN_RP_PARAMS_QAU) are IEEE 802.1Qau's, as the standard's MIB module
 * IEEE8021-CN-MIB gives them: rpgByteReset 150000 octets (BC_LIMIT), rpgTimeReset 15 ms (T),
 * rpgThreshold 5 (the fast-recovery cycles), rpgAiRate 5 Mbit/s (R_AI),
 * rpgHaiRate 50 Mbit/s (R_HAI), rpgMinRate 5 Mbit/s. They are sized for
 * 10 Gbit/s links; a slower testbed scales the rates (README).
 */
struct fqcn_rp_params {
	uint64_t bc_limit;	/* BC_LIMIT, bytes of a fast-recovery byte-counter cycle */
	uint64_t t_ns;		/* T, the timer's fast-recovery cycle */
	uint32_t fr_threshold;	/* cycles of fast recovery per counter */
	uint64_t r_ai;		/* R_AI, bit/s */
	uint64_t r_hai;		/* R_HAI, bit/s */
	uint64_t min_rate;	/* CR never falls below it, bit/s */
	uint64_t line_rate;	/* the NIC's rate: CR and TR never exceed it, bit/s */
};

#define FQCN_RP_PARAMS_QAU(line)                                                                             \
	{ .bc_limit = 150000, .t_ns = 15000000, .fr_threshold = 5, .r_ai = 5000000, .r_hai = 50000000,     \
	  .min_rate = 5000000, .line_rate = (line) }

/* Rate limiter state of one flow. */
struct fqcn_rp {
	uint64_t cr, tr;	  /* current and target rate, bit/s */
	uint64_t bc_bytes;	  /* bytes sent in the byte counter's current cycle */
	uint64_t timer_start_ns;  /* start of the timer's current cycle */
	uint32_t bc_stage;	  /* byte-counter cycles completed since the last CNM */
	uint32_t timer_stage;	  /* timer cycles completed since the last CNM */
	bool limited;		  /* a CNM installed the limiter; before it the source sends at line rate */
};

static inline void fqcn_rp_init(struct fqcn_rp *rp, const struct fqcn_rp_params *p)
{
	rp->cr = rp->tr = p->line_rate;
	rp->bc_bytes = 0;
	rp->timer_start_ns = 0;
	rp->bc_stage = rp->timer_stage = 0;
	rp->limited = false;
}

/*
 * Eq. 2 on a CNM with quantised |Fb| fb_q: TR = CR, CR = CR (1 - G_d |Fb|)
 * with G_d |Fb_max| = 1/2, so G_d = 1 / (2 * 63) (the standard's rpgGd is
 * 2^-7 = 1/128: at most 63/128, a hair under one half). Both counters start
 * over in fast recovery.
 */
static inline void fqcn_rp_on_cnm(struct fqcn_rp *rp, const struct fqcn_rp_params *p, uint32_t fb_q,
				  uint64_t now_ns)
{
	if (fb_q > FQCN_FB_MAX_Q)
		fb_q = FQCN_FB_MAX_Q;
	rp->limited = true;
	rp->tr = rp->cr;
	rp->cr -= rp->cr * fb_q / (2 * FQCN_FB_MAX_Q);
	if (rp->cr < p->min_rate)
		rp->cr = p->min_rate;
	rp->bc_bytes = 0;
	rp->bc_stage = rp->timer_stage = 0;
	rp->timer_start_ns = now_ns;
}

/*
 * One rate increase, at the end of a byte-counter or timer cycle
 * (section II-B): both counters in fast recovery (stage <= threshold): TR
 * stays, CR = (CR + TR) / 2; one counter past it: active increase, TR +=
 * R_AI; both past it: hyper-active increase, TR += i R_HAI with
 * i = min(BC stage, timer stage) - threshold. CR then moves halfway to TR.
 */
static inline void fqcn_rp_increase(struct fqcn_rp *rp, const struct fqcn_rp_params *p)
{
	uint32_t th = p->fr_threshold;

	if (rp->bc_stage > th && rp->timer_stage > th) {
		uint32_t i = (rp->bc_stage < rp->timer_stage ? rp->bc_stage : rp->timer_stage) - th;

		rp->tr += (uint64_t)i * p->r_hai;
	} else if (rp->bc_stage > th || rp->timer_stage > th) {
		rp->tr += p->r_ai;
	}
	if (rp->tr > p->line_rate)
		rp->tr = p->line_rate;
	rp->cr = (rp->cr + rp->tr) / 2;
}

/* Bytes of the byte counter's next cycle: BC_LIMIT in fast recovery, BC_LIMIT / 2 after. */
static inline uint64_t fqcn_rp_bc_cycle(const struct fqcn_rp *rp, const struct fqcn_rp_params *p)
{
	return rp->bc_stage < p->fr_threshold ? p->bc_limit : p->bc_limit / 2;
}

/* Length of the timer's next cycle: T in fast recovery, T / 2 after. */
static inline uint64_t fqcn_rp_timer_cycle(const struct fqcn_rp *rp, const struct fqcn_rp_params *p)
{
	return rp->timer_stage < p->fr_threshold ? p->t_ns : p->t_ns / 2;
}

/* The source sent `bytes`: each completed byte-counter cycle is one increase.
 * Returns the number of increases. */
static inline uint32_t fqcn_rp_on_sent(struct fqcn_rp *rp, const struct fqcn_rp_params *p, uint64_t bytes)
{
	uint32_t n = 0;
	uint64_t cycle;

	if (!rp->limited)
		return 0;
	rp->bc_bytes += bytes;
	while ((cycle = fqcn_rp_bc_cycle(rp, p)) > 0 && rp->bc_bytes >= cycle) {
		rp->bc_bytes -= cycle;
		rp->bc_stage++;
		fqcn_rp_increase(rp, p);
		n++;
	}
	return n;
}

/* The clock reads now_ns: each completed timer cycle is one increase.
 * Returns the number of increases. */
static inline uint32_t fqcn_rp_on_time(struct fqcn_rp *rp, const struct fqcn_rp_params *p, uint64_t now_ns)
{
	uint32_t n = 0;
	uint64_t cycle;

	if (!rp->limited)
		return 0;
	while ((cycle = fqcn_rp_timer_cycle(rp, p)) > 0 && now_ns - rp->timer_start_ns >= cycle) {
		rp->timer_start_ns += cycle;
		rp->timer_stage++;
		fqcn_rp_increase(rp, p);
		n++;
	}
	return n;
}

/* The gap between frames of `bytes` at the current rate, ns. */
static inline uint64_t fqcn_rp_gap_ns(const struct fqcn_rp *rp, uint64_t bytes)
{
	uint64_t r = rp->cr ? rp->cr : 1;

	return bytes * 8ULL * 1000000000ULL / r;
}

#endif /* FQCN_CORE_H */
