// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * flow_churn - many short registered datcp flows on loopback, to show that
 * closing sockets leaves nothing behind in the kernel's flow maps.
 *
 * In a private network namespace, one connection at a time: connect on
 * datcp from one of a few source ports (so 4-tuples are reused at once),
 * register the flow (datcp_flow_set, as the agent does before the first
 * byte), send SIZE bytes, wait for the receiver's one-byte answer (all
 * acknowledged), and close with a reset (no TIME_WAIT, so the next
 * connection can take the same 4-tuple). Meanwhile it counts the CLOSED
 * events of its flows. At the end it counts what is left in the flow and
 * statistics maps for its destination port; every half of the run it also
 * checks that a reused 4-tuple did not find a stale registration.
 *
 *   flow_churn N [--size BYTES] [--ports K] [--no-events] [--here]
 *
 * --here: run in the caller's network namespace (with lo up) instead of a
 * private one, e.g. to fill that namespace's event ring.
 *
 * Prints one JSON line; exits 1 when anything was left behind (a CLOSED
 * event lost to a full ring buffer is counted, not an error: the reader
 * was too slow). Needs root and a loaded datcp of this version.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "datcp.h"

#define DPORT 5400
#define SPORT_BASE 20000

static atomic_long closed_events, closed_finished;
static atomic_int stop;
static size_t flow_size = 4096;

static int die(const char *what)
{
	fprintf(stderr, "flow_churn: %s: %s\n", what, *datcp_last_error() ? datcp_last_error() : strerror(errno));
	exit(2);
}

static void lo_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr))
		die("lo flags");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr))
		die("lo up");
	close(fd);
}

static int on_event(const struct datcp_event *e, void *ctx)
{
	(void)ctx;
	if (e->type == DATCP_EV_CLOSED && e->key.dport == DPORT) {
		closed_events++;
		closed_finished += e->finished;
	}
	return 0;
}

static void *events_main(void *arg)
{
	struct datcp_events *evs = arg;

	while (!stop)
		datcp_events_poll(evs, 50);
	datcp_events_poll(evs, 0);
	return NULL;
}

static void *receiver_main(void *arg)
{
	int ls = *(int *)arg;
	char *buf = malloc(1 << 16);

	while (!stop) {
		int c = accept(ls, NULL, NULL);
		size_t got = 0;
		ssize_t n;

		if (c < 0)
			continue;
		while (got < flow_size && (n = recv(c, buf, 1 << 16, 0)) > 0)
			got += (size_t)n;
		if (send(c, "k", 1, MSG_NOSIGNAL) == 1)
			while (recv(c, buf, 1 << 16, 0) > 0)
				;
		close(c);
	}
	free(buf);
	return NULL;
}

struct leftovers {
	long meta, stats;
	__u64 netns_cookie; /* ours: other namespaces may run a churn too */
};

