// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * fqcn-incast - FQCN section IV-B's synchronized reads over TCP: servers
 * with a QCN reaction point on their TCP flow, and the client that reads
 * one server request unit (SRU) from every server per block.
 *
 *   fqcn-incast server --port P [--mss B] [--rp] [--line-rate-mbit R]
 *                      [--bc-limit-bytes N] [--t-us N] [--r-ai-kbit N]
 *                      [--r-hai-kbit N] [--min-rate-kbit N]
 *   fqcn-incast client --servers IP:P[,IP:P...] --sru-bytes B --blocks K [--log]
 *
 * The server accepts one connection; each 4-byte request (the SRU size,
 * network order) is answered with that many bytes. With --rp its flow is a
 * QCN reaction point: CNMs (fqcn_cnm.h) that a congestion point sends to
 * the flow's source port arrive on a UDP socket bound to the same port
 * number, drive the rate limiter of fqcn_core.h (its byte counter counts
 * what TCP sent, tcpi_bytes_sent, retransmissions included) and the limit
 * is the socket's SO_MAX_PACING_RATE, CR / 8 bytes/s, which TCP's internal
 * pacing honours without the fq qdisc. Before the first CNM the flow is not
 * limited. --mss sets TCP_MAXSEG on the listener (the paper's 1000-byte
 * packets). At the client's close it prints "name=value" counters, among
 * them the RTOs of its network namespace (TcpExtTCPTimeouts).
 *
 * The client connects to every server first, then per block sends every
 * server a request and waits for all SRUs (the barrier); goodput is the
 * bytes of all blocks over their time. With --log one line per block:
 * "block i=N ms=T". At the end "name=value" lines.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <linux/tcp.h> /* tcp_info with tcpi_bytes_sent */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fqcn_rp_tool.h"

#define MAX_SERVERS 256
/* The reaction point's timer and byte counter are read at least this often. */
#define RP_POLL_MS 1

static void usage(FILE *f)
{
	fprintf(f, "usage: fqcn-incast server --port P [--mss B] [--rp] [--line-rate-mbit R] [--bc-limit-bytes N]\n"
		   "                          [--t-us N] [--r-ai-kbit N] [--r-hai-kbit N] [--min-rate-kbit N]\n"
		   "       fqcn-incast client --servers IP:P[,IP:P...] --sru-bytes B --blocks K [--log]\n");
}

/* TcpExtTCPTimeouts of this network namespace (/proc/net/netstat). */
static long long tcp_timeouts(void)
{
	char names[4096], values[4096], *n, *v, *sn, *sv;
	FILE *f = fopen("/proc/net/netstat", "r");
	long long out = -1;

	if (!f)
		return -1;
	while (fgets(names, sizeof(names), f) && fgets(values, sizeof(values), f)) {
		if (strncmp(names, "TcpExt:", 7))
			continue;
		for (n = strtok_r(names, " \n", &sn), v = strtok_r(values, " \n", &sv); n && v;
		     n = strtok_r(NULL, " \n", &sn), v = strtok_r(NULL, " \n", &sv))
			if (!strcmp(n, "TCPTimeouts"))
				out = atoll(v);
	}
	fclose(f);
	return out;
}

static int set_pacing(int fd, const struct fqcn_rp *rp)
{
	/* not limited: no cap (~0); else CR in bytes/s */
	uint64_t v = rp->limited ? rp->cr / 8 : ~0ULL;

	return setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v, sizeof(v));
}

