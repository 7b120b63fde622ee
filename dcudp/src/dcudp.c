// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * dcudp.c - the DCUDP protocol (shared/seeds/dcudp.txt, sections III-IV) over
 * one UDP socket: handshake, data and control packets (Fig. 2), ACK/ACK2 RTT
 * measurement, NAK-driven retransmission, keep-alive, shutdown, the OBS
 * mode switch and CWR/ECE, with the rate law of dcudp_core.h and a pacer.
 *
 * Header (16 bytes, network order), after UDT:
 *   word 0  data:    0 | sequence number (31 bits)
 *           control: 1 | type (15 bits) | flags (16 bits: OBS, ECE; CWR rides on data)
 *   word 1  data:    OBS | CWR | FIRST | LAST | message number (28 bits)
 *           control: control sequence number (31 bits); an ACK2 carries its ACK's
 *   word 2  timestamp, microseconds since the connection began
 *   word 3  destination socket id
 * Control bodies are 32-bit words: HANDSHAKE kind, ISN, packet size, socket id;
 * ACK cumulative sequence, RTT in us; NAK (first, last) pairs; KEEPALIVE a
 * sequence (receiver: cumulative, sender: next to send, so a lost tail is
 * NAK'd); SHUTDOWN the sender's end sequence.
 *
 * Sequence numbers on the wire are ISN + n modulo 2^31; inside, n itself.
 * Every datagram carries ECT(0); the receiver reads the TOS byte of each
 * (IP_RECVTOS) for CE.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dcudp.h"
#include "dcudp_core.h"

#define HDR_BYTES 16U
#define IPUDP_BYTES 28U /* IPv4 + UDP headers inside PktSize */
#define SEQ_MASK 0x7fffffffU
#define MSGNO_MASK 0x0fffffffU
#define CTRL_BIT 0x80000000U
#define RING 16384U /* packets buffered on each side; a power of two */
#define NAK_MAX_PAIRS 64U

#define F_ECE 0x1U
#define F_OBS 0x4U
#define D_OBS 0x80000000U
#define D_CWR 0x40000000U
#define D_FIRST 0x20000000U
#define D_LAST 0x10000000U

#define ECT0 0x02
#define CE 0x03

enum ctrl_type {
	T_HANDSHAKE = 0,
	T_KEEPALIVE = 1,
	T_ACK = 2,
	T_NAK = 3,
	T_SHUTDOWN = 5,
	T_ACK2 = 6,
	T_OBS_CHANGE = 7, /* sender -> receiver: "I left Congestion Mode" (section III-B) */
};

enum hs_kind { HS_REQUEST = 1, HS_RESPONSE = 2, HS_CONFIRM = 3 };

/* Keep-alives: the paper gives no interval (UDT: 1 s); 10 ms keeps the sender's buffer
 * freed in UDP Mode, where they carry the only acknowledgements. */
#define KEEPALIVE_NS 10000000ULL
/* While the sender waits in close, it repeats its end sequence this often. */
#define TAIL_PROBE_NS 1000000ULL
/* A missing packet is NAK'd again after max(4 RTT, this): the retransmission may wait
 * behind a full switch buffer (200 KB at 50 Mbit/s is 32 ms). */
#define NAK_REPEAT_MIN_NS 40000000ULL
/* The pacer sleeps (ppoll) until this long before a send, then spins: wake-ups from
 * sleep are late by tens of us, a good part of the 120 us between packets at 100 Mbit/s.
 * The default of dcudp_cfg.spin_us. */
#define PACE_SPIN_NS 60000ULL
/* A sender behind schedule by more than this restarts its schedule instead of bursting. */
#define PACE_MAX_LAG_NS 1000000ULL
#define SHUTDOWN_REPEAT_NS 10000000ULL
#define HS_REPEAT_NS 100000000ULL
#define LATE_BUCKETS 2000U /* lateness histogram, 1 us per bucket */
#define ACK_LOG 16U	   /* ACKs awaiting their ACK2 */
#define DEFAULT_RTT_IDLE_NS 1000000ULL

struct slot {
	uint32_t len, msg; /* msg: D_FIRST | D_LAST | message number */
	bool used;	   /* receiver: have it */
	bool lost;	   /* sender: queued for retransmission */
	uint64_t nak_ns;   /* receiver: last NAK time */
	uint8_t data[];
};

struct dcudp_conn {
	int fd;
	bool sender;
	struct dcudp_cfg cfg;
	uint32_t payload; /* data bytes per packet */
	uint32_t isn, peer_id, own_id, ctrl_seq;
	uint64_t t0, last_heard, timeout_ns, spin_ns;
	uint8_t *ring; /* RING slots of slot_bytes */
	size_t slot_bytes;
	struct dcudp_stats st;

	/* sender */
	uint32_t snd_una, snd_next, snd_end, msgno;
	uint32_t *lossq; /* RING entries of sequence numbers to retransmit */
	uint32_t lq_head, lq_len;
	bool cong, cwr_due;
	struct dcudp_rate rate;
	uint64_t next_send, next_ka, rtt_ns, udp_rate;
	uint64_t late_hist[LATE_BUCKETS + 1];

	/* receiver */
	uint32_t rcv_next, rcv_high, rcv_end, deliver_off;
	bool shut, shut_answered, r_cong, cond1, quit_pending, ce_since_ack, ece_pending;
	uint64_t ack_interval, next_ack, next_nak_scan, hs_resp_ns;
	bool rtt_measured;
	uint32_t blk_pkts, blk_ce;
	struct dcudp_window rtt_w, pecn_w;
	struct {
		uint32_t seq;
		uint64_t ns;
	} ack_log[ACK_LOG];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * DCUDP_NSEC_PER_SEC + ts.tv_nsec;
}

static struct slot *slot_of(struct dcudp_conn *c, uint32_t seq)
{
	return (struct slot *)(c->ring + (size_t)(seq % RING) * c->slot_bytes);
}

static uint32_t wire_seq(const struct dcudp_conn *c, uint32_t n)
{
	return (c->isn + n) & SEQ_MASK;
}

static uint32_t rel_seq(const struct dcudp_conn *c, uint32_t wire)
{
	return (wire - c->isn) & SEQ_MASK;
}

/* ---- packets ---- */

static int send_raw(struct dcudp_conn *c, const uint32_t *words, size_t nwords, const void *data, size_t len)
{
	struct iovec iov[2] = { { (void *)words, nwords * 4 }, { (void *)data, len } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = data ? 2 : 1 };
	bool retried = false;

	for (;;) {
		if (sendmsg(c->fd, &m, 0) >= 0)
			return 0;
		if (errno == ENOBUFS || errno == EAGAIN) {
			/* the device queue is full: the pacer's next slot comes soon, drop like a link */
			return 0;
		}
		if (errno == ECONNREFUSED && !retried) {
			retried = true; /* an ICMP from before the peer bound: this send did not go */
			continue;
		}
		return -errno;
	}
}

static int send_ctrl(struct dcudp_conn *c, enum ctrl_type type, uint32_t flags, uint32_t seq, const uint32_t *body,
		     size_t nbody)
{
	uint32_t w[4 + 2 * NAK_MAX_PAIRS];
	size_t i;

	w[0] = htonl(CTRL_BIT | (uint32_t)type << 16 | flags);
	w[1] = htonl(seq & SEQ_MASK);
	w[2] = htonl((uint32_t)((now_ns() - c->t0) / 1000));
	w[3] = htonl(c->peer_id);
	for (i = 0; i < nbody; i++)
		w[4 + i] = htonl(body[i]);
	return send_raw(c, w, 4 + nbody, NULL, 0);
}

static uint32_t next_ctrl_seq(struct dcudp_conn *c)
{
	return c->ctrl_seq++ & SEQ_MASK;
}

/* Reads one datagram: returns its length, 0 when none is waiting (nonblocking), -errno. */
static ssize_t recv_one(struct dcudp_conn *c, uint8_t *buf, size_t cap, uint8_t *tos, struct sockaddr_in *from)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, cap };
	struct msghdr m = { .msg_name = from, .msg_namelen = from ? sizeof(*from) : 0, .msg_iov = &iov,
			    .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	ssize_t n = recvmsg(c->fd, &m, MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED ? 0 : -errno;
	*tos = 0;
	for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TOS)
			*tos = *(uint8_t *)CMSG_DATA(cm);
	return n < (ssize_t)HDR_BYTES ? -EAGAIN : n;
}

