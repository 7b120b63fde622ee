/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * datcp_core.h - the one algorithm core of DATCP and its peers.
 *
 * DATCP (Deadline-Aware TCP, see shared/seeds/datcp.txt) keeps, per flow,
 * an urgency U that follows the gap between the rate the flow needs to meet
 * its deadline (R_desired) and the rate it gets (R_avg), mixes it with an
 * operator-set importance I into a precedence P (Algorithm 1), and turns P
 * into the multiplicative-decrease factor b of an ECN-driven AIMD window
 * (Eq. 5): flows with high precedence back off less. When a flow cannot meet
 * its deadline and raising its urgency no longer buys throughput, it is
 * quenched with a probability that falls with precedence (Algorithm 2).
 *
 * The peers it is measured against are modes of the same core:
 *   DCTCP  - alpha = (1 - g) alpha + g F, cwnd * (1 - alpha / 2)
 *   D2TCP  - penalty alpha^d, d = T_c / D clamped to [0.5, 2]
 *   PD2TCP - penalty alpha^p, p = R_D / R_A clamped to [0.5, 2], with the
 *            extreme cases and early priority inversion of pd2tcp.txt 2.3
 *
 * Everything here is a pure integer function: no floats, no unbounded
 * loops, no division by zero. The BPF programs include this file and the C
 * unit tests include the very same file, checked against shared vectors in
 * kmod/tests/vectors/.
 *
 * Fixed point: Q10 (DATCP_Q = 1024 is 1.0) for U, I, P, phi, b, g, alpha and
 * probabilities; rates are bytes per second in u64; times are nanoseconds.
 */
#ifndef DATCP_CORE_H
#define DATCP_CORE_H

#ifndef DATCP_CORE_TYPES_DEFINED
#include <linux/types.h>
#endif
#include "datcp_abi.h"

#define DATCP_NSEC_PER_SEC 1000000000ULL
#define DATCP_RATE_INF (~0ULL) /* "infinite" desired rate: deadline passed */

/* Urgency bounds. U_MIN keeps P above 1/3 so that b = 2/(3P+1) stays < 1
 * (U_MIN 0.5 gives b 0.8). U_max is a load-time parameter (below). */
#define DATCP_U_MIN_Q (DATCP_Q / 2)
#define DATCP_U_INIT_Q DATCP_Q /* standard TCP: precedence 1 */
#define DATCP_P_MIN_Q (DATCP_Q / 2)