static int server(int argc, char **argv)
{
	static const struct option opts[] = { { "port", required_argument, 0, 'p' },
					      { "mss", required_argument, 0, 'm' },
					      { "rp", no_argument, 0, 'R' },
					      { "line-rate-mbit", required_argument, 0, 'r' },
					      FQCN_RP_LONG_OPTIONS,
					      { 0, 0, 0, 0 } };
	struct fqcn_rp_params p = FQCN_RP_PARAMS_QAU(0);
	struct sockaddr_in a = { .sin_family = AF_INET }, peer;
	uint64_t port = 0, mss = 0, mbit = 100, to_send = 0, requests = 0;
	uint64_t sent_seen = 0, cr_min, last_cr = 0;
	long long rto0, rto1;
	bool use_rp = false, last_limited = false;
	static char buf[65536];
	unsigned char req[4];
	size_t req_have = 0;
	socklen_t pl = sizeof(peer);
	struct fqcn_rp_flow flow;
	struct fqcn_rp rp;
	int ch, lfd, ufd, fd, one = 1;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'p': if (tool_u64("--port", optarg, 1, 65535, &port)) return 2; break;
		case 'm': if (tool_u64("--mss", optarg, 88, 65535, &mss)) return 2; break;
		case 'R': use_rp = true; break;
		case 'r': if (tool_u64("--line-rate-mbit", optarg, 1, 100000, &mbit)) return 2; break;
		case 1: case 2: case 3: case 4: case 5: if (fqcn_rp_option(ch, optarg, &p)) return 2; break;
		default: usage(stderr); return 2;
		}
	}
	if (!port) {
		fprintf(stderr, "--port is required\n");
		return 2;
	}
	p.line_rate = mbit * 1000000ULL;
	if (p.min_rate > p.line_rate) {
		fprintf(stderr, "--min-rate-kbit: above --line-rate-mbit %llu\n", (unsigned long long)mbit);
		return 2;
	}
	a.sin_port = htons((uint16_t)port);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ufd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0 || ufd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    (mss && setsockopt(lfd, IPPROTO_TCP, TCP_MAXSEG, &(int){ (int)mss }, sizeof(int))) ||
	    bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
	    bind(ufd, (struct sockaddr *)&a, sizeof(a))) {
		perror("--port");
		return 1;
	}
	printf("listening port=%llu\n", (unsigned long long)port);
	fflush(stdout);
	fd = accept4(lfd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		perror("accept");
		return 1;
	}
	close(lfd);
	flow = (struct fqcn_rp_flow){ .daddr = peer.sin_addr.s_addr, .sport = a.sin_port, .dport = peer.sin_port };
	rto0 = tcp_timeouts();
	fqcn_rp_init(&rp, &p);
	cr_min = rp.cr;

	for (;;) {
		struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN | (to_send ? POLLOUT : 0) },
					 { .fd = ufd, .events = POLLIN } };
		struct tcp_info ti;
		socklen_t tl = sizeof(ti);
		uint64_t now;
		ssize_t n;

		if (poll(pfd, 2, RP_POLL_MS) < 0 && errno != EINTR) {
			perror("poll");
			return 1;
		}
		now = tool_now_ns();
		fqcn_rp_read_cnms(ufd, &flow, &rp, &p, use_rp, now);
		if (use_rp) {
			if (!getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) && ti.tcpi_bytes_sent > sent_seen) {
				fqcn_rp_on_sent(&rp, &p, ti.tcpi_bytes_sent - sent_seen);
				sent_seen = ti.tcpi_bytes_sent;
			}
			fqcn_rp_on_time(&rp, &p, now);
			if ((rp.cr != last_cr || rp.limited != last_limited) && set_pacing(fd, &rp)) {
				perror("SO_MAX_PACING_RATE");
				return 1;
			}
			last_cr = rp.cr;
			last_limited = rp.limited;
			cr_min = rp.cr < cr_min ? rp.cr : cr_min;
		}
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(fd, req + req_have, sizeof(req) - req_have, 0);
			if (n == 0 || (n < 0 && errno != EAGAIN))
				break; /* the client is done */
			if (n > 0 && (req_have += (size_t)n) == sizeof(req)) {
				uint32_t sru;

				memcpy(&sru, req, sizeof(sru));
				to_send += ntohl(sru);
				req_have = 0;
				requests++;
			}
		}
		while (to_send) {
			n = send(fd, buf, to_send < sizeof(buf) ? to_send : sizeof(buf), MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EAGAIN)
					break;
				perror("send");
				return 1;
			}
			to_send -= (uint64_t)n;
		}
	}
	rto1 = tcp_timeouts();
	{
		struct tcp_info ti;
		socklen_t tl = sizeof(ti);

		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl))
			memset(&ti, 0, sizeof(ti));
		printf("requests=%llu\nbytes_sent=%llu\nretrans=%u\nrtos=%lld\ncnms=%llu\ncnms_foreign=%llu\n"
		       "cr_min_mbit=%.3f\ncr_end_mbit=%.3f\nlimited=%d\n",
		       (unsigned long long)requests, (unsigned long long)ti.tcpi_bytes_sent, ti.tcpi_total_retrans,
		       rto0 >= 0 && rto1 >= 0 ? rto1 - rto0 : -1, (unsigned long long)flow.cnms,
		       (unsigned long long)flow.cnms_foreign, cr_min / 1e6, rp.cr / 1e6, rp.limited);
	}
	close(fd);
	close(ufd);
	return 0;
}