/* ---- sender ---- */

static uint64_t send_rate(const struct dcudp_conn *c)
{
	return c->cong ? c->rate.rate_data : c->udp_rate;
}

static void lossq_add(struct dcudp_conn *c, uint32_t seq)
{
	struct slot *s;

	if (seq < c->snd_una || seq >= c->snd_next)
		return;
	s = slot_of(c, seq);
	if (s->lost || c->lq_len == RING)
		return;
	s->lost = true;
	c->lossq[(c->lq_head + c->lq_len++) % RING] = seq;
}

static void sender_ack_to(struct dcudp_conn *c, uint32_t cum)
{
	if (cum > c->snd_next)
		return; /* not a sequence we sent */
	if (cum > c->snd_una)
		c->snd_una = cum;
}

static void sender_on_ctrl(struct dcudp_conn *c, uint32_t type, uint32_t flags, uint32_t seq, const uint32_t *b,
			   size_t nb)
{
	uint32_t i;

	switch (type) {
	case T_ACK:
		if (nb < 2)
			return;
		c->st.acks++;
		sender_ack_to(c, rel_seq(c, b[0]));
		if (b[1])
			c->rtt_ns = (uint64_t)b[1] * 1000;
		/* ACK2 with the ACK's sequence number, for the receiver's RTT (section IV-A.2) */
		send_ctrl(c, T_ACK2, c->cong ? F_OBS : 0, seq, NULL, 0);
		if (flags & F_OBS) {
			if (!c->cong) { /* the first ACK: enter Congestion Mode (section IV-A.3) */
				dcudp_rate_enter(&c->rate, c->rate.rate_line);
				c->cong = true;
				c->st.congestion_entries++;
			}
			bool was_frozen = c->rate.freeze;

			dcudp_rate_on_ack(&c->rate, flags & F_ECE, c->rtt_ns);
			if ((flags & F_ECE) && !was_frozen)
				c->cwr_due = true;
		} else if (c->cong) {
			/* OBS = 0: OBS-change first, then UDP Mode (section IV-C.2) */
			send_ctrl(c, T_OBS_CHANGE, 0, next_ctrl_seq(c), NULL, 0);
			c->cong = false;
			c->st.congestion_exits++;
		}
		break;
	case T_NAK:
		c->st.naks++;
		for (i = 0; i + 1 < nb && i < 2 * NAK_MAX_PAIRS; i += 2) {
			uint32_t a = rel_seq(c, b[i]), z = rel_seq(c, b[i + 1]), s;

			for (s = a; s <= z && s - a < RING; s++)
				lossq_add(c, s);
		}
		if (c->cong)
			dcudp_rate_on_nak(&c->rate, c->rtt_ns);
		break;
	case T_KEEPALIVE:
		c->st.keepalives++;
		if (nb >= 1)
			sender_ack_to(c, rel_seq(c, b[0]));
		break;
	case T_SHUTDOWN:
		c->shut = true;
		break;
	default:
		break;
	}
}