/* ---- Parameters (struct datcp_params, set at load; profile "yield" is the
 * default (DATCP_PROFILE_DEFAULT), "paper" takes DATCP's value wherever the
 * paper states one) ----
 *
 * G (g_max_q): paper 0.05 per window (section 4.2) with RTTs of ~300 us; a
 *   queue-bound 100 Mbit/s path here has RTTs of ~10 ms, 30x fewer windows
 *   a second, so tuned G 0.1 is still a slower urgency ramp in time.
 * alpha 0.1 (section 4.1) in both. ewma_new_weight: the paper prints
 *   R_avg = alpha R_avg + (1 - alpha) R_last, which with alpha 0.1 is hardly
 *   an average; per-window rates on a queue-bound path swing 2-5x within one
 *   sawtooth and urgency chasing them went both ways at random. Tuned weighs
 *   the new sample alpha, as DCTCP's EWMA does.
 * guard_shift: tuned aims to finish T_remain/16 early, so that the noise of
 *   a window-based rate around R_desired does not land a flow just after
 *   its deadline half of the time; paper 0 (R_desired = V_remain/T_remain).
 *   That guard vanishes with T_remain: a flow held at V_remain /
 *   (15/16 T_remain) ends at the deadline itself (a 10 MB flow with D = 1.4 s
 *   beside a background flow ended at 1.33-1.42 s, median 1.39; aimed D/16
 *   early instead, at 1.27-1.38 s). D/16 waits for mixed runs (issue 22).
 * slow_start_raise_only: tuned lets slow-start rates (probes, not the
 *   flow's share) raise urgency but not lower it; paper: every window counts.
 * u_max_q: the paper gives no U_max; 10 in both (b 0.065). Eq. 5 assumes
 *   every flow backs off once per congestion epoch; with RED marking at
 *   random, small windows escape marks and shares grow slower than P.
 *   Measured on fig8: at U 6 a deadline flow got ~1.8x a standard flow, at
 *   U 10 ~3.5x (D = 3 s needs 4:1); U 16 overflowed the buffer.
 * theta_max: the paper gives no Theta; 3 in both.
 * quench_p_max_q, quench_draws: paper p_quench = 1 - P / P_max with P_max the
 *   top precedence, one draw; that is 0 for flows at the top precedence, and
 *   identical flows all get there together and would never be quenched.
 *   Tuned: P_max = 2 U_max (p >= 1/2) spread over 4 draws, so that usually
 *   one flow is quenched and the others then meet (fig11: 3 of 4).
 * hopeful_below_u_max: tuned never quenches while urgency can still grow
 *   (section 3.3: quench flows that "cannot meet deadlines with the current
 *   R_avg and Gamma_profit <= 0", i.e. cannot get more share); paper: a flow
 *   that cannot meet at its R_avg may be quenched.
 * overdue_give_up (both): a flow whose deadline passed with bytes left, or
 *   that could not finish even at line rate, drops to U_min instead of
 *   climbing to U_max (R_desired infinite) and taking share from flows that
 *   can still meet theirs: PD2TCP's early priority inversion (pd2tcp.txt
 *   2.3.4) applied to urgency.
 * resume_quiet_ms (both 200 ms, ~10 windows of a queue-bound path): section
 *   3.3, suspended flows "continue to transmit data when network load is
 *   light": light = no datcp flow of this host towards the quenched flow's
 *   destination saw an ECN echo for that long.
 * quench_timeout_ms (both 10 s): a quench that nobody resumed (an event lost
 *   to a full ring buffer) is lifted after this long.
 * dctcp_g_q (all profiles 1/16, 64 in Q10): DCTCP's g, as in the DCTCP paper
 *   and Linux; a setting because DCUDP's section V-A runs DCTCP with g = 0.3
 *   (307 in Q10, 0.2998). Used by the DCTCP family (dctcp, d2tcp, pd2tcp).
 * agnostic_u_min (profile "yield", the default): deadline-agnostic flows (no deadline)
 *   run at U_min, P 0.5, b 0.8 instead of standard TCP's P 1, b 0.5, as
 *   PD2TCP gives background flows its lowest priority (pd2tcp.txt 2.3.2,
 *   p = 0.5). Eq. 5 assumes every flow backs off once per congestion epoch;
 *   on this path a deadline flow at U_max got only ~3.5x a standard flow's
 *   share (results/2026-11-26-mixed-stats: tight flows need 6-8x), so the
 *   background must yield more for deadline flows to gain. A deadline flow
 *   ahead of its deadline sinks to U_min too and shares equally with it. */
/* DCTCP's default g = 1/16, as in the DCTCP paper and Linux (Q10). */
#define DCTCP_G_Q (DATCP_Q / 16)
#define DATCP_PARAMS_TUNED_FIELDS                                                      \
	.g_max_q = 102, .alpha_q = 102, .u_max_q = 10 * DATCP_Q, .theta_max = 3,        \
	.quench_p_max_q = 20 * DATCP_Q, .quench_draws = 4, .resume_quiet_ms = 200,      \
	.quench_timeout_ms = 10000, .dctcp_g_q = DCTCP_G_Q, .ewma_new_weight = 1,       \
	.guard_shift = 4, .slow_start_raise_only = 1, .hopeful_below_u_max = 1,          \
	.overdue_give_up = 1, .line_rate_Bps = 0
#define DATCP_PARAMS_TUNED { DATCP_PARAMS_TUNED_FIELDS, .agnostic_u_min = 0 }
/* tuned, and deadline-agnostic flows yield (agnostic_u_min) */
#define DATCP_PARAMS_YIELD { DATCP_PARAMS_TUNED_FIELDS, .agnostic_u_min = 1 }
/* The default (datcpctl load without --profile, datcp_load without params, the BPF
 * program's initializer): yield, ahead of tuned on the paper's mixed traffic over 10
 * interleaved seeds (bench/results/2026-11-27-mixed-fix, "Choosing the default"). */
