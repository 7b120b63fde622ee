// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * loss.bpf.c - random loss for dcudp's loopback test, in place of netem
 * (not built into this kernel): a tc egress program that drops each UDP
 * datagram with probability LOSS_PER_MILLE / 1000, other packets pass.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

/* 2%: a loss of a few packets per RTT window at 100 Mbit/s, each one NAK'd */
#define LOSS_PER_MILLE 20

SEC("tc")
int dcudp_loss(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->protocol != IPPROTO_UDP)
		return TC_ACT_OK;
	return bpf_get_prandom_u32() % 1000 < LOSS_PER_MILLE ? TC_ACT_SHOT : TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