static void handle_incoming(struct dcudp_conn *c);

static int sender_send_one(struct dcudp_conn *c, uint32_t seq, uint64_t now)
{
	struct slot *s = slot_of(c, seq);
	uint32_t w[4];
	int err;

	w[0] = htonl(wire_seq(c, seq));
	w[1] = htonl((c->cong ? D_OBS : 0) | (c->cwr_due ? D_CWR : 0) | s->msg);
	w[2] = htonl((uint32_t)((now - c->t0) / 1000));
	w[3] = htonl(c->peer_id);
	err = send_raw(c, w, 4, s->data, s->len);
	if (err)
		return err;
	c->cwr_due = false;
	dcudp_rate_on_data_sent(&c->rate);
	c->st.data_sent++;
	c->st.bytes_sent += s->len;
	if (!c->st.first_send_ns)
		c->st.first_send_ns = now;
	c->st.last_send_ns = now;
	return 0;
}

/* The next packet due: a retransmission first (UDT's order), else new data. */
static bool sender_pick(struct dcudp_conn *c, uint32_t *seq, bool *retx)
{
	while (c->lq_len) {
		uint32_t s = c->lossq[c->lq_head];

		c->lq_head = (c->lq_head + 1) % RING;
		c->lq_len--;
		slot_of(c, s)->lost = false;
		if (s >= c->snd_una) {
			*seq = s;
			*retx = true;
			return true;
		}
	}
	if (c->snd_next < c->snd_end) {
		*seq = c->snd_next++;
		*retx = false;
		return true;
	}
	return false;
}

static bool sender_has_work(const struct dcudp_conn *c)
{
	return c->lq_len || c->snd_next < c->snd_end;
}

/* Waits until `until`: sleeps in ppoll (control packets wake it), spins the last
 * spin_ns. Returns the time now. */
static uint64_t wait_until(struct dcudp_conn *c, uint64_t until)
{
	uint64_t now = now_ns();

	while (now < until) {
		if (until - now > c->spin_ns) {
			uint64_t d = until - now - c->spin_ns;
			struct timespec ts = { d / DCUDP_NSEC_PER_SEC, d % DCUDP_NSEC_PER_SEC };
			struct pollfd p = { c->fd, POLLIN, 0 };

			ppoll(&p, 1, &ts, NULL);
		}
		handle_incoming(c);
		now = now_ns();
	}
	return now;
}

/* Sleeps until a packet arrives or `until`, then handles what came. */
static void wait_event(struct dcudp_conn *c, uint64_t until)
{
	uint64_t now = now_ns(), d = until > now ? until - now : 0;
	struct timespec ts = { d / DCUDP_NSEC_PER_SEC, d % DCUDP_NSEC_PER_SEC };
	struct pollfd p = { c->fd, POLLIN, 0 };

	ppoll(&p, 1, &ts, NULL);
	handle_incoming(c);
}

static void pace_record(struct dcudp_conn *c, uint64_t now)
{
	uint64_t late = now > c->next_send ? now - c->next_send : 0;
	uint64_t b = late / 1000;

	c->late_hist[b < LATE_BUCKETS ? b : LATE_BUCKETS]++;
	if (late > c->st.pace_late_max_ns)
		c->st.pace_late_max_ns = late;
	c->st.pace_sends++;
}