#define DATCP_PROFILE_DEFAULT "yield"
#define DATCP_PARAMS_DEFAULT DATCP_PARAMS_YIELD
#define DATCP_PARAMS_PAPER                                                             \
	{ .g_max_q = 51, .alpha_q = 102, .u_max_q = 10 * DATCP_Q, .theta_max = 3,       \
	  .quench_p_max_q = 10 * DATCP_Q, .quench_draws = 1, .resume_quiet_ms = 200,    \
	  .quench_timeout_ms = 10000, .dctcp_g_q = DCTCP_G_Q, .ewma_new_weight = 0,     \
	  .guard_shift = 0, .slow_start_raise_only = 0, .hopeful_below_u_max = 0,       \
	  .overdue_give_up = 1, .agnostic_u_min = 0, .line_rate_Bps = 0 }

/* D2TCP / PD2TCP exponent range [0.5, 2]. */
#define D2TCP_D_MIN_Q (DATCP_Q / 2)
#define D2TCP_D_MAX_Q (2 * DATCP_Q)
/* PD2TCP: deadlines under 5 ms get the top priority p = 2. */
#define PD2TCP_TIGHT_NS 5000000ULL

#define DATCP_CWND_MIN 2U

/* Loops with data-dependent branches (square roots, powers) are BPF global
 * functions: the verifier checks them once for any argument instead of
 * walking every path at every call site. Host builds inline them. */
#if defined(__bpf__)
#define DATCP_LOOP_FN __attribute__((noinline))
#else
#define DATCP_LOOP_FN static inline
#endif

static __always_inline __u64 datcp_min64(__u64 a, __u64 b) { return a < b ? a : b; }
static __always_inline __u64 datcp_max64(__u64 a, __u64 b) { return a > b ? a : b; }

/* bytes * 1e9 / ns without overflowing: scale the divisor down instead of
 * the dividend up when bytes is large. Returns 0 for ns == 0. */
static __always_inline __u64 datcp_rate_Bps(__u64 bytes, __u64 ns)
{
	if (ns == 0)
		return 0;
	if (bytes <= (~0ULL) / DATCP_NSEC_PER_SEC)
		return bytes * DATCP_NSEC_PER_SEC / ns;
	if (ns < DATCP_NSEC_PER_SEC)
		return DATCP_RATE_INF - 1; /* > 18 EB/s: saturate */
	return bytes / (ns / DATCP_NSEC_PER_SEC);
}

/* Algorithm 1: R_avg = R_last in slow start, else an average of R_avg and
 * R_last with alpha: the new sample weighs alpha (ewma_new_weight) or, as
 * printed in the paper, 1 - alpha. */
static __always_inline __u64 datcp_r_avg(__u64 r_avg, __u64 r_last, int slow_start,
					 const struct datcp_params *p)
{
	__u32 w_new = p->ewma_new_weight ? p->alpha_q : DATCP_Q - p->alpha_q;

	if (slow_start || r_avg == 0)
		return r_last;
	/* split the products so that rates up to 2^53 B/s cannot overflow */
	return (r_avg >> 10) * (DATCP_Q - w_new) + (r_last >> 10) * w_new +
	       (((r_avg & 1023) * (DATCP_Q - w_new) + (r_last & 1023) * w_new) >> 10);
}

/* Algorithm 1: R_desired = V_remain / T_remain; infinite once the deadline
 * has passed with bytes left, 0 when nothing is left. */
static __always_inline __u64 datcp_desired_rate(__u64 v_remain, __s64 t_remain_ns)
{
	if (v_remain == 0)
		return 0;
	if (t_remain_ns <= 0)
		return DATCP_RATE_INF;
	return datcp_rate_Bps(v_remain, (__u64)t_remain_ns);
}

/* Algorithm 1: g = |R_desired - R_avg| / R_avg, capped at G (Q10).
 * With R_avg = 0 the gap is unbounded, so g = G. */
static __always_inline __u32 datcp_granularity(__u64 r_desired, __u64 r_avg, __u32 g_max_q)
{
	__u64 gap = r_desired > r_avg ? r_desired - r_avg : r_avg - r_desired;

	if (r_avg == 0)
		return gap ? g_max_q : 0;
	/* gap / r_avg > G  <=>  gap * 1024 > G * r_avg; compare in a safe order */
	if (gap / DATCP_Q >= r_avg || gap > (r_avg / DATCP_Q + 1) * g_max_q)
		return g_max_q;
	if (gap > (~0ULL) / DATCP_Q) /* then r_avg > 2^44: drop its low bits */
		return (__u32)datcp_min64(gap / (r_avg / DATCP_Q), g_max_q);
	return (__u32)datcp_min64(gap * DATCP_Q / r_avg, g_max_q);
}

