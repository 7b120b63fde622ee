// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * fqcn-cp - a QCN / FQCN congestion point for one switch port of a Linux
 * namespace switch, in user space.
 *
 *   fqcn-cp --port DEV --in DEV[,DEV...] --q-eq-bytes N [--mode qcn|fqcn]
 *           [--sample-base-bytes N] [--duration-ms MS] [--log]
 *
 * --port is the congested egress port: its root qdisc (HTB + bfifo on the
 * bench's switch) is the queue Q, read over rtnetlink (libmnl) at each
 * sample. --in are the ports the senders' frames come in on: an AF_PACKET
 * tap on each sees every arrival (its length counts against the sampling
 * interval; its IPv4 flow's arrivals A_i are counted for FQCN). At a sample
 * the core (fqcn_core.h) gives the quantised |Fb|; when it is non-zero a
 * CNM (fqcn_cnm.h) goes to the sampled frame's source (qcn) or to every
 * flow at or over its share with its part of Fb (fqcn), written as an
 * Ethernet frame onto the port that flow came in on. --sample-base-bytes
 * scales the sampling table (default 153600, the standard's 150 KB at
 * |Fb| < 8) for a testbed that scales the paper's bytes down.
 *
 * With --log one line per sample: "sample t_ms=T q=Q fb_q=F cnms=N". At the
 * end (--duration-ms, SIGINT or SIGTERM) "name=value" counters and one
 * "flow=" line per flow. Needs CAP_NET_RAW and CAP_NET_ADMIN (root).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <libmnl/libmnl.h>
#include <linux/gen_stats.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fqcn_cnm.h"
#include "fqcn_core.h"
#include "tool_args.h"

#define MAX_IN 64
#define MAX_FLOWS 256
/* A flow that sent nothing for this long gives its slot up when the table is full. */
#define FLOW_IDLE_NS 1000000000ULL

struct tap {
	int fd;
	int ifindex;
	unsigned char mac[ETH_ALEN];
};

struct flow {
	uint32_t saddr, daddr; /* network order */
	uint16_t sport, dport; /* network order */
	uint8_t proto;
	unsigned char smac[ETH_ALEN];
	int tap;		 /* index of the tap it came in on */
	uint64_t last_ns;
	uint64_t bytes, cnms; /* totals for the summary */
};

static struct tap taps[MAX_IN];
static int n_taps;
static struct flow flows[MAX_FLOWS];
static uint64_t arrivals[MAX_FLOWS]; /* A_i, frames in the current sampling interval */
static uint32_t fb_out[MAX_FLOWS];
static int n_flows;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* --- the port's queue over rtnetlink ------------------------------------- */

struct qstats {
	uint64_t backlog, drops;
	bool found;
};

static int stats2_cb(const struct nlattr *a, void *data)
{
	struct qstats *qs = data;
	struct gnet_stats_queue q;

	if (mnl_attr_get_type(a) == TCA_STATS_QUEUE && mnl_attr_get_payload_len(a) >= sizeof(q)) {
		memcpy(&q, mnl_attr_get_payload(a), sizeof(q));
		qs->backlog = q.backlog;
		qs->drops = q.drops;
		qs->found = true;
	}
	return MNL_CB_OK;
}

static int qdisc_attr_cb(const struct nlattr *a, void *data)
{
	if (mnl_attr_get_type(a) == TCA_STATS2)
		mnl_attr_parse_nested(a, stats2_cb, data);
	return MNL_CB_OK;
}

static int qdisc_cb(const struct nlmsghdr *nlh, void *data)
{
	return mnl_attr_parse(nlh, sizeof(struct tcmsg), qdisc_attr_cb, data);
}

/* The root qdisc's backlog (bytes) and drops of ifindex. */
static int port_queue(struct mnl_socket *nl, int ifindex, struct qstats *qs)
{
	static unsigned int seq;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct tcmsg *tcm;
	ssize_t n;
	int ret;

	nlh->nlmsg_type = RTM_GETQDISC;
	/* a get is answered to the asker only with NLM_F_ECHO (rtnetlink_send) */
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ECHO;
	nlh->nlmsg_seq = ++seq;
	tcm = mnl_nlmsg_put_extra_header(nlh, sizeof(*tcm));
	tcm->tcm_family = AF_UNSPEC;
	tcm->tcm_ifindex = ifindex;
	tcm->tcm_parent = TC_H_ROOT;
	memset(qs, 0, sizeof(*qs));
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	/* one message answers a get; the socket's receive timeout bounds the wait */
	n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	ret = mnl_cb_run(buf, n, seq, mnl_socket_get_portid(nl), qdisc_cb, qs);
	if (ret < 0)
		return -errno;
	return qs->found ? 0 : -ENOENT;
}

/* --- taps and CNMs -------------------------------------------------------- */

static int tap_open(const char *dev, struct tap *t)
{
	/* ETH_P_ALL: taps of one protocol run after the bridge took the frame, so never */
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct ifreq ifr = { 0 };

	t->ifindex = (int)if_nametoindex(dev);
	if (!t->ifindex) {
		fprintf(stderr, "--in: no device '%s' in this network namespace\n", dev);
		return -1;
	}
	t->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (t->fd < 0) {
		perror("socket(AF_PACKET)");
		return -1;
	}
	sll.sll_ifindex = t->ifindex;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	if (bind(t->fd, (struct sockaddr *)&sll, sizeof(sll)) || ioctl(t->fd, SIOCGIFHWADDR, &ifr)) {
		perror(dev);
		return -1;
	}
	memcpy(t->mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	return 0;
}

/* RFC 1071 checksum of the IPv4 header. */
static uint16_t ip_checksum(const void *hdr, size_t len)
{
	const uint16_t *w = hdr;
	uint32_t sum = 0;

	for (; len > 1; len -= 2)
		sum += *w++;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* A CNM to flow f: Ethernet to its source MAC on the port it came in on,
 * IPv4 from its destination address (which the source's reverse-path filter
 * accepts on that link) to its source, UDP to its source port. */
static int cnm_send(const struct flow *f, uint32_t fb_q, enum fqcn_mode mode, int64_t q_off, int64_t q_delta)
{
	struct {
		struct ethhdr eth;
		struct iphdr ip;
		struct udphdr udp;
		struct fqcn_cnm cnm;
	} __attribute__((packed)) fr = { 0 };
	const struct tap *t = &taps[f->tap];
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = t->ifindex, .sll_halen = ETH_ALEN };

	memcpy(fr.eth.h_dest, f->smac, ETH_ALEN);
	memcpy(fr.eth.h_source, t->mac, ETH_ALEN);
	fr.eth.h_proto = htons(ETH_P_IP);
	fr.ip.version = 4;
	fr.ip.ihl = 5;
	fr.ip.tot_len = htons(sizeof(fr) - sizeof(fr.eth));
	fr.ip.ttl = 64;
	fr.ip.protocol = IPPROTO_UDP;
	fr.ip.saddr = f->daddr;
	fr.ip.daddr = f->saddr;
	fr.ip.check = ip_checksum(&fr.ip, sizeof(fr.ip));
	fr.udp.source = htons(FQCN_CNM_PORT);
	fr.udp.dest = f->sport;
	fr.udp.len = htons(sizeof(fr.udp) + sizeof(fr.cnm)); /* checksum 0: none (IPv4) */
	fr.cnm.magic = htonl(FQCN_CNM_MAGIC);
	fr.cnm.version = FQCN_CNM_VERSION;
	fr.cnm.fb_q = (uint8_t)fb_q;
	fr.cnm.mode = (uint8_t)mode;
	fr.cnm.flow_daddr = f->daddr;
	fr.cnm.flow_sport = f->sport;
	fr.cnm.flow_dport = f->dport;
	fr.cnm.q_off = (int32_t)htonl((uint32_t)(int32_t)q_off);
	fr.cnm.q_delta = (int32_t)htonl((uint32_t)(int32_t)q_delta);
	memcpy(to.sll_addr, f->smac, ETH_ALEN);
	return sendto(t->fd, &fr, sizeof(fr), 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)sizeof(fr) ? 0 : -1;
}

/* The flow of an arriving IPv4 frame (UDP or TCP), added when new; -1 when
 * the frame is no such flow or the table is full of live flows. */
static int flow_of(const unsigned char *fr, size_t caplen, int tap, uint64_t now)
{
	const struct iphdr *ip = (const void *)(fr + ETH_HLEN);
	const uint16_t *ports;
	size_t ihl;
	int i, slot = -1;

	if (caplen < ETH_HLEN + sizeof(*ip) || ip->version != 4)
		return -1;
	ihl = ip->ihl * 4U;
	if ((ip->protocol != IPPROTO_UDP && ip->protocol != IPPROTO_TCP) || caplen < ETH_HLEN + ihl + 4)
		return -1;
	ports = (const void *)(fr + ETH_HLEN + ihl);
	for (i = 0; i < n_flows; i++) {
		struct flow *f = &flows[i];

		if (f->saddr == ip->saddr && f->daddr == ip->daddr && f->sport == ports[0] && f->dport == ports[1] &&
		    f->proto == ip->protocol) {
			f->last_ns = now;
			f->tap = tap;
			return i;
		}
		if (slot < 0 && arrivals[i] == 0 && now - f->last_ns > FLOW_IDLE_NS)
			slot = i;
	}
	if (n_flows < MAX_FLOWS)
		slot = n_flows++;
	if (slot < 0)
		return -1;
	flows[slot] = (struct flow){ .saddr = ip->saddr, .daddr = ip->daddr, .sport = ports[0], .dport = ports[1],
				     .proto = ip->protocol, .tap = tap, .last_ns = now };
	memcpy(flows[slot].smac, fr + ETH_ALEN, ETH_ALEN);
	arrivals[slot] = 0;
	return slot;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fqcn-cp --port DEV --in DEV[,DEV...] --q-eq-bytes N [--mode qcn|fqcn] "
		   "[--sample-base-bytes N] [--duration-ms MS] [--log]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "port", required_argument, 0, 'p' },
					      { "in", required_argument, 0, 'i' },
					      { "q-eq-bytes", required_argument, 0, 'q' },
					      { "mode", required_argument, 0, 'm' },
					      { "duration-ms", required_argument, 0, 'd' },
					      { "log", no_argument, 0, 'l' },
					      { "sample-base-bytes", required_argument, 0, 'b' },
					      { "help", no_argument, 0, 'H' },
					      { 0, 0, 0, 0 } };
	enum fqcn_mode mode = FQCN_MODE_FQCN;
	const char *port = NULL;
	char *in = NULL, *dev, *save;
	uint64_t q_eq = 0, duration_ms = 0, start, end = 0, sample_base = FQCN_SAMPLE_BASE;
	uint64_t samples = 0, cnms = 0, cnm_errors = 0, q_sum = 0, q_max = 0, drops0 = 0;
	struct pollfd pfd[MAX_IN];
	struct timeval nl_timeout = { .tv_sec = 1 };
	struct mnl_socket *nl;
	struct qstats qs;
	struct fqcn_cp cp;
	bool log = false;
	int port_ifindex, ch, i;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'p': port = optarg; break;
		case 'i': in = optarg; break;
		case 'q': if (tool_u64("--q-eq-bytes", optarg, 1500, 1U << 30, &q_eq)) return 2; break;
		case 'm':
			if (!strcmp(optarg, "qcn"))
				mode = FQCN_MODE_QCN;
			else if (!strcmp(optarg, "fqcn"))
				mode = FQCN_MODE_FQCN;
			else {
				fprintf(stderr, "--mode: '%s' is not one of qcn, fqcn\n", optarg);
				return 2;
			}
			break;
		case 'd': if (tool_u64("--duration-ms", optarg, 1, 86400000, &duration_ms)) return 2; break;
		case 'l': log = true; break;
		case 'b':
			if (tool_u64("--sample-base-bytes", optarg, 1500, FQCN_SAMPLE_BASE * 100ULL, &sample_base))
				return 2;
			break;
		case 'H': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!port || !in || !q_eq) {
		fprintf(stderr, "%s is required\n", !port ? "--port" : !in ? "--in" : "--q-eq-bytes");
		usage(stderr);
		return 2;
	}
	port_ifindex = (int)if_nametoindex(port);
	if (!port_ifindex) {
		fprintf(stderr, "--port: no device '%s' in this network namespace\n", port);
		return 2;
	}
	for (dev = strtok_r(in, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
		if (n_taps == MAX_IN) {
			fprintf(stderr, "--in: at most %d devices\n", MAX_IN);
			return 2;
		}
		if (tap_open(dev, &taps[n_taps]))
			return 1;
		pfd[n_taps] = (struct pollfd){ .fd = taps[n_taps].fd, .events = POLLIN };
		n_taps++;
	}
	nl = mnl_socket_open(NETLINK_ROUTE);
	if (!nl || mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0 ||
	    setsockopt(mnl_socket_get_fd(nl), SOL_SOCKET, SO_RCVTIMEO, &nl_timeout, sizeof(nl_timeout))) {
		perror("rtnetlink");
		return 1;
	}
	if (port_queue(nl, port_ifindex, &qs)) {
		fprintf(stderr, "--port %s: no root qdisc statistics\n", port);
		return 1;
	}
	drops0 = qs.drops;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fqcn_cp_init(&cp, q_eq, (uint32_t)sample_base);
	start = tool_now_ns();
	if (duration_ms)
		end = start + duration_ms * 1000000ULL;
	printf("cp port=%s mode=%s q_eq=%llu\n", port, mode == FQCN_MODE_QCN ? "qcn" : "fqcn", (unsigned long long)q_eq);
	fflush(stdout);

	while (!stop && (!end || tool_now_ns() < end)) {
		if (poll(pfd, n_taps, 100) < 0) {
			if (errno == EINTR)
				continue;
			perror("poll");
			return 1;
		}
		for (i = 0; i < n_taps; i++) {
			unsigned char fr[128];
			struct sockaddr_ll from;
			socklen_t fl = sizeof(from);
			ssize_t len;
			uint64_t now, q;
			uint32_t fb_q, sent = 0;
			int64_t q_old;
			int fi, k;

			if (!(pfd[i].revents & POLLIN))
				continue;
			while ((len = recvfrom(taps[i].fd, fr, sizeof(fr), MSG_TRUNC, (struct sockaddr *)&from, &fl)) > 0) {
				fl = sizeof(from);
				if (from.sll_pkttype == PACKET_OUTGOING || from.sll_protocol != htons(ETH_P_IP))
					continue; /* our own CNMs, ARP */
				now = tool_now_ns();
				fi = flow_of(fr, (size_t)len < sizeof(fr) ? (size_t)len : sizeof(fr), i, now);
				if (fi >= 0) {
					arrivals[fi]++;
					flows[fi].bytes += (uint64_t)len;
				}
				if (!fqcn_cp_arrival(&cp, (uint32_t)len))
					continue;
				if (port_queue(nl, port_ifindex, &qs)) {
					fprintf(stderr, "--port %s: queue read failed\n", port);
					return 1;
				}
				q = qs.backlog;
				q_old = (int64_t)cp.q_old;
				fb_q = fqcn_cp_sample(&cp, q);
				samples++;
				q_sum += q;
				q_max = q > q_max ? q : q_max;
				if (fb_q && mode == FQCN_MODE_QCN && fi >= 0) {
					if (cnm_send(&flows[fi], fb_q, mode, (int64_t)q - (int64_t)q_eq, (int64_t)q - q_old))
						cnm_errors++;
					else {
						sent++;
						flows[fi].cnms++;
					}
				} else if (fb_q && mode == FQCN_MODE_FQCN) {
					fqcn_fair_feedback(arrivals, (uint32_t)n_flows, fb_q, fb_out);
					for (k = 0; k < n_flows; k++) {
						if (!fb_out[k])
							continue;
						if (cnm_send(&flows[k], fb_out[k], mode, (int64_t)q - (int64_t)q_eq,
							     (int64_t)q - q_old))
							cnm_errors++;
						else {
							sent++;
							flows[k].cnms++;
						}
					}
				}
				cnms += sent;
				memset(arrivals, 0, sizeof(arrivals[0]) * (size_t)n_flows);
				if (log)
					printf("sample t_ms=%.3f q=%llu fb_q=%u cnms=%u\n", (now - start) / 1e6,
					       (unsigned long long)q, fb_q, sent);
			}
		}
	}
	port_queue(nl, port_ifindex, &qs);
	printf("samples=%llu\ncnms=%llu\ncnm_errors=%llu\nq_mean=%llu\nq_max=%llu\nport_drops=%llu\n",
	       (unsigned long long)samples, (unsigned long long)cnms, (unsigned long long)cnm_errors,
	       (unsigned long long)(samples ? q_sum / samples : 0), (unsigned long long)q_max,
	       (unsigned long long)(qs.drops - drops0));
	for (i = 0; i < n_flows; i++) {
		char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &flows[i].saddr, s, sizeof(s));
		inet_ntop(AF_INET, &flows[i].daddr, d, sizeof(d));
		printf("flow=%s:%u>%s:%u bytes=%llu cnms=%llu\n", s, ntohs(flows[i].sport), d, ntohs(flows[i].dport),
		       (unsigned long long)flows[i].bytes, (unsigned long long)flows[i].cnms);
	}
	mnl_socket_close(nl);
	return 0;
}