/* One round of the sender: timers, then one paced packet when one is due. */
static int sender_step(struct dcudp_conn *c, bool closing)
{
	uint64_t now, ka = closing && !sender_has_work(c) ? TAIL_PROBE_NS : KEEPALIVE_NS;
	uint32_t seq;
	bool retx;
	int err;

	handle_incoming(c);
	now = now_ns();
	if (now - c->last_heard > c->timeout_ns)
		return -ETIMEDOUT;
	if (now >= c->next_ka) {
		uint32_t body = wire_seq(c, c->snd_next);

		send_ctrl(c, T_KEEPALIVE, c->cong ? F_OBS : 0, next_ctrl_seq(c), &body, 1);
		c->next_ka = now + ka;
	}
	if (!sender_has_work(c)) {
		wait_event(c, c->next_ka);
		return 0;
	}
	if (c->next_send + PACE_MAX_LAG_NS < now)
		c->next_send = now;
	now = wait_until(c, c->next_send);
	if (!sender_pick(c, &seq, &retx))
		return 0;
	pace_record(c, now);
	err = sender_send_one(c, seq, now);
	if (err)
		return err;
	if (retx)
		c->st.data_retransmitted++;
	c->next_send += dcudp_interval_ns(send_rate(c));
	return 0;
}

int dcudp_send(struct dcudp_conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t off = 0;
	int err;

	if (!c->sender || len == 0)
		return -EINVAL;
	c->msgno = (c->msgno + 1) & MSGNO_MASK;
	while (off < len) {
		if (c->snd_end - c->snd_una < RING &&
		    (!c->cfg.notsent_max_pkts || c->snd_end - c->snd_next < c->cfg.notsent_max_pkts)) {
			struct slot *s = slot_of(c, c->snd_end);
			size_t n = len - off < c->payload ? len - off : c->payload;

			memcpy(s->data, p + off, n);
			s->len = (uint32_t)n;
			s->lost = false;
			s->msg = c->msgno | (off == 0 ? D_FIRST : 0) | (off + n == len ? D_LAST : 0);
			off += n;
			c->snd_end++;
			continue;
		}
		err = sender_step(c, false);
		if (err)
			return err;
	}
	c->st.messages_sent++;
	return 0;
}

static int sender_close(struct dcudp_conn *c)
{
	uint64_t next = 0, give_up;
	int err;

	while (c->snd_una < c->snd_end) {
		err = sender_step(c, true);
		if (err)
			return err;
	}
	/* SHUTDOWN with the end sequence, repeated until the receiver answers */
	give_up = now_ns() + c->timeout_ns;
	while (!c->shut) {
		uint64_t now = now_ns();
		uint32_t body = wire_seq(c, c->snd_end);

		if (now > give_up)
			return -ETIMEDOUT;
		if (now >= next) {
			send_ctrl(c, T_SHUTDOWN, 0, next_ctrl_seq(c), &body, 1);
			next = now + SHUTDOWN_REPEAT_NS;
		}
		wait_event(c, now + TAIL_PROBE_NS);
	}
	return 0;
}

/* ---- receiver ---- */

static void recv_send_ack(struct dcudp_conn *c, uint64_t now)
{
	uint32_t body[2] = { wire_seq(c, c->rcv_next), (uint32_t)(c->st.rtt_ns / 1000) };
	uint32_t flags = (c->quit_pending ? 0 : F_OBS) | (c->ce_since_ack || c->ece_pending ? F_ECE : 0);
	uint32_t seq = next_ctrl_seq(c);

	if (flags & F_ECE)
		c->ece_pending = true; /* repeated until a CWR arrives, as in TCP-ECN */
	c->ce_since_ack = false;
	c->st.acks++;
	c->ack_log[seq % ACK_LOG].seq = seq;
	c->ack_log[seq % ACK_LOG].ns = now;
	send_ctrl(c, T_ACK, flags, seq, body, 2);
	c->next_ack = now + c->ack_interval;
}

/* Up to NAK_MAX_PAIRS ranges of packets missing below rcv_high and not NAK'd for `repeat`. */
static void recv_send_nak(struct dcudp_conn *c, uint64_t now, uint64_t repeat)
{
	uint32_t body[2 * NAK_MAX_PAIRS], n = 0, s;
	bool open = false;

	for (s = c->rcv_next; s < c->rcv_high && n < 2 * NAK_MAX_PAIRS; s++) {
		struct slot *sl = slot_of(c, s);
		bool want = !sl->used && now - sl->nak_ns >= repeat;

		if (want) {
			sl->nak_ns = now;
			if (!open) {
				body[n] = wire_seq(c, s);
				open = true;
			}
		} else if (open) {
			body[n + 1] = wire_seq(c, s - 1);
			n += 2;
			open = false;
		}
	}
	if (open) {
		body[n + 1] = wire_seq(c, s - 1);
		n += 2;
	}
	if (n)
		send_ctrl(c, T_NAK, c->r_cong ? F_OBS : 0, next_ctrl_seq(c), body, n);
}

/* Packets rcv_high..upto-1 are known to exist: mark them missing and NAK them at once. */
static void recv_learn_high(struct dcudp_conn *c, uint32_t upto, uint64_t now)
{
	uint32_t s, body[2];

	if (upto <= c->rcv_high)
		return;
	if (upto - c->rcv_next > RING)
		upto = c->rcv_next + RING; /* the sender never runs that far ahead of our ACKs */
	for (s = c->rcv_high; s < upto; s++) {
		slot_of(c, s)->used = false;
		slot_of(c, s)->nak_ns = now;
	}
	body[0] = wire_seq(c, c->rcv_high);
	body[1] = wire_seq(c, upto - 1);
	c->rcv_high = upto;
	send_ctrl(c, T_NAK, c->r_cong ? F_OBS : 0, next_ctrl_seq(c), body, 2);
}