/* Algorithm 1: U += g if R_desired > R_avg (up to U_max), else U -= g
 * (down to U_min). *increased tells Algorithm 2 that U was pushed up (also
 * when U_max capped it: the flow asked for more share). */
static __always_inline __u32 datcp_urgency_update(__u32 u_q, __u64 r_desired, __u64 r_avg,
						  __u32 g_max_q, __u32 u_max_q, int *increased)
{
	__u32 g = datcp_granularity(r_desired, r_avg, g_max_q);

	*increased = 0;
	if (r_desired > r_avg) {
		u_q += g;
		if (u_q > u_max_q)
			u_q = u_max_q;
		*increased = g > 0;
	} else {
		u_q = u_q > g ? u_q - g : 0;
		if (u_q < DATCP_U_MIN_Q)
			u_q = DATCP_U_MIN_Q;
	}
	return u_q;
}

/* Algorithm 1: P = phi I + (1 - phi) U, clamped to [P_min, P_max]; P_max =
 * U_max bounds importance too. */
static __always_inline __u32 datcp_precedence(__u32 phi_q, __u32 importance_q, __u32 u_q,
					      __u32 p_max_q)
{
	__u64 p;

	if (phi_q > DATCP_Q)
		phi_q = DATCP_Q;
	if (importance_q > p_max_q)
		importance_q = p_max_q;
	p = ((__u64)phi_q * importance_q + (__u64)(DATCP_Q - phi_q) * u_q) / DATCP_Q;
	if (p < DATCP_P_MIN_Q)
		p = DATCP_P_MIN_Q;
	if (p > p_max_q)
		p = p_max_q;
	return (__u32)p;
}

/* The dctcp mode's precedence, used only for its DSCP class (b stays DCTCP's
 * alpha/2): Algorithm 1's P with urgency fixed at the standard 1,
 * P = phi I + (1 - phi), so that importance alone sets the class of a dctcp
 * flow (issue 16's prio baseline); I 0, phi 0 is P = 1, the standard class. */
static __always_inline __u32 dctcp_precedence(__u32 phi_q, __u32 importance_q, __u32 p_max_q)
{
	return datcp_precedence(phi_q, importance_q, DATCP_U_INIT_Q, p_max_q);
}

/* Eq. 5 with standard TCP as reference (P = 1, b = 0.5):
 * P = (2 - b) / (3 b)  =>  b = 2 / (3P + 1). */
static __always_inline __u32 datcp_md_factor(__u32 p_q)
{
	if (p_q < DATCP_P_MIN_Q)
		p_q = DATCP_P_MIN_Q;
	if (p_q > DATCP_PRECEDENCE_MAX_Q)
		p_q = DATCP_PRECEDENCE_MAX_Q;
	return (__u32)((2ULL * DATCP_Q * DATCP_Q) / (3ULL * p_q + DATCP_Q));
}

/* cwnd * (1 - b), never below the TCP minimum of 2 packets. */
static __always_inline __u32 datcp_ssthresh(__u32 cwnd, __u32 b_q)
{
	__u64 keep = (__u64)cwnd * (DATCP_Q - datcp_min64(b_q, DATCP_Q)) / DATCP_Q;

	return (__u32)datcp_max64(keep, DATCP_CWND_MIN);
}

/* In CWR or Recovery the ssthresh op and the loss response never give more
 * than the cwnd the episode began with (prior_cwnd), and an undo restores
 * prior_ssthresh. Kernel 6.18 was seen entering CWR without running datcp's
 * ssthresh and set_state programs: ssthresh then held a stale stack word
 * (2183157349, the low half of a return address in the kernel's
 * srso_return_thunk) and PRR's ssthresh * delivered / prior_cwnd grew cwnd past
 * 10^9 for the whole episode (bursts, drops). Returns the ssthresh to restore
 * (Eq. 5 from prior_cwnd), or 0 when ssthresh is one the kernel or datcp set. */
