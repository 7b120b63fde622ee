/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * fqcn_cnm.h - the congestion notification message (CNM) between fqcn-cp
 * and fqcn-cbr.
 *
 * In IEEE 802.1Qau a CNM is an Ethernet frame addressed to the source MAC of
 * the sampled frame. Here it is the payload of a UDP datagram that the
 * congestion point writes, as a whole Ethernet frame, onto the switch port
 * the sampled frame came in on, addressed to the sampled frame's source MAC,
 * IP address and UDP/TCP port: the reaction point reads CNMs on the socket
 * its flow sends from. All fields are in network byte order.
 */
#ifndef FQCN_CNM_H
#define FQCN_CNM_H

#include <stdint.h>

#define FQCN_CNM_MAGIC 0x51434e4dU /* "QCNM" */
#define FQCN_CNM_VERSION 1
/* UDP source port of CNMs. */
#define FQCN_CNM_PORT 7999

enum fqcn_mode {
	FQCN_MODE_QCN = 0,  /* a CNM to the source of the sampled frame */
	FQCN_MODE_FQCN = 1, /* a CNM to every flow at or over its share (section III) */
};

struct fqcn_cnm {
	uint32_t magic;
	uint8_t version;
	uint8_t fb_q;	     /* quantised |Fb| (QCN) or |Fb(i)| (FQCN), 1..63 */
	uint8_t mode;	     /* enum fqcn_mode of the congestion point */
	uint8_t reserved;
	uint32_t flow_daddr; /* the flow's destination, IPv4 */
	uint16_t flow_sport; /* the flow's source port: the reaction point checks it is its own */
	uint16_t flow_dport;
	int32_t q_off;	     /* Q - Q_eq at the sample, bytes (for logs) */
	int32_t q_delta;     /* Q - Q_old at the sample, bytes (for logs) */
} __attribute__((packed));

_Static_assert(sizeof(struct fqcn_cnm) == 24, "CNM layout");

#endif /* FQCN_CNM_H */