static void recv_enter_cong(struct dcudp_conn *c, uint64_t now)
{
	c->r_cong = true;
	c->cond1 = false;
	c->quit_pending = false;
	memset(&c->rtt_w, 0, sizeof(c->rtt_w));
	memset(&c->pecn_w, 0, sizeof(c->pecn_w));
	c->blk_pkts = c->blk_ce = 0;
	c->ack_interval = c->st.rtt_ns; /* Interval_ACK = RTT, initially RTT_idle */
	recv_send_ack(c, now);	       /* at once, OBS and ECE set */
}

static void recv_on_data(struct dcudp_conn *c, const uint8_t *pkt, size_t n, uint8_t tos, uint64_t now)
{
	uint32_t w0 = ntohl(*(uint32_t *)pkt), w1 = ntohl(*(uint32_t *)(pkt + 4));
	uint32_t seq = rel_seq(c, w0 & SEQ_MASK);
	bool ce = (tos & 0x3) == CE;
	struct slot *s;

	c->st.data_received++;
	if (ce)
		c->st.ce_received++;
	if ((w1 & D_CWR) && c->ece_pending) {
		c->ece_pending = false;
		c->st.cwr++;
	}
	if (!(w1 & D_OBS) && c->quit_pending) { /* the sender is back in UDP Mode */
		c->r_cong = false;
		c->quit_pending = false;
		c->st.congestion_exits++;
	}
	/* getEcnTrend(): the CE fraction of each K data packets (Eq. 4) */
	if (c->r_cong && ++c->blk_pkts == DCUDP_K) {
		dcudp_window_push(&c->pecn_w, dcudp_p_ecn(c->blk_ce + ce, DCUDP_K));
		c->blk_pkts = c->blk_ce = 0;
	} else if (c->r_cong && ce) {
		c->blk_ce++;
	}
	if (ce) {
		c->ce_since_ack = true;
		if (!c->r_cong) {
			c->st.congestion_entries++;
			recv_enter_cong(c, now);
		} else if (c->cond1 || c->quit_pending) {
			/* "new ECN arrives again": Interval_ACK back to RTT, Conditions start over */
			c->cond1 = false;
			c->quit_pending = false;
			c->ack_interval = c->st.rtt_ns;
		}
	}
	if (seq < c->rcv_next || seq - c->rcv_next >= RING) {
		c->st.data_duplicate++;
		return;
	}
	if (seq >= c->rcv_high)
		recv_learn_high(c, seq, now);
	if (seq + 1 > c->rcv_high)
		c->rcv_high = seq + 1;
	s = slot_of(c, seq);
	if (s->used) {
		c->st.data_duplicate++;
		return;
	}
	s->used = true;
	s->len = (uint32_t)(n - HDR_BYTES);
	s->msg = w1 & (D_FIRST | D_LAST | MSGNO_MASK);
	memcpy(s->data, pkt + HDR_BYTES, s->len);
}

static void recv_on_ack2(struct dcudp_conn *c, uint32_t seq, uint64_t now)
{
	enum dcudp_exit_step step;
	uint64_t sample;

	if (c->ack_log[seq % ACK_LOG].seq != seq || !c->ack_log[seq % ACK_LOG].ns)
		return;
	/* RTT_current = Timestamp_ACK2 - Timestamp_ACK; RTT = 7/8 RTT + 1/8 RTT_current */
	sample = now - c->ack_log[seq % ACK_LOG].ns;
	c->ack_log[seq % ACK_LOG].ns = 0;
	c->st.ack2s++;
	c->st.rtt_ns = dcudp_rtt_update(c->st.rtt_ns, sample);
	if (!c->r_cong)
		return;
	dcudp_window_push(&c->rtt_w, sample); /* getDelayTrend(): recent RTTs (Eq. 3) */
	step = dcudp_exit_check(&c->rtt_w, &c->pecn_w, c->cond1);
	if (step == DCUDP_SLOW_ACKS && !c->cond1) {
		c->cond1 = true;
		/* Interval_ACK = beta RTT_idle, "enlarged": never below the RTT interval it replaces
		 * (a handshake's RTT_idle of ~10 us here would otherwise send an ACK every 20 us) */
		c->ack_interval = DCUDP_BETA * c->st.rtt_idle_ns;
		if (c->ack_interval < c->st.rtt_ns)
			c->ack_interval = c->st.rtt_ns;
	} else if (step == DCUDP_QUIT && !c->quit_pending) {
		c->quit_pending = true;
		recv_send_ack(c, now); /* OBS = 0 */
	} else if (!c->cond1) {
		c->ack_interval = c->st.rtt_ns;
	}
}