static __always_inline __u32 datcp_reduction_repair(int in_reduction, __u32 prior_cwnd, __u32 ssthresh,
						    __u32 prior_ssthresh, __u32 b_q)
{
	if (!in_reduction || ssthresh <= prior_cwnd || ssthresh == prior_ssthresh)
		return 0;
	return datcp_ssthresh(prior_cwnd, b_q);
}

/* Can the flow meet its deadline at its current rate? R_avg * T_remain >= V_remain. */
static __always_inline int datcp_can_meet(__u64 v_remain, __u64 r_avg, __s64 t_remain_ns)
{
	if (v_remain == 0)
		return 1;
	if (t_remain_ns <= 0 || r_avg == 0)
		return 0;
	/* compare rates rather than volumes to stay within 64 bits */
	return r_avg >= datcp_desired_rate(v_remain, t_remain_ns);
}

/* Algorithm 2: p_quench = 1 - P / P_max (Q10), per draw spread over
 * `draws` draws. */
static __always_inline __u32 datcp_quench_prob(__u32 p_q, __u32 p_max_q, __u32 draws)
{
	if (p_q >= p_max_q)
		return 0;
	return (DATCP_Q - (__u32)((__u64)p_q * DATCP_Q / p_max_q)) / (draws ? draws : 1);
}

/* A flow that has bytes left when its deadline has passed, or that could
 * not finish them even at line rate (pd2tcp.txt 2.3.4 (1), (2)). */
static __always_inline int datcp_overdue(__u64 v_remain, __s64 t_remain_ns, __u64 line_rate_Bps)
{
	if (v_remain == 0)
		return 0;
	if (t_remain_ns <= 0)
		return 1;
	return line_rate_Bps && datcp_desired_rate(v_remain, t_remain_ns) > line_rate_Bps;
}

/* When the kernel lifts a quench by itself (section 3.3: suspended flows
 * continue when the load is light): after resume_quiet_ms without an ECN
 * echo towards the flow's destination (counted from the quench when none
 * came since), or after quench_timeout_ms in any case. Returns 0 or an
 * enum datcp_resume_reason. */
static __always_inline __u32 datcp_resume_due(__u64 now_ns, __u64 quenched_ns, __u64 last_mark_ns,
					      const struct datcp_params *p)
{
	__u64 quiet_from = datcp_max64(quenched_ns, last_mark_ns);

	if (p->resume_quiet_ms && now_ns >= quiet_from &&
	    now_ns - quiet_from >= (__u64)p->resume_quiet_ms * 1000000ULL)
		return DATCP_RESUME_QUIET;
	if (p->quench_timeout_ms && now_ns >= quenched_ns &&
	    now_ns - quenched_ns >= (__u64)p->quench_timeout_ms * 1000000ULL)
		return DATCP_RESUME_TIMEOUT;
	return 0;
}

/* Algorithm 2 state carried from one window to the next. */
struct datcp_quench_state_q {
	__u64 r_avg_prev;  /* R'_avg */
	__u32 theta;       /* consecutive windows with Gamma_profit <= 0 */
	__u32 u_increased; /* urgency was increased last window */
};

/* Algorithm 2, one window. Returns 1 when the flow is to be quenched now;
 * the caller then applies epsilon (suspend or kill). rnd is a uniform
 * 32-bit random number. A hopeful flow is never quenched: one that can
 * still meet its deadline at its current rate, or whose urgency can still
 * grow (section 3.3: quench when flows "cannot meet deadlines with the
 * current R_avg and Gamma_profit <= 0", i.e. cannot get more share). */
static __always_inline int datcp_quench_step(struct datcp_quench_state_q *s, __u64 r_avg,
					     int hopeful, __u32 p_q, const struct datcp_params *p,
					     __u32 rnd)
{
	int quench = 0;

	/* Gamma_profit = R_avg - R'_avg <= 0, counted while urgency is pushed up */
	if (s->u_increased && r_avg <= s->r_avg_prev) {
		s->theta++;
		if (s->theta >= p->theta_max) {
			quench = !hopeful && (rnd & (DATCP_Q - 1)) <
						     datcp_quench_prob(p_q, p->quench_p_max_q,
								       p->quench_draws);
			s->theta = 0;
		}
	} else {
		s->theta = 0;
	}
	s->r_avg_prev = r_avg;
	return quench;
}

