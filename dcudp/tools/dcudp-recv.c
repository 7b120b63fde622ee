// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * dcudp-recv - accept one DCUDP sender and write what it sends.
 *
 *   dcudp-recv --port P --link-mbit C [--out F] [--pkt-bytes B] [--timeout-ms T]
 *              [--bin-ms M --bin-from-ns T0]
 *
 * Without --out the data is counted and discarded. At the end prints the
 * connection's counters ("name=value"), the goodput from the first to
 * the last byte delivered and the CLOCK_MONOTONIC times of both. With --bin-ms,
 * also the bytes delivered in each M ms from CLOCK_MONOTONIC time T0 on
 * (bins_bytes=b0,b1,...; a bench's throughput time series, section V-B).
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
	fprintf(f, "usage: dcudp-recv --port P --link-mbit C [--out F] [--pkt-bytes B] [--timeout-ms T]\n"
		   "                  [--bin-ms M --bin-from-ns T0]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "port", required_argument, 0, 'p' },
					      { "link-mbit", required_argument, 0, 'l' },
					      { "out", required_argument, 0, 'o' },
					      { "pkt-bytes", required_argument, 0, 'b' },
					      { "timeout-ms", required_argument, 0, 't' },
					      { "bin-ms", required_argument, 0, 'B' },
					      { "bin-from-ns", required_argument, 0, 'F' },
					      { "help", no_argument, 0, 'H' },
					      { 0, 0, 0, 0 } };
	struct dcudp_cfg cfg = { .spin_us = -1 };
	struct dcudp_conn *c;
	struct dcudp_stats st;
	const char *out = NULL;
	uint64_t port = 0, mbit = 0, v, bin_ms = 0, bin_from = 0, *bins = NULL;
	size_t n_bins = 0, i;
	static char buf[1 << 20];
	uint64_t first = 0, last = 0;
	FILE *f = NULL;
	ssize_t n;
	int ch, err;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'p': if (tool_u64("--port", optarg, 1, 65535, &port)) return 2; break;
		case 'l': if (tool_u64("--link-mbit", optarg, 1, 100000, &mbit)) return 2; break;
		case 'o': out = optarg; break;
		case 'b': if (tool_u64("--pkt-bytes", optarg, 64, 9000, &v)) return 2; cfg.pkt_bytes = (uint32_t)v; break;
		case 't': if (tool_u64("--timeout-ms", optarg, 1, 3600000, &v)) return 2; cfg.timeout_ms = (uint32_t)v; break;
		case 'B': if (tool_u64("--bin-ms", optarg, 1, 60000, &bin_ms)) return 2; break;
		case 'F': if (tool_u64("--bin-from-ns", optarg, 1, UINT64_MAX, &bin_from)) return 2; break;
		case 'H': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!port || !mbit) {
		fprintf(stderr, "dcudp-recv: --port and --link-mbit are required\n");
		usage(stderr);
		return 2;
	}
	if (!bin_ms != !bin_from) {
		fprintf(stderr, "dcudp-recv: --bin-ms and --bin-from-ns go together\n");
		usage(stderr);
		return 2;
	}
	if (out && !(f = fopen(out, "wb"))) {
		fprintf(stderr, "dcudp-recv: --out %s: %s\n", out, strerror(errno));
		return 1;
	}
	cfg.link_bps = mbit * 1000000ULL;
	err = dcudp_accept(&c, (uint16_t)port, &cfg);
	if (err) {
		fprintf(stderr, "dcudp-recv: accept on port %llu: %s\n", (unsigned long long)port, strerror(-err));
		return 1;
	}
	while ((n = dcudp_recv(c, buf, sizeof(buf))) > 0) {
		last = tool_now_ns();
		if (!first)
			first = last;
		if (bin_ms && last >= bin_from) {
			size_t b = (size_t)((last - bin_from) / (bin_ms * 1000000ULL));

			if (b >= n_bins) {
				uint64_t *nb = realloc(bins, (b + 1) * sizeof(*bins));

				if (!nb)
					return 1;
				memset(nb + n_bins, 0, (b + 1 - n_bins) * sizeof(*bins));
				bins = nb;
				n_bins = b + 1;
			}
			bins[b] += (uint64_t)n;
		}
		if (f && fwrite(buf, 1, (size_t)n, f) != (size_t)n) {
			fprintf(stderr, "dcudp-recv: --out %s: %s\n", out, strerror(errno));
			return 1;
		}
	}
	if (n == 0)
		dcudp_close(c); /* lingers to answer a repeated shutdown */
	dcudp_get_stats(c, &st);
	dcudp_print_stats(stdout, &st);
	if (last > first)
		printf("goodput_mbit=%.2f\n", st.bytes_delivered * 8e3 / (double)(last - first));
	/* CLOCK_MONOTONIC, one clock for all namespaces: the bench's completion times */
	printf("first_byte_ns=%llu\nlast_byte_ns=%llu\n", (unsigned long long)first, (unsigned long long)last);
	if (bin_ms) {
		printf("bins_bytes=");
		for (i = 0; i < n_bins; i++)
			printf("%s%llu", i ? "," : "", (unsigned long long)bins[i]);
		printf("\n");
		free(bins);
	}
	dcudp_free(c);
	if (f && fclose(f)) {
		fprintf(stderr, "dcudp-recv: --out %s: %s\n", out, strerror(errno));
		return 1;
	}
	if (n < 0) {
		fprintf(stderr, "dcudp-recv: %s\n", strerror((int)-n));
		return 1;
	}
	return 0;
}