static void recv_on_ctrl(struct dcudp_conn *c, uint32_t type, uint32_t seq, const uint32_t *b, size_t nb,
			 uint64_t now)
{
	switch (type) {
	case T_ACK2:
		recv_on_ack2(c, seq, now);
		break;
	case T_OBS_CHANGE:
		if (c->r_cong) {
			c->r_cong = false;
			c->quit_pending = false;
			c->st.congestion_exits++;
		}
		break;
	case T_KEEPALIVE:
		c->st.keepalives++;
		if (nb >= 1)
			recv_learn_high(c, rel_seq(c, b[0]), now);
		break;
	case T_SHUTDOWN:
		if (nb >= 1 && c->shut_answered) {
			/* our answer was lost: the sender repeats its shutdown */
			send_ctrl(c, T_SHUTDOWN, 0, next_ctrl_seq(c), b, 1);
		} else if (nb >= 1) {
			c->rcv_end = rel_seq(c, b[0]);
			recv_learn_high(c, c->rcv_end, now);
			c->shut = true;
		}
		break;
	default:
		break;
	}
}

static void recv_timers(struct dcudp_conn *c, uint64_t now)
{
	uint64_t repeat = 4 * c->st.rtt_ns > NAK_REPEAT_MIN_NS ? 4 * c->st.rtt_ns : NAK_REPEAT_MIN_NS;

	if (c->r_cong && now >= c->next_ack)
		recv_send_ack(c, now);
	if (now >= c->next_ka) {
		uint32_t body = wire_seq(c, c->rcv_next);

		send_ctrl(c, T_KEEPALIVE, c->r_cong ? F_OBS : 0, next_ctrl_seq(c), &body, 1);
		c->next_ka = now + KEEPALIVE_NS;
	}
	if (now >= c->next_nak_scan) {
		recv_send_nak(c, now, repeat);
		c->next_nak_scan = now + repeat / 4;
	}
}

/* ---- both ---- */

static void handle_incoming(struct dcudp_conn *c)
{
	uint8_t buf[65536];
	uint8_t tos;
	ssize_t n;

	while ((n = recv_one(c, buf, sizeof(buf), &tos, NULL)) != 0) {
		uint32_t w0, w1, body[2 * NAK_MAX_PAIRS];
		size_t nb, i;
		uint64_t now = now_ns();

		if (n < 0) {
			if (n == -EAGAIN)
				continue; /* runt */
			return;
		}
		c->last_heard = now;
		w0 = ntohl(*(uint32_t *)buf);
		w1 = ntohl(*(uint32_t *)(buf + 4));
		if (!(w0 & CTRL_BIT)) {
			if (!c->sender)
				recv_on_data(c, buf, (size_t)n, tos, now);
			continue;
		}
		nb = ((size_t)n - HDR_BYTES) / 4;
		if (nb > 2 * NAK_MAX_PAIRS)
			nb = 2 * NAK_MAX_PAIRS;
		for (i = 0; i < nb; i++)
			body[i] = ntohl(*(uint32_t *)(buf + HDR_BYTES + 4 * i));
		if (((w0 >> 16) & 0x7fff) == T_HANDSHAKE) {
			/* a repeated request: our response was lost */
			if (!c->sender && nb >= 4 && body[0] == HS_REQUEST) {
				uint32_t r[4] = { HS_RESPONSE, c->isn, c->cfg.pkt_bytes, c->own_id };

				send_ctrl(c, T_HANDSHAKE, 0, 0, r, 4);
			} else if (!c->sender && nb >= 4 && body[0] == HS_CONFIRM && !c->rtt_measured) {
				c->rtt_measured = true;
				c->st.rtt_idle_ns = now - c->hs_resp_ns;
				c->st.rtt_ns = c->st.rtt_idle_ns;
			}
			continue;
		}
		if (c->sender)
			sender_on_ctrl(c, (w0 >> 16) & 0x7fff, w0 & 0xffff, w1, body, nb);
		else
			recv_on_ctrl(c, (w0 >> 16) & 0x7fff, w1, body, nb, now);
	}
}

ssize_t dcudp_recv(struct dcudp_conn *c, void *buf, size_t len)
{
	uint8_t *out = buf;
	size_t got = 0;

	if (c->sender)
		return -EINVAL;
	for (;;) {
		uint64_t now = now_ns(), until;
		struct pollfd p = { c->fd, POLLIN, 0 };
		struct timespec ts;

		handle_incoming(c);
		while (got < len && c->rcv_next < c->rcv_high && slot_of(c, c->rcv_next)->used) {
			struct slot *s = slot_of(c, c->rcv_next);
			size_t n = s->len - c->deliver_off < len - got ? s->len - c->deliver_off : len - got;

			memcpy(out + got, s->data + c->deliver_off, n);
			got += n;
			c->deliver_off += n;
			if (c->deliver_off == s->len) {
				if (s->msg & D_LAST)
					c->st.messages_delivered++;
				s->used = false;
				c->deliver_off = 0;
				c->rcv_next++;
			}
		}
		c->st.bytes_delivered += got;
		if (got)
			return (ssize_t)got;
		if (c->shut && c->rcv_next >= c->rcv_end) {
			uint32_t body = wire_seq(c, c->rcv_end);

			if (!c->shut_answered)
				send_ctrl(c, T_SHUTDOWN, 0, next_ctrl_seq(c), &body, 1);
			c->shut_answered = true;
			return 0;
		}
		now = now_ns();
		if (now - c->last_heard > c->timeout_ns)
			return -ETIMEDOUT;
		recv_timers(c, now);
		until = c->next_ka < c->next_nak_scan ? c->next_ka : c->next_nak_scan;
		if (c->r_cong && c->next_ack < until)
			until = c->next_ack;
		if (until > now) {
			ts.tv_sec = (until - now) / DCUDP_NSEC_PER_SEC;
			ts.tv_nsec = (until - now) % DCUDP_NSEC_PER_SEC;
			ppoll(&p, 1, &ts, NULL);
		}
	}
}

