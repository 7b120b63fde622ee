// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * datcp_switch.bpf.c - AQM of an emulated switch egress port.
 *
 * Attached (direct action) as the classifier of the port's HTB root, so it
 * sees every packet before the shaper. It picks the packet's strict
 * priority band from its DSCP (HTB class 1:1<band>), runs the virtual queue
 * of datcp_aqm.h, and sets CE or drops. One program instance per port: the
 * loader sets which port (netns, ifindex) it serves before load, and all
 * instances share the pinned map of ports. Anything that is not IPv4/IPv6
 * is passed in the standard band without marking.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "datcp_aqm.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_HLEN 14
#define HTB_MAJOR 1
#define HTB_BAND_MINOR 0x10 /* band b is HTB class 1:(0x10 + b) */

/* Which port this instance serves; set by the loader. */
const volatile __u64 datcp_port_netns = 0;
const volatile __u32 datcp_port_ifindex = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct datcp_port_key);
	__type(value, struct datcp_port_slot);
} datcp_switch_ports SEC(".maps");

/* PFDCT's count of long flows (N of K_u = M / N); one instance per port, so
 * this map is the port's own. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct aqm_pfdct_flows);
} datcp_pfdct_flows SEC(".maps");

/* Traffic class (DSCP << 2 | ECN) of an IPv4/IPv6 packet, or -1. */
static __always_inline int packet_tclass(struct __sk_buff *skb)
{
	__u8 b[2];

	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN + 1, b, 1))
			return -1;
		return b[0];
	}
	if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
		/* traffic class straddles the first two bytes */
		if (bpf_skb_load_bytes(skb, ETH_HLEN, b, 2))
			return -1;
		return ((b[0] & 0x0f) << 4) | (b[1] >> 4);
	}
	return -1;
}

/* PFDCT: the band by Algorithm 1, and N, counted over long-band packets. */
static __always_inline __u32 pfdct_band_and_flows(struct __sk_buff *skb, __u32 band, int tclass,
						  __u64 now, __u32 *n_flows)
{
	__u32 zero = 0;
	struct aqm_pfdct_flows *f;

	band = aqm_pfdct_band(band, tclass >= 0 ? tclass & 3 : 0);
	f = bpf_map_lookup_elem(&datcp_pfdct_flows, &zero);
	/* racing CPUs may lose a bit for one packet: N is an estimate */
	if (f)
		*n_flows = aqm_pfdct_count_flow(f, bpf_get_hash_recalc(skb),
						band == AQM_PFDCT_LONG_BAND, now);
	return band;
}

SEC("tc")
int datcp_switch_port(struct __sk_buff *skb)
{
	struct datcp_port_key key = { .netns_ino = datcp_port_netns, .ifindex = datcp_port_ifindex };
	struct datcp_port_slot *slot = bpf_map_lookup_elem(&datcp_switch_ports, &key);
	int tclass = packet_tclass(skb), dscp = tclass >= 0 ? tclass >> 2 : -1;
	__u32 band, rnd = bpf_get_prandom_u32(), n_flows = 1;
	__u64 now = bpf_ktime_get_ns();
	int verdict;

	if (!slot)
		return TC_ACT_OK; /* port not configured: plain forwarding */
	band = dscp >= 0 ? slot->cfg.dscp_band[dscp & 63] : 1;
	if (band >= DATCP_BANDS)
		band = DATCP_BANDS - 1;
	if (slot->cfg.mark_mode == DATCP_MARK_PFDCT)
		band = pfdct_band_and_flows(skb, band, tclass, now, &n_flows);
	skb->tc_classid = (HTB_MAJOR << 16) | (HTB_BAND_MINOR + band);

	bpf_spin_lock(&slot->lock);
	verdict = aqm_enqueue(&slot->cfg, &slot->st, now, skb->len, band, rnd, n_flows);
	bpf_spin_unlock(&slot->lock);

	if (verdict == AQM_DROP)
		return TC_ACT_SHOT;
	if (verdict == AQM_MARK && dscp >= 0 && bpf_skb_ecn_set_ce(skb))
		__sync_fetch_and_add(&slot->st.band[band].marks, 1);
	return TC_ACT_OK;
}