/* DCTCP: alpha = (1 - g) alpha + g F, F = marked / total of the last window
 * (bytes acknowledged with ECN echo over bytes acknowledged, as in the
 * DCTCP paper); g_q in [1, 1024] (Q10), both products < 2^21. Each term is
 * rounded down (g = 1/16 gives the shifts alpha >> 4, F >> 4 exactly); alpha
 * decays by at least 1/1024 a window, so it reaches 0. */
static __always_inline __u32 dctcp_alpha_update(__u32 alpha_q, __u64 marked, __u64 total, __u32 g_q)
{
	__u32 f_q = 0, decay;

	if (g_q > DATCP_Q)
		g_q = DATCP_Q;
	decay = alpha_q * g_q / DATCP_Q;
	if (total)
		f_q = (__u32)(datcp_min64(marked, total) * DATCP_Q / total);
	if (decay == 0 && alpha_q)
		decay = 1;
	alpha_q = alpha_q - decay + f_q * g_q / DATCP_Q;
	return alpha_q > DATCP_Q ? DATCP_Q : alpha_q;
}

/* Integer square root of x < 2^32, bit by bit in 16 fixed steps. The
 * steps are branch-free (masks instead of ifs) so the BPF verifier sees
 * one path. */
DATCP_LOOP_FN __u64 datcp_isqrt(__u64 x)
{
	__u64 r = 0, bit = 1ULL << 30, t, m;
	int i;

	x &= 0xffffffffULL;
	for (i = 0; i < 16; i++) {
		t = r + bit;
		m = ~(__u64)((__s64)(x - t) >> 63); /* all ones iff x >= t */
		x -= t & m;
		r = (r >> 1) + (bit & m);
		bit >>= 2;
	}
	return r;
}

/* x^e for x in [0, 1] and e in [0, 2], both Q10 (the gamma-correction
 * penalty of D2TCP and PD2TCP). The integer part of e multiplies x in,
 * each fractional bit multiplies in x^(1/2^k), taken by repeated square
 * roots: 10 bits, so 10 roots. Branch-free like datcp_isqrt. */
DATCP_LOOP_FN __u32 datcp_pow_q(__u32 x_q, __u32 e_q)
{
	__u64 result = DATCP_Q, root = x_q < DATCP_Q ? x_q : DATCP_Q, m;
	__u32 whole = e_q / DATCP_Q, frac = e_q % DATCP_Q;
	int i;

	for (i = 0; i < 2; i++) {
		m = 0 - (__u64)((__u32)i < whole);
		result = result * ((root & m) | (DATCP_Q & ~m)) / DATCP_Q;
	}
	for (i = 9; i >= 0; i--) {
		root = datcp_isqrt(root * DATCP_Q); /* x^(1/2^(10-i)) in Q10 */
		m = 0 - (__u64)((frac >> i) & 1);
		result = result * ((root & m) | (DATCP_Q & ~m)) / DATCP_Q;
	}
	return (__u32)result;
}

static __always_inline __u32 datcp_clamp_q(__u64 v, __u32 lo, __u32 hi)
{
	return v < lo ? lo : v > hi ? hi : (__u32)v;
}

/* D2TCP deadline imminence factor d = T_c / D in [0.5, 2]: T_c is the time
 * the rest of the flow needs at the current rate, D the time left. No
 * deadline: d = 1 (plain DCTCP). Deadline passed or no rate yet: d = 2. */
static __always_inline __u32 d2tcp_deadline_factor(__u64 v_remain, __u64 r_avg,
						   __s64 t_remain_ns, int has_deadline)
{
	__u64 d_q;

	if (!has_deadline)
		return DATCP_Q;
	if (t_remain_ns <= 0 || r_avg == 0)
		return D2TCP_D_MAX_Q;
	/* d = (V_remain / R_avg) / T_remain = R_desired / R_avg */
	d_q = datcp_desired_rate(v_remain, t_remain_ns);
	if (d_q / DATCP_Q >= r_avg)
		return D2TCP_D_MAX_Q;
	d_q = d_q * DATCP_Q / r_avg;
	return datcp_clamp_q(d_q, D2TCP_D_MIN_Q, D2TCP_D_MAX_Q);
}

/* PD2TCP priority (pd2tcp.txt 2.3.2, 2.3.4): p = R_D / R_A in [0.5, 2];
 * p = 2 for a deadline under 5 ms; p = 0.5 without a deadline; early
 * priority inversion to 0.5 when the deadline has passed with bytes left or
 * cannot be met even at line rate. R_A is the mean rate since the flow began. */