/* ---- set-up ---- */

static int conn_new(struct dcudp_conn **out, const struct dcudp_cfg *cfg, bool sender)
{
	struct dcudp_conn *c;
	int one = 1, tos = ECT0, buf = 8 << 20;

	if (!cfg || cfg->link_bps == 0)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	if (!c->cfg.pkt_bytes)
		c->cfg.pkt_bytes = DCUDP_DEFAULT_PKT_BYTES;
	if (c->cfg.pkt_bytes <= IPUDP_BYTES + HDR_BYTES || c->cfg.pkt_bytes > 9000) {
		free(c);
		return -EINVAL;
	}
	c->timeout_ns = (uint64_t)(c->cfg.timeout_ms ? c->cfg.timeout_ms : 5000) * 1000000ULL;
	c->spin_ns = c->cfg.spin_us < 0 ? PACE_SPIN_NS : (uint64_t)c->cfg.spin_us * 1000;
	c->payload = c->cfg.pkt_bytes - IPUDP_BYTES - HDR_BYTES;
	c->slot_bytes = (sizeof(struct slot) + c->payload + 7) & ~(size_t)7;
	c->ring = calloc(RING, c->slot_bytes);
	c->lossq = sender ? calloc(RING, sizeof(uint32_t)) : NULL;
	c->fd = socket(AF_INET, SOCK_DGRAM, 0);
	c->sender = sender;
	if (!c->ring || (sender && !c->lossq) || c->fd < 0) {
		dcudp_free(c);
		return -ENOMEM;
	}
	/* ECT(0) on every datagram; CE of received ones through IP_RECVTOS */
	setsockopt(c->fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	setsockopt(c->fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
	setsockopt(c->fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
	/* sleeps end within a microsecond of the requested time, not 50 us later */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	c->rate.rate_line = dcudp_line_rate(c->cfg.link_bps, c->cfg.pkt_bytes);
	c->st.rate_line_pps = c->rate.rate_line;
	c->udp_rate = dcudp_line_rate(c->cfg.udp_bps ? c->cfg.udp_bps : c->cfg.link_bps, c->cfg.pkt_bytes);
	c->st.rate_udp_pps = c->udp_rate;
	getrandom(&c->own_id, sizeof(c->own_id), 0);
	c->own_id |= 1;
	*out = c;
	return 0;
}

int dcudp_connect(struct dcudp_conn **out, const char *host, uint16_t port, const struct dcudp_cfg *cfg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct dcudp_conn *c;
	uint64_t deadline, next = 0, sent = 0;
	uint8_t buf[256], tos;
	int err = conn_new(&c, cfg, true);

	if (err)
		return err;
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		dcudp_free(c);
		return -EINVAL;
	}
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		dcudp_free(c);
		return err;
	}
	getrandom(&c->isn, sizeof(c->isn), 0);
	c->isn &= SEQ_MASK >> 1;
	c->t0 = now_ns();
	deadline = c->t0 + c->timeout_ns;
	for (;;) {
		uint64_t now = now_ns();
		struct pollfd p = { c->fd, POLLIN, 0 };
		ssize_t n;

		if (now > deadline) {
			dcudp_free(c);
			return -ETIMEDOUT;
		}
		if (now >= next) {
			uint32_t r[4] = { HS_REQUEST, c->isn, c->cfg.pkt_bytes, c->own_id };

			send_ctrl(c, T_HANDSHAKE, 0, 0, r, 4);
			sent = now;
			next = now + HS_REPEAT_NS;
		}
		poll(&p, 1, 10);
		n = recv_one(c, buf, sizeof(buf), &tos, NULL);
		if (n >= (ssize_t)(HDR_BYTES + 16) && (ntohl(*(uint32_t *)buf) & CTRL_BIT) &&
		    ntohl(*(uint32_t *)(buf + HDR_BYTES)) == HS_RESPONSE &&
		    ntohl(*(uint32_t *)(buf + HDR_BYTES + 4)) == c->isn) {
			uint32_t r[4] = { HS_CONFIRM, c->isn, c->cfg.pkt_bytes, c->own_id };

			c->peer_id = ntohl(*(uint32_t *)(buf + HDR_BYTES + 12));
			c->st.rtt_idle_ns = now_ns() - sent;
			c->rtt_ns = c->st.rtt_idle_ns;
			send_ctrl(c, T_HANDSHAKE, 0, 0, r, 4);
			break;
		}
	}
	c->last_heard = c->next_send = now_ns();
	*out = c;
	return 0;
}

int dcudp_accept(struct dcudp_conn **out, uint16_t port, const struct dcudp_cfg *cfg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) }, from;
	struct dcudp_conn *c;
	uint8_t buf[256], tos;
	int one = 1, err = conn_new(&c, cfg, false);

	if (err)
		return err;
	setsockopt(c->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		dcudp_free(c);
		return err;
	}
	for (;;) {
		struct pollfd p = { c->fd, POLLIN, 0 };
		ssize_t n;

		/* the accept waits for a sender as long as it takes */
		poll(&p, 1, -1);
		n = recv_one(c, buf, sizeof(buf), &tos, &from);
		if (n >= (ssize_t)(HDR_BYTES + 16) && (ntohl(*(uint32_t *)buf) & CTRL_BIT) &&
		    ((ntohl(*(uint32_t *)buf) >> 16) & 0x7fff) == T_HANDSHAKE &&
		    ntohl(*(uint32_t *)(buf + HDR_BYTES)) == HS_REQUEST)
			break;
		if (n < 0 && n != -EAGAIN) {
			dcudp_free(c);
			return (int)n;
		}
	}
	c->isn = ntohl(*(uint32_t *)(buf + HDR_BYTES + 4));
	c->peer_id = ntohl(*(uint32_t *)(buf + HDR_BYTES + 12));
	if (ntohl(*(uint32_t *)(buf + HDR_BYTES + 8)) != c->cfg.pkt_bytes) {
		dcudp_free(c);
		return -EPROTO; /* both ends must agree on PktSize */
	}
	if (connect(c->fd, (struct sockaddr *)&from, sizeof(from)) < 0) {
		err = -errno;
		dcudp_free(c);
		return err;
	}
	c->t0 = c->hs_resp_ns = now_ns(); /* before the send: RTT_idle includes it */
	{
		uint32_t r[4] = { HS_RESPONSE, c->isn, c->cfg.pkt_bytes, c->own_id };

		send_ctrl(c, T_HANDSHAKE, 0, 0, r, 4);
	}
	c->last_heard = c->next_ka = c->next_nak_scan = now_ns();
	/* until the confirm measures RTT_idle (it may be lost): the paper's 100 us x 10 */
	c->st.rtt_idle_ns = c->st.rtt_ns = DEFAULT_RTT_IDLE_NS;
	*out = c;
	return 0;
}