static int count_ours(const struct datcp_flow_key *k, const struct datcp_flow_meta *m,
		      const struct datcp_flow_stats *s, void *ctx)
{
	struct leftovers *l = ctx;

	if (k->dport == DPORT && k->netns_cookie == l->netns_cookie) {
		l->meta += m != NULL;
		l->stats += s != NULL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(DPORT),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long n = argc > 1 ? atol(argv[1]) : 0, i, stale = 0, failed = 0;
	int ports = 16, events = 1, here = 0, ls, one = 1, a;
	struct datcp_events *evs = NULL;
	pthread_t rx, ev;
	struct timespec t0, t1;
	struct leftovers left = { 0 };
	struct linger lg = { 1, 0 };
	char *payload;
	double secs;

	for (a = 2; a < argc; a++) {
		if (!strcmp(argv[a], "--size") && a + 1 < argc)
			flow_size = (size_t)atol(argv[++a]);
		else if (!strcmp(argv[a], "--ports") && a + 1 < argc)
			ports = atoi(argv[++a]);
		else if (!strcmp(argv[a], "--no-events"))
			events = 0;
		else if (!strcmp(argv[a], "--here"))
			here = 1;
		else
			n = 0;
	}
	if (n <= 0 || ports <= 0 || flow_size == 0) {
		fprintf(stderr, "usage: flow_churn N [--size BYTES] [--ports K] [--no-events] [--here]\n");
		return 2;
	}
	{
		struct datcp_params loaded;

		/* never run against a datcp of another version (it would keep
		 * every registration) */
		if (datcp_params_get(&loaded))
			die("datcp of this version");
	}
	if (!here) {
		if (unshare(CLONE_NEWNET))
			die("unshare(CLONE_NEWNET)");
		lo_up();
	}
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&dst, sizeof(dst)) || listen(ls, 64))
		die("listen");
	if (events) {
		/* its namespace's own ring: no other reader on this kernel takes
		 * its events */
		evs = datcp_events_open_netns(on_event, NULL);
		if (!evs)
			die("events");
		pthread_create(&ev, NULL, events_main, evs);
	}
	pthread_create(&rx, NULL, receiver_main, &ls);
	payload = calloc(1, flow_size);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		struct sockaddr_in src = dst;
		struct datcp_flow_key key;
		struct datcp_flow_meta meta = { .size_bytes = flow_size, .importance_q = DATCP_Q,
						.mode = DATCP_MODE_DATCP, .flags = DATCP_F_SIZE_KNOWN,
						.epoch = 1 };
		char sbuf[32], dbuf[32], k;
		int s = socket(AF_INET, SOCK_STREAM, 0), hm = 1, hs = 1;
		size_t sent = 0;

		src.sin_port = htons(SPORT_BASE + i % ports);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (setsockopt(s, IPPROTO_TCP, TCP_CONGESTION, "datcp", 5))
			die("TCP_CONGESTION datcp (is datcp loaded?)");
		if (bind(s, (struct sockaddr *)&src, sizeof(src)) ||
		    connect(s, (struct sockaddr *)&dst, sizeof(dst))) {
			failed++;
			close(s);
			continue;
		}
		snprintf(sbuf, sizeof(sbuf), "127.0.0.1:%u", SPORT_BASE + (unsigned)(i % ports));
		snprintf(dbuf, sizeof(dbuf), "127.0.0.1:%u", DPORT);
		datcp_flow_key_parse(&key, sbuf, dbuf);
		/* a reused 4-tuple must start unregistered */
		if (i >= ports && (i % (n / 2 + 1)) == 0 &&
		    datcp_flow_get(&key, NULL, &hm, NULL, &hs) == 0 && (hm || hs))
			stale++;
		meta.deadline_ns = datcp_now_ns() + 1000000000ULL;
		if (datcp_flow_set(&key, &meta))
			die("datcp_flow_set");
		while (sent < flow_size) {
			ssize_t w = send(s, payload + sent, flow_size - sent, MSG_NOSIGNAL);

			if (w <= 0)
				break;
			sent += (size_t)w;
		}
		if (recv(s, &k, 1, 0) != 1)
			failed++;
		setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(s);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	/* let the last CLOSED events arrive */
	for (a = 0; events && a < 100 && closed_events < n - failed; a++)
		usleep(20000);
	stop = 1;
	shutdown(ls, SHUT_RDWR);
	if (events)
		pthread_join(ev, NULL);
	if (datcp_netns_cookie(&left.netns_cookie) || datcp_flow_foreach(count_ours, &left) < 0)
		die("datcp_flow_foreach");
	printf("{\"flows\":%ld,\"failed\":%ld,\"seconds\":%.2f,\"flows_per_s\":%.0f,"
	       "\"closed_events\":%ld,\"closed_finished\":%ld,\"left_meta\":%ld,\"left_stats\":%ld,"
	       "\"stale_on_reuse\":%ld}\n",
	       n, failed, secs, (double)n / secs, (long)closed_events, (long)closed_finished,
	       left.meta, left.stats, stale);
	datcp_events_close(evs);
	free(payload);
	return left.meta || stale || failed || (events && left.stats) ? 1 : 0;
}