static __always_inline __u32 pd2tcp_priority(__u64 v_remain, __u64 r_avg_since_start,
					     __s64 t_remain_ns, __u64 deadline_total_ns,
					     int has_deadline, __u64 line_rate_Bps)
{
	__u64 r_d, p_q;

	if (!has_deadline)
		return D2TCP_D_MIN_Q;
	if (v_remain == 0)
		return DATCP_Q;
	if (t_remain_ns <= 0)
		return D2TCP_D_MIN_Q; /* inversion (1): deadline passed */
	r_d = datcp_desired_rate(v_remain, t_remain_ns);
	if (line_rate_Bps && r_d > line_rate_Bps)
		return D2TCP_D_MIN_Q; /* inversion (2): not even at line rate */
	if (deadline_total_ns < PD2TCP_TIGHT_NS)
		return D2TCP_D_MAX_Q;
	if (r_avg_since_start == 0 || r_d / DATCP_Q >= r_avg_since_start)
		return D2TCP_D_MAX_Q;
	p_q = r_d * DATCP_Q / r_avg_since_start;
	return datcp_clamp_q(p_q, D2TCP_D_MIN_Q, D2TCP_D_MAX_Q);
}

/* ---- the per-window step of a DATCP-family flow, pure over its state ---- */

/* What the socket measured over the last window (~one RTT). */
struct datcp_window {
	__u64 now_ns;
	__u64 acked_bytes;     /* V_rtt: bytes acked in this window */
	__u64 window_ns;       /* T_rtt: length of this window */
	__u64 acked_total;     /* bytes acked since the epoch began */
	__u64 ece_bytes;       /* of acked_bytes, acked by ACKs with ECN echo */
	__u32 rnd;             /* uniform random for Algorithm 2 */
	__u8 slow_start;
};

/* Per-flow state of the algorithm (kept in socket storage). */
struct datcp_flow_state {
	__u64 start_ns;
	__u64 r_avg;
	__u64 r_desired;
	struct datcp_quench_state_q qs;
	__u32 urgency_q;
	__u32 precedence_q;
	__u32 b_q;             /* DATCP: Eq. 5; DCTCP family: penalty / 2 */
	__u32 alpha_q;
	__u32 quenched;        /* enum datcp_quench_state */
	__u64 quenched_ns;     /* when the quench was decided */
};

static __always_inline void datcp_flow_state_init(struct datcp_flow_state *s, __u64 now_ns)
{
	s->start_ns = now_ns;
	s->r_avg = 0;
	s->r_desired = 0;
	s->qs.r_avg_prev = 0;
	s->qs.theta = 0;
	s->qs.u_increased = 0;
	s->urgency_q = DATCP_U_INIT_Q;
	s->precedence_q = DATCP_Q;
	s->b_q = DATCP_Q / 2;
	s->alpha_q = DATCP_Q; /* DCTCP starts cautious: alpha 1 */
	s->quenched = DATCP_QS_NONE;
	s->quenched_ns = 0;
}

/* Lift a quench (resume order, or datcp_resume_due): Algorithm 2 starts
 * over, and the flow may be quenched again. */
static __always_inline void datcp_flow_state_resume(struct datcp_flow_state *s)
{
	s->quenched = DATCP_QS_NONE;
	s->quenched_ns = 0;
	s->qs.theta = 0;
	s->qs.u_increased = 0;
}

/* T_remain = T_deadline - T_now, saturated to the signed range (a deadline
 * 2^63 ns away must not wrap to a passed one). */
static __always_inline __s64 datcp_t_remain(__u64 deadline_ns, __u64 now_ns)
{
	if (deadline_ns >= now_ns)
		return (__s64)datcp_min64(deadline_ns - now_ns, (~0ULL) >> 1);
	return -(__s64)datcp_min64(now_ns - deadline_ns, (~0ULL) >> 1);
}

/* One window of the flow's mode; returns the quench action decided now
 * (DATCP_QS_NONE, _SUSPENDED or _KILLED). After it, s->b_q is the
 * multiplicative decrease to apply on the next congestion signal.
 * line_rate_Bps is the host NIC's rate (0: unknown). */
