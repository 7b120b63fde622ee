// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * loss.bpf.c - impairments for dcudp's loopback test, in place of netem (not
 * built into this kernel), as tc egress programs on UDP datagrams:
 *   section "tc/loss": drops each with probability LOSS_PER_MILLE / 1000
 *   section "tc/mark": sets CE on each ECT one with probability MARK_PER_MILLE / 1000
 * Other packets pass.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

/* 2%: a few losses per RTT window at 100 Mbit/s, each one NAK'd */
#define LOSS_PER_MILLE 20
/* 5%: random marks that are not a queue, so the RTT trend never falls */
#define MARK_PER_MILLE 50

static __always_inline int is_udp(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);

	return (void *)(ip + 1) <= end && eth->h_proto == bpf_htons(ETH_P_IP) && ip->protocol == IPPROTO_UDP;
}

SEC("tc/loss")
int dcudp_loss(struct __sk_buff *skb)
{
	if (!is_udp(skb))
		return TC_ACT_OK;
	return bpf_get_prandom_u32() % 1000 < LOSS_PER_MILLE ? TC_ACT_SHOT : TC_ACT_OK;
}

SEC("tc/mark")
int dcudp_mark(struct __sk_buff *skb)
{
	if (is_udp(skb) && bpf_get_prandom_u32() % 1000 < MARK_PER_MILLE)
		bpf_skb_ecn_set_ce(skb);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
