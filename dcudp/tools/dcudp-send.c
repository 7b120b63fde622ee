// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * dcudp-send - send a file (or endless data for --seconds) over DCUDP.
 *
 *   dcudp-send --host IP --port P --link-mbit C (--file F | --seconds S | --stop-at-ns T)
 *              [--pkt-bytes B] [--message-bytes M] [--timeout-ms T] [--spin-us U]
 *              [--start-at-ns T] [--udp-mbit R] [--notsent-pkts N]
 *
 * --link-mbit is C, the bottleneck; --udp-mbit the UDP Mode rate (default C).
 * Each --message-bytes chunk is one DCUDP message. --start-at-ns: connect at
 * once, send the first byte at CLOCK_MONOTONIC time T (several senders that
 * start together, as a bench's preconnected sockets; T under a second ahead,
 * so that the receiver's 5 s silence timeout does not fire). --stop-at-ns T: endless
 * data until CLOCK_MONOTONIC time T, then close (section V-B's FTP flow that stops;
 * with --notsent-pkts, the wire stops soon after). At the end prints the
 * connection's counters ("name=value") and the achieved sending rate.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcudp.h"
#include "tool_args.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: dcudp-send --host IP --port P --link-mbit C (--file F | --seconds S | --stop-at-ns T)\n"
		   "                  [--pkt-bytes B] [--message-bytes M] [--timeout-ms T] [--spin-us U]\n"
		   "                  [--start-at-ns T] [--udp-mbit R] [--notsent-pkts N]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "host", required_argument, 0, 'h' },
					      { "port", required_argument, 0, 'p' },
					      { "link-mbit", required_argument, 0, 'l' },
					      { "file", required_argument, 0, 'f' },
					      { "seconds", required_argument, 0, 's' },
					      { "pkt-bytes", required_argument, 0, 'b' },
					      { "message-bytes", required_argument, 0, 'm' },
					      { "timeout-ms", required_argument, 0, 't' },
					      { "spin-us", required_argument, 0, 'S' },
					      { "start-at-ns", required_argument, 0, 'A' },
					      { "udp-mbit", required_argument, 0, 'U' },
					      { "stop-at-ns", required_argument, 0, 'Z' },
					      { "notsent-pkts", required_argument, 0, 'N' },
					      { "help", no_argument, 0, 'H' },
					      { 0, 0, 0, 0 } };
	struct dcudp_cfg cfg = { .spin_us = -1 };
	struct dcudp_conn *c;
	struct dcudp_stats st;
	const char *host = NULL, *file = NULL;
	uint64_t port = 0, mbit = 0, seconds = 0, msg = 1 << 20, v, start_at = 0, stop_at = 0;
	FILE *in = NULL;
	char *buf;
	int ch, err = 0;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'h': host = optarg; break;
		case 'f': file = optarg; break;
		case 'p': if (tool_u64("--port", optarg, 1, 65535, &port)) return 2; break;
		case 'l': if (tool_u64("--link-mbit", optarg, 1, 100000, &mbit)) return 2; break;
		case 's': if (tool_u64("--seconds", optarg, 1, 3600, &seconds)) return 2; break;
		case 'b': if (tool_u64("--pkt-bytes", optarg, 64, 9000, &v)) return 2; cfg.pkt_bytes = (uint32_t)v; break;
		case 'm': if (tool_u64("--message-bytes", optarg, 1, 1 << 30, &msg)) return 2; break;
		case 't': if (tool_u64("--timeout-ms", optarg, 1, 3600000, &v)) return 2; cfg.timeout_ms = (uint32_t)v; break;
		case 'S': if (tool_u64("--spin-us", optarg, 0, 1000, &v)) return 2; cfg.spin_us = (int32_t)v; break;
		case 'U': if (tool_u64("--udp-mbit", optarg, 1, 100000, &v)) return 2; cfg.udp_bps = v * 1000000ULL; break;
		case 'A': if (tool_u64("--start-at-ns", optarg, 1, UINT64_MAX, &start_at)) return 2; break;
		case 'Z': if (tool_u64("--stop-at-ns", optarg, 1, UINT64_MAX, &stop_at)) return 2; break;
		case 'N': if (tool_u64("--notsent-pkts", optarg, 1, 16384, &v)) return 2; cfg.notsent_max_pkts = (uint32_t)v; break;
		case 'H': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!host || !port || !mbit || !!file + !!seconds + !!stop_at != 1) {
		fprintf(stderr, "dcudp-send: --host, --port, --link-mbit and one of --file, --seconds, --stop-at-ns are required\n");
		usage(stderr);
		return 2;
	}
	if (file && !(in = fopen(file, "rb"))) {
		fprintf(stderr, "dcudp-send: --file %s: %s\n", file, strerror(errno));
		return 1;
	}
	buf = calloc(1, msg);
	if (!buf)
		return 1;
	cfg.link_bps = mbit * 1000000ULL;
	err = dcudp_connect(&c, host, (uint16_t)port, &cfg);
	if (err) {
		fprintf(stderr, "dcudp-send: connect %s:%llu: %s\n", host, (unsigned long long)port, strerror(-err));
		return 1;
	}
	if (start_at) {
		struct timespec ts = { start_at / 1000000000ULL, start_at % 1000000000ULL };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	if (in) {
		size_t n;

		while (!err && (n = fread(buf, 1, msg, in)) > 0)
			err = dcudp_send(c, buf, n);
	} else if (stop_at) {
		while (!err && tool_now_ns() < stop_at)
			err = dcudp_send(c, buf, msg);
	} else {
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			err = dcudp_send(c, buf, msg);
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while (!err && (uint64_t)(t.tv_sec - t0.tv_sec) < seconds);
	}
	if (!err)
		err = dcudp_close(c);
	dcudp_get_stats(c, &st);
	dcudp_print_stats(stdout, &st);
	if (st.last_send_ns > st.first_send_ns)
		/* every data byte sent, retransmissions included, over first to last data packet */
		printf("send_mbit=%.2f\n", st.bytes_sent * 8e3 / (double)(st.last_send_ns - st.first_send_ns));
	dcudp_free(c);
	free(buf);
	if (in)
		fclose(in);
	if (err) {
		fprintf(stderr, "dcudp-send: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