static __always_inline __u32 datcp_window_step(struct datcp_flow_state *s,
					       const struct datcp_flow_meta *m,
					       const struct datcp_window *w,
					       const struct datcp_params *p, __u64 line_rate_Bps)
{
	int has_size = m->flags & DATCP_F_SIZE_KNOWN;
	int has_deadline = has_size && m->deadline_ns != 0;
	__u64 v_remain = 0;
	__s64 t_remain = 0;
	__u32 action = DATCP_QS_NONE;
	int increased = 0, given_up;

	if (has_size)
		v_remain = m->size_bytes > w->acked_total ? m->size_bytes - w->acked_total : 0;
	if (has_deadline)
		t_remain = datcp_t_remain(m->deadline_ns, w->now_ns);

	/* Algorithm 1: R_last = V_rtt / T_rtt, then R_avg */
	s->r_avg = datcp_r_avg(s->r_avg, datcp_rate_Bps(w->acked_bytes, w->window_ns),
			       w->slow_start, p);
	s->alpha_q = dctcp_alpha_update(s->alpha_q, w->ece_bytes, w->acked_bytes, p->dctcp_g_q);

	switch (m->mode) {
	case DATCP_MODE_DATCP:
		given_up = has_deadline && p->overdue_give_up &&
			   datcp_overdue(v_remain, t_remain, line_rate_Bps);
		if (!has_deadline && p->agnostic_u_min) /* pd2tcp.txt 2.3.2: background p = 0.5 */
			s->urgency_q = DATCP_U_MIN_Q;
		if (has_deadline && s->quenched == DATCP_QS_NONE) {
			/* Algorithm 1: R_desired = V_remain / T_remain (less the guard) */
			s->r_desired = datcp_desired_rate(
				v_remain, t_remain - (p->guard_shift ? t_remain >> p->guard_shift : 0));
			if (given_up) /* pd2tcp.txt 2.3.4: early inversion to the minimum */
				s->urgency_q = DATCP_U_MIN_Q;
			else if (!p->slow_start_raise_only || !w->slow_start ||
				 s->r_desired > s->r_avg)
				s->urgency_q = datcp_urgency_update(s->urgency_q, s->r_desired,
								    s->r_avg, p->g_max_q, p->u_max_q,
								    &increased);
		}
		s->precedence_q = datcp_precedence(m->phi_q, m->importance_q, s->urgency_q,
						   p->u_max_q);
		s->b_q = datcp_md_factor(s->precedence_q);
		/* Algorithm 2; hopeful flows are never quenched (see datcp_quench_step) */
		if (has_deadline && m->quench != DATCP_QUENCH_OFF && s->quenched == DATCP_QS_NONE &&
		    !given_up &&
		    datcp_quench_step(&s->qs, s->r_avg,
				      datcp_can_meet(v_remain, s->r_avg, t_remain) ||
					      (p->hopeful_below_u_max && s->urgency_q < p->u_max_q),
				      s->precedence_q, p, w->rnd)) {
			s->quenched = m->quench == DATCP_QUENCH_KILL ? DATCP_QS_KILLED
								     : DATCP_QS_SUSPENDED;
			s->quenched_ns = w->now_ns;
			action = s->quenched;
		}
		s->qs.u_increased = increased;
		break;
	case DATCP_MODE_DCTCP:
		s->precedence_q = dctcp_precedence(m->phi_q, m->importance_q, p->u_max_q);
		s->b_q = s->alpha_q / 2;
		break;
	case DATCP_MODE_D2TCP:
		s->precedence_q = d2tcp_deadline_factor(v_remain, s->r_avg, t_remain, has_deadline);
		s->b_q = datcp_pow_q(s->alpha_q, s->precedence_q) / 2;
		break;
	case DATCP_MODE_PD2TCP:
		s->precedence_q = pd2tcp_priority(
			v_remain, datcp_rate_Bps(w->acked_total, w->now_ns - s->start_ns), t_remain,
			has_deadline ? m->deadline_ns - s->start_ns : 0, has_deadline,
			line_rate_Bps);
		s->b_q = datcp_pow_q(s->alpha_q, s->precedence_q) / 2;
		break;
	default: /* reno: P = 1, b = 0.5 */
		s->precedence_q = DATCP_Q;
		s->b_q = DATCP_Q / 2;
		break;
	}
	return action;
}

#endif
