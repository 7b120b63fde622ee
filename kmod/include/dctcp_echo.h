/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dctcp_echo.h - the DCTCP receiver for BPF congestion controls: echo ECE on
 * exactly the ACKs of CE-marked segments (DCTCP section 3.2's two-state
 * machine, as Linux tcp_dctcp.c's dctcp_ece_ack_update), so that the
 * sender's fraction of marked bytes F is exact. BPF only (vmlinux.h types).
 */
#ifndef DCTCP_ECHO_H
#define DCTCP_ECHO_H

#define DCTCP_ECHO_ECN_DEMAND_CWR 4 /* TCP_ECN_DEMAND_CWR */

/* The receiver's state: CE seen on the last segment, rcv_nxt before it. */
struct dctcp_echo {
	__u32 prior_rcv_nxt;
	__u32 ce_state;
};

/* On CA_EVENT_ECN_IS_CE / CA_EVENT_ECN_NO_CE: on a change, first flush a
 * delayed ACK that still carries the old state; then echo the new one. */
static __always_inline void dctcp_echo_update(struct sock *sk, struct dctcp_echo *e, int is_ce)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 new_ce = is_ce ? 1 : 0;

	if (e->ce_state != new_ce) {
		struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;

		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			if (e->ce_state)
				tp->ecn_flags |= DCTCP_ECHO_ECN_DEMAND_CWR;
			else
				tp->ecn_flags &= ~DCTCP_ECHO_ECN_DEMAND_CWR;
			bpf_tcp_send_ack(tp, e->prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	e->prior_rcv_nxt = tp->rcv_nxt;
	e->ce_state = new_ce;
	if (new_ce)
		tp->ecn_flags |= DCTCP_ECHO_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~DCTCP_ECHO_ECN_DEMAND_CWR;
}

#endif