/* The receiver answers repeated shutdowns this long after its own (the sender repeats
 * every SHUTDOWN_REPEAT_NS until it hears one), as TCP's TIME_WAIT. */
#define LINGER_NS (10 * SHUTDOWN_REPEAT_NS)

int dcudp_close(struct dcudp_conn *c)
{
	uint64_t until;

	if (c->sender)
		return sender_close(c);
	until = now_ns() + LINGER_NS;
	while (c->shut_answered && now_ns() < until)
		wait_event(c, until);
	return 0;
}

void dcudp_get_stats(const struct dcudp_conn *c, struct dcudp_stats *out)
{
	uint64_t seen = 0, total = c->st.pace_sends;
	uint32_t b;

	*out = c->st;
	out->rate_data_pps = c->rate.rate_data;
	out->rate_max_pps = c->rate.rate_max;
	if (c->sender)
		out->rtt_ns = c->rtt_ns;
	out->pace_late_p50_ns = out->pace_late_p99_ns = 0;
	for (b = 0; b <= LATE_BUCKETS && total; b++) {
		seen += c->late_hist[b];
		if (!out->pace_late_p50_ns && seen * 2 >= total)
			out->pace_late_p50_ns = (uint64_t)b * 1000 + 1000;
		if (seen * 100 >= total * 99) {
			out->pace_late_p99_ns = (uint64_t)b * 1000 + 1000;
			break;
		}
	}
}

void dcudp_print_stats(FILE *f, const struct dcudp_stats *s)
{
#define P(name) fprintf(f, #name "=%llu\n", (unsigned long long)s->name)
	P(data_sent); P(data_retransmitted); P(data_received); P(data_duplicate);
	P(bytes_sent); P(bytes_delivered); P(messages_sent); P(messages_delivered);
	P(ce_received); P(acks); P(ack2s); P(naks); P(keepalives); P(cwr);
	P(congestion_entries); P(congestion_exits);
	P(rate_data_pps); P(rate_max_pps); P(rate_line_pps); P(rate_udp_pps); P(rtt_ns); P(rtt_idle_ns);
	P(pace_sends); P(pace_late_p50_ns); P(pace_late_p99_ns); P(pace_late_max_ns);
	P(first_send_ns); P(last_send_ns);
#undef P
}

void dcudp_free(struct dcudp_conn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->ring);
	free(c->lossq);
	free(c);
}
