// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * fqcn-cbr - a constant-bit-rate UDP source with a QCN reaction point.
 *
 *   fqcn-cbr --dst IP --dst-port P --src-port P --rate-mbit R --duration-ms MS
 *            [--rp] [--payload-bytes B] [--log-ms MS]
 *            [--bc-limit-bytes N] [--t-us N] [--r-ai-kbit N] [--r-hai-kbit N] [--min-rate-kbit N]
 *
 * Sends datagrams of B bytes (default 1472: 1514-byte frames) to IP:P at R
 * Mbit/s of frames. With --rp the source is a QCN reaction point: the CNMs
 * (fqcn_cnm.h) that a congestion point sends to its source port drive the
 * rate limiter of fqcn_core.h, and the source sends at min(R, CR); R is the
 * limiter's line rate. The parameters default to IEEE 802.1Qau's (BC_LIMIT
 * 150000 B, T 15 ms, R_AI 5 Mbit/s, R_HAI 50 Mbit/s, min 5 Mbit/s), which
 * are sized for 10 Gbit/s; slower links scale them (fqcn/README.md). The
 * limiter is the source's own pacer: this kernel has no fq qdisc to honour
 * SO_MAX_PACING_RATE for UDP.
 *
 * With --log-ms one line per period: "rate t_ms=T cr_mbit= tr_mbit=
 * sent_mbit= cnms= bc_stage= timer_stage=". At the end "name=value" lines.
 */
#define _GNU_SOURCE /* ppoll */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fqcn_rp_tool.h"

/* Ethernet, IPv4 and UDP headers around each payload: the rates count frames. */
#define FRAME_OVERHEAD (14 + 20 + 8)
/* A late pacer may catch up by at most this many frames at once. */
#define MAX_BURST 4

