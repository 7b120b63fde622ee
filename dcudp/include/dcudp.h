/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * dcudp.h - DCUDP, a reliable UDP transport with an ECN Congestion Mode
 * (shared/seeds/dcudp.txt, sections III-IV).
 *
 * A connection carries data one way, from the side that connects (the
 * sender) to the side that accepts (the receiver); UDT's duplex, which the
 * paper inherits, is not implemented. All calls block and run the
 * protocol (pacing, ACK/ACK2, NAK, keep-alive) inside the call; there are
 * no threads. The control law lives in dcudp_core.h.
 */
#ifndef DCUDP_H
#define DCUDP_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#define DCUDP_DEFAULT_PKT_BYTES 1500U /* IP datagram size, PktSize of the rate law */

struct dcudp_cfg {
	uint64_t link_bps;	    /* bottleneck capacity C (section IV): Rate_data on entering
				     * Congestion Mode and the ceiling of both rates; required */
	uint64_t udp_bps;	    /* the UDP Mode rate, the application's offer (section V-A:
				     * CBR at 1.6 C); 0: C */
	uint32_t pkt_bytes;	    /* IP datagram size, 0: 1500 */
	uint32_t timeout_ms;	    /* handshake and peer-silence timeout, 0: 5000 */
	int32_t spin_us;	    /* pacer: spin this long before a send, -1: 60; 0 sleeps only
				     * (several senders on few CPUs: spinning starves the others) */
	uint32_t notsent_max_pkts;  /* dcudp_send waits while this many queued packets were never
				     * sent, as TCP_NOTSENT_LOWAT: an application that stops
				     * writing stops the wire soon after (section V-B's FTP flow);
				     * 0: only the send buffer (16384 packets) bounds it */
};

struct dcudp_stats {
	uint64_t data_sent, data_retransmitted, data_received, data_duplicate;
	uint64_t bytes_sent, bytes_delivered, messages_sent, messages_delivered;
	uint64_t ce_received, acks, ack2s, naks, keepalives, cwr; /* acks: sent by a receiver,
								   * received by a sender */
	uint64_t congestion_entries, congestion_exits;
	uint64_t rate_data_pps, rate_max_pps, rate_line_pps, rate_udp_pps; /* last values */
	uint64_t rtt_ns, rtt_idle_ns;
	/* pacer: lateness of each send against its scheduled time */
	uint64_t pace_sends, pace_late_p50_ns, pace_late_p99_ns, pace_late_max_ns;
	uint64_t first_send_ns, last_send_ns; /* CLOCK_MONOTONIC of the first and last data packet */
};

struct dcudp_conn;

/* Sender: handshake with a receiver at host:port (IPv4). Returns 0 or -errno. */
int dcudp_connect(struct dcudp_conn **out, const char *host, uint16_t port, const struct dcudp_cfg *cfg);

/* Receiver: bind port (0.0.0.0) and wait for one sender's handshake. */
int dcudp_accept(struct dcudp_conn **out, uint16_t port, const struct dcudp_cfg *cfg);

/* Sender: queue one message (its packets share a message number); returns once it is
 * all in the send buffer. Returns 0 or -errno. */
int dcudp_send(struct dcudp_conn *c, const void *buf, size_t len);

/* Receiver: up to len in-order bytes; 0 at the end of the stream (sender's shutdown with
 * everything delivered), -errno on failure. */
ssize_t dcudp_recv(struct dcudp_conn *c, void *buf, size_t len);

/* Sender: wait until everything sent is acknowledged, then shut down. Receiver: linger
 * 100 ms to answer the sender's shutdown again if the answer was lost.
 * Returns 0 or -errno. The connection stays valid for dcudp_stats until dcudp_free. */
int dcudp_close(struct dcudp_conn *c);

void dcudp_get_stats(const struct dcudp_conn *c, struct dcudp_stats *out);

/* One "name=value" line per counter, for the tools and tests. */
void dcudp_print_stats(FILE *f, const struct dcudp_stats *s);
void dcudp_free(struct dcudp_conn *c);

#endif /* DCUDP_H */
