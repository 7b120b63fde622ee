// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * fqcn-sink - counts the UDP datagrams of each source.
 *
 *   fqcn-sink --port P --duration-ms MS [--interval-ms MS]
 *
 * With --interval-ms one line per source and period: "rx t_ms=T
 * src=IP:PORT mbit=M" (frames: payload + 42 bytes of headers, as fqcn-cbr
 * counts them). At the end one "total src=IP:PORT bytes=B" line per source.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tool_args.h"

#define MAX_SOURCES 64
#define FRAME_OVERHEAD (14 + 20 + 8)

struct source {
	struct sockaddr_in addr;
	uint64_t bytes, period_bytes;
};

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "port", required_argument, 0, 'p' },
					      { "duration-ms", required_argument, 0, 'd' },
					      { "interval-ms", required_argument, 0, 'i' },
					      { "help", no_argument, 0, 'H' },
					      { 0, 0, 0, 0 } };
	static struct source src[MAX_SOURCES];
	struct sockaddr_in me = { .sin_family = AF_INET };
	uint64_t port = 0, duration_ms = 0, interval_ms = 0, start, end, next = 0, now;
	int n_src = 0, ch, fd, i, rcvbuf = 4 << 20;
	static char buf[65536];

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'p': if (tool_u64("--port", optarg, 1, 65535, &port)) return 2; break;
		case 'd': if (tool_u64("--duration-ms", optarg, 1, 86400000, &duration_ms)) return 2; break;
		case 'i': if (tool_u64("--interval-ms", optarg, 1, 60000, &interval_ms)) return 2; break;
		case 'H': printf("usage: fqcn-sink --port P --duration-ms MS [--interval-ms MS]\n"); return 0;
		default: fprintf(stderr, "usage: fqcn-sink --port P --duration-ms MS [--interval-ms MS]\n"); return 2;
		}
	}
	if (!port || !duration_ms) {
		fprintf(stderr, "%s is required\n", !port ? "--port" : "--duration-ms");
		return 2;
	}
	me.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) ||
	    bind(fd, (struct sockaddr *)&me, sizeof(me))) {
		perror("--port");
		return 1;
	}
	start = tool_now_ns();
	end = start + duration_ms * 1000000ULL;
	if (interval_ms)
		next = start + interval_ms * 1000000ULL;
	while ((now = tool_now_ns()) < end) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n;

		if (interval_ms && now >= next) {
			for (i = 0; i < n_src; i++) {
				printf("rx t_ms=%llu src=%s:%u mbit=%.3f\n", (unsigned long long)((next - start) / 1000000),
				       inet_ntoa(src[i].addr.sin_addr), ntohs(src[i].addr.sin_port),
				       src[i].period_bytes * 8.0 / (interval_ms * 1000.0));
				src[i].period_bytes = 0;
			}
			next += interval_ms * 1000000ULL;
		}
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		while ((n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl)) >= 0) {
			fl = sizeof(from);
			for (i = 0; i < n_src; i++)
				if (src[i].addr.sin_addr.s_addr == from.sin_addr.s_addr && src[i].addr.sin_port == from.sin_port)
					break;
			if (i == n_src) {
				if (n_src == MAX_SOURCES)
					continue;
				src[n_src++].addr = from;
			}
			src[i].bytes += (uint64_t)n + FRAME_OVERHEAD;
			src[i].period_bytes += (uint64_t)n + FRAME_OVERHEAD;
		}
	}
	for (i = 0; i < n_src; i++)
		printf("total src=%s:%u bytes=%llu\n", inet_ntoa(src[i].addr.sin_addr), ntohs(src[i].addr.sin_port),
		       (unsigned long long)src[i].bytes);
	close(fd);
	return 0;
}