static void usage(FILE *f)
{
	fprintf(f, "usage: fqcn-cbr --dst IP --dst-port P --src-port P --rate-mbit R --duration-ms MS [--rp]\n"
		   "                [--payload-bytes B] [--log-ms MS] [--bc-limit-bytes N] [--t-us N]\n"
		   "                [--r-ai-kbit N] [--r-hai-kbit N] [--min-rate-kbit N]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "dst", required_argument, 0, 'd' },
					      { "dst-port", required_argument, 0, 'D' },
					      { "src-port", required_argument, 0, 'S' },
					      { "rate-mbit", required_argument, 0, 'r' },
					      { "duration-ms", required_argument, 0, 't' },
					      { "rp", no_argument, 0, 'R' },
					      { "payload-bytes", required_argument, 0, 'b' },
					      { "log-ms", required_argument, 0, 'l' },
					      FQCN_RP_LONG_OPTIONS,
					      { "help", no_argument, 0, 'H' },
					      { 0, 0, 0, 0 } };
	struct fqcn_rp_params p = FQCN_RP_PARAMS_QAU(0);
	struct sockaddr_in dst = { .sin_family = AF_INET }, src = { .sin_family = AF_INET };
	uint64_t dport = 0, sport = 0, mbit = 0, duration_ms = 0, payload = 1472, log_ms = 0;
	uint64_t start, end, now, t_next, log_next = 0, frame, gap;
	uint64_t sent = 0, sent_log = 0, cr_min;
	struct fqcn_rp_flow flow = { 0 };
	static char buf[9000];
	struct fqcn_rp rp;
	bool use_rp = false;
	int ch, fd;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'd':
			if (inet_pton(AF_INET, optarg, &dst.sin_addr) != 1) {
				fprintf(stderr, "--dst: '%s' is not an IPv4 address\n", optarg);
				return 2;
			}
			break;
		case 'D': if (tool_u64("--dst-port", optarg, 1, 65535, &dport)) return 2; break;
		case 'S': if (tool_u64("--src-port", optarg, 1, 65535, &sport)) return 2; break;
		case 'r': if (tool_u64("--rate-mbit", optarg, 1, 100000, &mbit)) return 2; break;
		case 't': if (tool_u64("--duration-ms", optarg, 1, 86400000, &duration_ms)) return 2; break;
		case 'R': use_rp = true; break;
		case 'b': if (tool_u64("--payload-bytes", optarg, sizeof(struct fqcn_cnm), 8972, &payload)) return 2; break;
		case 'l': if (tool_u64("--log-ms", optarg, 1, 60000, &log_ms)) return 2; break;
		case 1: case 2: case 3: case 4: case 5: if (fqcn_rp_option(ch, optarg, &p)) return 2; break;
		case 'H': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!dst.sin_addr.s_addr || !dport || !sport || !mbit || !duration_ms) {
		fprintf(stderr, "%s is required\n",
			!dst.sin_addr.s_addr ? "--dst" : !dport ? "--dst-port" : !sport ? "--src-port" : !mbit ? "--rate-mbit" : "--duration-ms");
		usage(stderr);
		return 2;
	}
	p.line_rate = mbit * 1000000ULL;
	if (p.min_rate > p.line_rate) {
		fprintf(stderr, "--min-rate-kbit: %llu kbit/s is above --rate-mbit %llu\n",
			(unsigned long long)(p.min_rate / 1000), (unsigned long long)mbit);
		return 2;
	}
	dst.sin_port = htons((uint16_t)dport);
	src.sin_port = htons((uint16_t)sport);
	flow = (struct fqcn_rp_flow){ .daddr = dst.sin_addr.s_addr, .sport = src.sin_port, .dport = dst.sin_port };
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&src, sizeof(src))) {
		perror("--src-port");
		return 1;
	}
	/* the pacer wakes for frames ~100 us apart */
	prctl(PR_SET_TIMERSLACK, 1UL);
	fqcn_rp_init(&rp, &p);
	cr_min = rp.cr;
	frame = payload + FRAME_OVERHEAD;
	start = t_next = tool_now_ns();
	end = start + duration_ms * 1000000ULL;
	if (log_ms)
		log_next = start + log_ms * 1000000ULL;

	while ((now = tool_now_ns()) < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t wait;

		fqcn_rp_read_cnms(fd, &flow, &rp, &p, use_rp, now);
		if (use_rp)
			fqcn_rp_on_time(&rp, &p, now);
		cr_min = rp.cr < cr_min ? rp.cr : cr_min;
		if (log_ms && now >= log_next) {
			printf("rate t_ms=%llu cr_mbit=%.3f tr_mbit=%.3f sent_mbit=%.3f cnms=%llu bc_stage=%u timer_stage=%u\n",
			       (unsigned long long)((now - start) / 1000000), rp.cr / 1e6, rp.tr / 1e6,
			       sent_log * 8.0 / (log_ms * 1000.0), (unsigned long long)flow.cnms, rp.bc_stage, rp.timer_stage);
			sent_log = 0;
			log_next += log_ms * 1000000ULL;
		}
		if (now >= t_next) {
			if (sendto(fd, buf, payload, 0, (struct sockaddr *)&dst, sizeof(dst)) < 0 && errno != ENOBUFS) {
				perror("sendto");
				return 1;
			}
			sent += frame;
			sent_log += frame;
			if (use_rp)
				fqcn_rp_on_sent(&rp, &p, frame);
			gap = fqcn_rp_gap_ns(&rp, frame);
			t_next += gap;
			if (now > t_next + MAX_BURST * gap)
				t_next = now;
			continue;
		}
		wait = (int64_t)(t_next - now);
		{
			struct timespec ts = { .tv_sec = wait / 1000000000, .tv_nsec = wait % 1000000000 };

			ppoll(&pfd, 1, &ts, NULL);
		}
	}
	printf("sent_bytes=%llu\nsent_mbit=%.3f\ncnms=%llu\ncnms_foreign=%llu\ncr_min_mbit=%.3f\ncr_end_mbit=%.3f\n",
	       (unsigned long long)sent, sent * 8.0 / (duration_ms * 1000.0), (unsigned long long)flow.cnms,
	       (unsigned long long)flow.cnms_foreign, cr_min / 1e6, rp.cr / 1e6);
	close(fd);
	return 0;
}
