/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * pfdct_core.h - the sender side of PFDCT (Li et al., Electronics 2023,
 * shared/seeds/pfdct.txt, sections 3.2.3-3.2.4), as pure integer functions
 * shared by pfdct_cc.bpf.c and the C tests.
 *
 * A PFDCT sender sorts its flows in three classes, each with its own DSCP so
 * that the switch can serve them in strict priority: retransmitted segments
 * first, then short flows, then long flows. Only long flows are ECN-capable
 * (short flows send Not-ECT and are never marked), and a long flow runs the
 * DCTCP-like window law of Eq. 2-3:
 *
 *   alpha = (1 - g) alpha + g F,  g = 1/16          (Eq. 2)
 *   cwnd  = cwnd + 1              if F = 0           (Eq. 3)
 *         = cwnd (1 - alpha / 2)  if F > 0
 *
 * and estimates the bottleneck queue from the RTT (Eq. 1). Eq. 2 is DCTCP's
 * update with DCTCP's g (the paper: "the g value is the same as used in
 * DCTCP"), so it is datcp_core.h's dctcp_alpha_update.
 *
 * Classification (3.2.3): a flow is long once it has sent more than 1 MB and
 * its window has reached 20 segments; every other flow is short. Algorithm 2
 * (ShortorLong, line 2) prints another rule, short while cwnd < 20 AND fewer
 * than 10 KB were sent, i.e. long as soon as either holds; that would make
 * almost every flow long after its first 10 KB and leave the short band to
 * the first seven packets of each flow. The prose rule is used here; its
 * byte threshold is a load-time parameter (1 MB at the paper's 1 Gbit/s,
 * 100 KB on the bench's 100 Mbit/s links).
 */
#ifndef PFDCT_CORE_H
#define PFDCT_CORE_H

#include "datcp_core.h"

/* 3.2.3: "flow size greater than 1 MB and maximum congestion window greater
 * than 20" (segments). */
#define PFDCT_LONG_BYTES_DEFAULT 1000000ULL
#define PFDCT_LONG_CWND_DEFAULT 20U

/* 3.2.3: long once more than long_bytes were sent and the window reached
 * long_cwnd segments; the class never goes back to short (the paper
 * classifies a flow, not a window). */
static __always_inline __u32 pfdct_classify(__u32 cls, __u64 bytes_sent, __u32 max_cwnd,
					    __u64 long_bytes, __u32 long_cwnd)
{
	if (cls == PFDCT_CLASS_LONG)
		return PFDCT_CLASS_LONG;
	return bytes_sent > long_bytes && max_cwnd >= long_cwnd ? PFDCT_CLASS_LONG : PFDCT_CLASS_SHORT;
}

/* Eq. 1: LQ = (RTT_c - RTT_min) / RTT_c * cwnd, the packets this flow keeps
 * queued at the bottleneck; 0 while RTT_c <= RTT_min or RTT_c is unknown. */
static __always_inline __u32 pfdct_queue_estimate(__u32 rtt_c_us, __u32 rtt_min_us, __u32 cwnd)
{
	if (!rtt_c_us || rtt_c_us <= rtt_min_us)
		return 0;
	return (__u32)((__u64)(rtt_c_us - rtt_min_us) * cwnd / rtt_c_us);
}

/* A segment ending at end_seq is a retransmission when it ends at or before
 * the highest end already sent (Algorithm 1's IsRetransmitted, the PIT's
 * "sequence number already recorded", kept at the sender's egress). */
static __always_inline int pfdct_is_retransmit(__u32 end_seq, __u32 highest_end)
{
	return (__s32)(end_seq - highest_end) <= 0;
}

/* Eq. 3, F > 0: cwnd (1 - alpha / 2), never below 2 segments. */
static __always_inline __u32 pfdct_ssthresh(__u32 cwnd, __u32 alpha_q)
{
	return datcp_ssthresh(cwnd, alpha_q / 2);
}

#endif