static int client(int argc, char **argv)
{
	static const struct option opts[] = { { "servers", required_argument, 0, 's' },
					      { "sru-bytes", required_argument, 0, 'b' },
					      { "blocks", required_argument, 0, 'k' },
					      { "log", no_argument, 0, 'l' },
					      { 0, 0, 0, 0 } };
	struct sockaddr_in srv[MAX_SERVERS];
	struct pollfd pfd[MAX_SERVERS];
	uint64_t sru = 0, blocks = 0, left[MAX_SERVERS], t0, t_all, b, us_max = 0, us_min = UINT64_MAX;
	char *list = NULL, *tok, *save;
	static char buf[65536];
	bool log = false;
	int n = 0, ch, i;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 's': list = optarg; break;
		case 'b': if (tool_u64("--sru-bytes", optarg, 1, 1U << 30, &sru)) return 2; break;
		case 'k': if (tool_u64("--blocks", optarg, 1, 1000000, &blocks)) return 2; break;
		case 'l': log = true; break;
		default: usage(stderr); return 2;
		}
	}
	if (!list || !sru || !blocks) {
		fprintf(stderr, "%s is required\n", !list ? "--servers" : !sru ? "--sru-bytes" : "--blocks");
		return 2;
	}
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(tok, ':');
		uint64_t port;

		if (n == MAX_SERVERS) {
			fprintf(stderr, "--servers: at most %d\n", MAX_SERVERS);
			return 2;
		}
		if (!colon) {
			fprintf(stderr, "--servers: '%s' is not IP:PORT\n", tok);
			return 2;
		}
		*colon = 0;
		srv[n] = (struct sockaddr_in){ .sin_family = AF_INET };
		if (inet_pton(AF_INET, tok, &srv[n].sin_addr) != 1 || tool_u64("--servers port", colon + 1, 1, 65535, &port))
			return 2;
		srv[n].sin_port = htons((uint16_t)port);
		n++;
	}
	for (i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&srv[i], sizeof(srv[i]))) {
			perror("connect");
			return 1;
		}
		pfd[i] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	t_all = tool_now_ns();
	for (b = 0; b < blocks; b++) {
		uint32_t req = htonl((uint32_t)sru);
		int pending = n;
		uint64_t us;

		t0 = tool_now_ns();
		for (i = 0; i < n; i++) {
			if (send(pfd[i].fd, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req)) {
				perror("request");
				return 1;
			}
			left[i] = sru;
			pfd[i].events = POLLIN;
		}
		while (pending) {
			if (poll(pfd, (nfds_t)n, -1) < 0) {
				if (errno == EINTR)
					continue;
				perror("poll");
				return 1;
			}
			for (i = 0; i < n; i++) {
				ssize_t got;

				if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				got = recv(pfd[i].fd, buf, left[i] < sizeof(buf) ? left[i] : sizeof(buf), 0);
				if (got <= 0) {
					fprintf(stderr, "server %d closed in block %llu\n", i, (unsigned long long)b);
					return 1;
				}
				left[i] -= (uint64_t)got;
				if (!left[i]) {
					pfd[i].events = 0; /* this server's SRU is in */
					pending--;
				}
			}
		}
		us = (tool_now_ns() - t0) / 1000;
		us_max = us > us_max ? us : us_max;
		us_min = us < us_min ? us : us_min;
		if (log)
			printf("block i=%llu ms=%.3f\n", (unsigned long long)b, us / 1000.0);
	}
	t_all = tool_now_ns() - t_all;
	printf("servers=%d\nblocks=%llu\nsru_bytes=%llu\nseconds=%.4f\ngoodput_mbit=%.3f\nblock_ms_min=%.3f\n"
	       "block_ms_max=%.3f\n",
	       n, (unsigned long long)blocks, (unsigned long long)sru, t_all / 1e9,
	       (double)n * (double)sru * (double)blocks * 8.0 / (t_all / 1e3), us_min / 1000.0, us_max / 1000.0);
	for (i = 0; i < n; i++)
		close(pfd[i].fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "server"))
		return server(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "client"))
		return client(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "fqcn-incast: the first argument must be server or client\n");
	usage(stderr);
	return 2;
}
