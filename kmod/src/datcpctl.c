// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * datcpctl - command line of libdatcp. Run `datcpctl help` for usage.
 * Exit status: 0 ok, 1 runtime error, 2 bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "datcp.h"
#include "datcp_aqm.h"
#include <arpa/inet.h>

#define EXIT_USAGE 2

static const char usage[] =
	"usage: datcpctl COMMAND [OPTIONS]\n"
	"\n"
	"  load [--port P]... [--line-rate-mbit N] [--cgroup DIR] [--no-sockops]\n"
	"       [--profile yield|tuned|paper] [--param NAME=VALUE]...\n"
	"        register the datcp congestion control, attach sockops, pin under " DATCP_PIN_DIR "\n"
	"        (idempotent: reuses what is pinned; with --profile/--param, replaces a datcp\n"
	"        with other parameters unless flows or switch ports use it). Parameters:\n"
	"        g alpha u_max theta quench_p_max quench_draws resume_quiet_ms\n"
	"        quench_timeout_ms ewma(new|paper) guard_shift slow_start_raise_only\n"
	"        hopeful_below_u_max overdue_give_up line_rate_mbit agnostic_u_min dctcp_g\n"
	"        (kmod/include/datcp_core.h)\n"
	"  line-rate set [--netns NS] --rate-mbit R | --dev IF\n"
	"        NIC rate of a network namespace (PD2TCP inversion, overdue flows); --dev\n"
	"        takes the interface's speed from its driver\n"
	"  line-rate del [--netns NS]\n"
	"        The load is held by \"datcpctl\" until unload (datcpctl status: holders)\n"
	"  unload [--force]             remove everything (idempotent); refuses while flows\n"
	"                               are registered, switch ports configured or a running\n"
	"                               loader (an agent) holds datcp, unless --force\n"
	"  prune                        release the holds of loaders that are gone (an agent\n"
	"                               killed with SIGKILL): detach the sockops and remove the\n"
	"                               ports only they held\n"
	"  status [--json]              what is loaded, and who holds what\n"
	"  ports add|del PORT           sockets on PORT are put on datcp by sockops\n"
	"  flow set --src IP:PORT --dst IP:PORT [--size BYTES] [--deadline-ms MS]\n"
	"           [--importance X] [--phi X] [--mode datcp|dctcp|d2tcp|pd2tcp|reno]\n"
	"           [--quench off|suspend|kill] [--epoch N]\n"
	"        register a flow (sender's view). The deadline is relative to now and\n"
	"        needs --size. Without --epoch the epoch is the previous one + 1.\n"
	"  flow get --src IP:PORT --dst IP:PORT [--json]\n"
	"  flow resume --src IP:PORT --dst IP:PORT    lift a quench (quenching stays armed)\n"
	"  flow delete --src IP:PORT --dst IP:PORT\n"
	"  flow list [--json]            every network namespace's flows (netns_cookie)\n"
	"        flow set/get/resume/delete act on this process's network namespace only:\n"
	"        run datcpctl in the socket's namespace (nsenter --net=...)\n"
	"  switch configure [--netns NS] --dev IF --rate-mbit R --buffer-bytes B\n"
	"           [--mark none|red|step|pfdct] [--red-min B --red-max B --red-maxp P]\n"
	"           [--k-bytes B | --rtt-us U] [--preset pfdct] [--dscp-map DSCP=BAND,...]\n"
	"        defaults: --mark red --red-min 80000 --red-max 120000 --red-maxp 1 (DATCP\n"
	"        Table 1); every DSCP in band 1 of 0..2 (0 is served first)\n"
	"        --rtt-us: with --mark pfdct, K_i from the port's rate and this round-trip\n"
	"        time (PFDCT Eq. 15, 1500-byte packets) instead of --k-bytes\n"
	"  switch counters [--netns NS] --dev IF [--json]\n"
	"  switch queue [--netns NS] --dev IF --duration-ms D [--interval-us U]\n"
	"        sample the port's queue every U us (default 1000) for D ms: CSV lines\n"
	"        t_ns,queue_bytes (t_ns CLOCK_MONOTONIC, the queue a packet would find)\n"
	"  switch reset [--netns NS] --dev IF\n"
	"  pfdct load [--long-bytes B] [--long-cwnd W]\n"
	"        register the pfdct congestion control (PFDCT 3.2.3-3.2.4), pin under " PFDCT_PIN_DIR "\n"
	"        (idempotent with the same options). A flow is long once it sent more than\n"
	"        --long-bytes (default 1000000) with a window of --long-cwnd segments (20)\n"
	"  pfdct unload                 unregister it and remove the pins (idempotent)\n"
	"  pfdct attach|detach [--netns NS] --dev IF\n"
	"        the senders' egress program on IF: retransmissions leave with DSCP EF,\n"
	"        short flows Not-ECT (run it on every PFDCT sender's interface)\n"
	"  pfdct stats [--json]         per-flow class, window, alpha, LQ; egress counters\n"
	"  events [--netns-ring] [--json] [--count N] [--timeout-ms MS]\n"
	"        print events of the congestion control. Default: the global ring, which\n"
	"        has the events of network namespaces without a ring of their own;\n"
	"        --netns-ring: register a ring for this network namespace and read it (its\n"
	"        events then no longer reach the global ring; replaces an earlier reader's)\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "datcpctl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see 'datcpctl help')\n");
	return EXIT_USAGE;
}

static int runtime_error(int err)
{
	fprintf(stderr, "datcpctl: %s\n", *datcp_last_error() ? datcp_last_error() : strerror(-err));
	return 1;
}

static int parse_u64(const char *opt, const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;

	errno = 0;
	if (!s || *s == '-')
		return usage_error("%s: '%s' is not a non-negative integer", opt, s ? s : "");
	*out = strtoull(s, &end, 10);
	if (errno || *end || end == s || *out > max)
		return usage_error("%s: '%s' is not an integer in 0..%llu", opt, s, max);
	return 0;
}

static int parse_real(const char *opt, const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || *end || end == s || !(*out >= lo && *out <= hi))
		return usage_error("%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
	return 0;
}

static __u32 to_q(double x)
{
	return (__u32)llround(x * DATCP_Q);
}

/* ---- load / unload / status / ports ---- */

static int cmd_load(int argc, char **argv)
{
	static const struct option opts[] = { { "port", required_argument, 0, 'p' },
					      { "line-rate-mbit", required_argument, 0, 'r' },
					      { "cgroup", required_argument, 0, 'c' },
					      { "no-sockops", no_argument, 0, 'n' },
					      { "profile", required_argument, 0, 'P' },
					      { "param", required_argument, 0, 'a' },
					      { 0 } };
	struct datcp_load_opts lo = { 0 };
	struct datcp_params prm;
	const char *profile = NULL, *params[32];
	int n_params = 0, i;
	__u16 ports[DATCP_MAX_PORTS];
	unsigned long long v;
	int c, err, reused;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_u64("--port", optarg, 65535, &v))
				return EXIT_USAGE;
			if (v == 0 || lo.n_ports == DATCP_MAX_PORTS)
				return usage_error("--port: 1..65535, at most %d ports", DATCP_MAX_PORTS);
			ports[lo.n_ports++] = (__u16)v;
			break;
		case 'r':
			if (parse_u64("--line-rate-mbit", optarg, 10000000, &v) || v == 0)
				return usage_error("--line-rate-mbit must be 1..10000000");
			lo.line_rate_bps = v * 1000000ULL;
			break;
		case 'c':
			lo.cgroup_path = optarg;
			break;
		case 'n':
			lo.no_sockops = 1;
			break;
		case 'P':
			profile = optarg;
			break;
		case 'a':
			if (n_params == 32)
				return usage_error("--param: at most 32");
			params[n_params++] = optarg;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (profile || n_params) {
		if (datcp_params_profile(profile, &prm))
			return usage_error("--profile: %s", datcp_last_error());
		for (i = 0; i < n_params; i++) {
			char name[64], *eq = strchr(params[i], '=');

			if (!eq || eq == params[i] || (size_t)(eq - params[i]) >= sizeof(name))
				return usage_error("--param: '%s' is not NAME=VALUE", params[i]);
			memcpy(name, params[i], eq - params[i]);
			name[eq - params[i]] = 0;
			if (datcp_param_set(&prm, name, eq + 1))
				return usage_error("--param: %s", datcp_last_error());
		}
		lo.params = &prm;
	}
	lo.ports = ports;
	lo.holder = "datcpctl";
	err = datcp_load(&lo, &reused);
	if (err)
		return runtime_error(err);
	printf("datcp %s (pinned under %s)\n", reused ? "already loaded, reused" : "loaded",
	       DATCP_PIN_DIR);
	return 0;
}

static int cmd_unload(int argc, char **argv)
{
	int force = argc > 1 && !strcmp(argv[1], "--force");
	int err;

	if (argc > (force ? 2 : 1))
		return usage_error("unload [--force]");
	err = datcp_unload(force);

	if (err)
		return runtime_error(err);
	printf("datcp unloaded\n");
	return 0;
}

static int has_flag(int argc, char **argv, const char *flag)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], flag))
			return 1;
	return 0;
}

static int cmd_prune(int argc, char **argv)
{
	int err;

	(void)argv;
	if (argc != 1)
		return usage_error("prune");
	err = datcp_release(0);
	return err ? runtime_error(err) : 0;
}

/* A JSON string: holder names come from the loaders, so they are escaped. */
static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	putchar('"');
}

static void print_holders(const struct datcp_holder *h, size_t n, int json)
{
	size_t i;
	int j;

	for (i = 0; i < n; i++) {
		if (json) {
			printf("%s{\"id\":%u,\"name\":", i ? "," : "", h[i].id);
			json_string(h[i].name);
			printf(",\"pid\":%u,\"kind\":\"%s\",\"live\":%s,\"sockops\":%s,\"ports\":[",
			       h[i].pid, h[i].pinned ? "pinned" : "process", h[i].live ? "true" : "false",
			       h[i].sockops ? "true" : "false");
			for (j = 0; j < h[i].n_ports; j++)
				printf("%s%u", j ? "," : "", h[i].ports[j]);
			printf("]}");
			continue;
		}
		printf("  %s (pid %u, %s): sockops %s, ports", h[i].name, h[i].pid,
		       !h[i].live ? "exited; 'datcpctl prune' releases it"
		       : h[i].pinned ? "until datcpctl unload"
				     : "running",
		       h[i].sockops ? "yes" : "no");
		for (j = 0; j < h[i].n_ports; j++)
			printf(" %u", h[i].ports[j]);
		printf("%s\n", h[i].n_ports ? "" : " (none)");
	}
}

static int cmd_status(int argc, char **argv)
{
	struct datcp_holder holders[DATCP_MAX_HOLDERS];
	struct datcp_status st;
	struct datcp_params prm;
	char pbuf[768] = "";
	int err = datcp_get_status(&st), json = has_flag(argc, argv, "--json");
	size_t i, n_holders = 0;

	if (!err)
		err = datcp_holders(holders, DATCP_MAX_HOLDERS, &n_holders);
	if (err)
		return runtime_error(err);
	if (n_holders > DATCP_MAX_HOLDERS)
		n_holders = DATCP_MAX_HOLDERS;
	if (st.pinned && !datcp_params_get(&prm))
		datcp_params_format(&prm, pbuf, sizeof(pbuf));
	if (json) {
		printf("{\"cc_registered\":%s,\"pinned\":%s,\"sockops_attached\":%s,\"flows\":%u,"
		       "\"switch_ports\":%u,\"netns_event_rings\":%u,\"ports\":[",
		       st.cc_registered ? "true" : "false", st.pinned ? "true" : "false",
		       st.sockops_attached ? "true" : "false", st.flows, st.switch_ports,
		       st.netns_event_rings);
		for (i = 0; i < st.n_ports; i++)
			printf("%s%u", i ? "," : "", st.ports[i]);
		printf("],\"params\":\"%s\",\"holders\":[", pbuf);
		print_holders(holders, n_holders, 1);
		printf("]}\n");
	} else {
		printf("congestion control datcp: %s\n", st.cc_registered ? "registered" : "not registered");
		printf("maps pinned:              %s\n", st.pinned ? "yes" : "no");
		printf("sockops attached:         %s\n", st.sockops_attached ? "yes" : "no");
		printf("registered flows:         %u\n", st.flows);
		printf("switch ports:             %u\n", st.switch_ports);
		printf("namespace event rings:    %u\n", st.netns_event_rings);
		printf("datcp ports:             ");
		for (i = 0; i < st.n_ports; i++)
			printf(" %u", st.ports[i]);
		printf("%s\n", st.n_ports ? "" : " (none)");
		printf("parameters:               %s\n", *pbuf ? pbuf : "(not loaded)");
		printf("holders:%s\n", n_holders ? "" : "                  (none)");
		print_holders(holders, n_holders, 0);
	}
	return 0;
}

static int cmd_ports(int argc, char **argv)
{
	unsigned long long v;
	int err;

	if (argc != 3 || (strcmp(argv[1], "add") && strcmp(argv[1], "del")))
		return usage_error("ports add|del PORT");
	if (parse_u64("PORT", argv[2], 65535, &v))
		return EXIT_USAGE;
	err = !strcmp(argv[1], "add") ? datcp_port_add((__u16)v) : datcp_port_del((__u16)v);
	return err ? runtime_error(err) : 0;
}

/* ---- flows ---- */

static void print_flow_json(const struct datcp_flow_key *k, const struct datcp_flow_meta *m,
			    const struct datcp_flow_stats *s)
{
	char src[64], dst[64];
	__u64 now = datcp_now_ns();

	datcp_flow_key_format(k, 0, src, sizeof(src));
	datcp_flow_key_format(k, 1, dst, sizeof(dst));
	printf("{\"src\":\"%s\",\"dst\":\"%s\"", src, dst);
	if (m) {
		printf(",\"epoch\":%u,\"mode\":\"%s\",\"quench_mode\":\"%s\",\"importance\":%.3f,"
		       "\"phi\":%.3f",
		       m->epoch, datcp_mode_name(m->mode), datcp_quench_name(m->quench),
		       (double)m->importance_q / DATCP_Q, (double)m->phi_q / DATCP_Q);
		if (m->flags & DATCP_F_SIZE_KNOWN)
			printf(",\"size_bytes\":%llu", (unsigned long long)m->size_bytes);
		else
			printf(",\"size_bytes\":null");
		if (m->deadline_ns)
			printf(",\"deadline_in_ms\":%.3f", ((double)m->deadline_ns - (double)now) / 1e6);
		else
			printf(",\"deadline_in_ms\":null");
	}
	if (s) {
		static const char *const qs[] = { "none", "suspended", "killed" };

		printf(",\"stats\":{\"epoch\":%u,\"bytes_acked\":%llu,\"r_avg_bps\":%llu,"
		       "\"urgency\":%.3f,\"precedence\":%.3f,\"b\":%.3f,\"alpha\":%.3f,\"cwnd\":%u,"
		       "\"ece_count\":%u,\"windows\":%u,\"quench\":\"%s\",\"finished\":%s",
		       s->epoch, (unsigned long long)s->bytes_acked,
		       (unsigned long long)s->r_avg_Bps * 8, (double)s->urgency_q / DATCP_Q,
		       (double)s->precedence_q / DATCP_Q, (double)s->b_q / DATCP_Q,
		       (double)s->alpha_q / DATCP_Q, s->cwnd, s->ece_count, s->windows,
		       qs[s->quench < 3 ? s->quench : 0], s->finished ? "true" : "false");
		if (s->quench)
			printf(",\"quench_ms\":%u", s->quench_ms);
		if (s->finished)
			printf(",\"fct_ns\":%llu,\"met\":%s", (unsigned long long)s->fct_ns,
			       s->met ? "true" : "false");
		printf("}");
	}
	printf(",\"netns_cookie\":%llu}", (unsigned long long)k->netns_cookie);
}

static void print_flow_text(const struct datcp_flow_key *k, const struct datcp_flow_meta *m,
			    const struct datcp_flow_stats *s)
{
	char src[64], dst[64];

	datcp_flow_key_format(k, 0, src, sizeof(src));
	datcp_flow_key_format(k, 1, dst, sizeof(dst));
	printf("netns %-6llu %-22s -> %-22s", (unsigned long long)k->netns_cookie, src, dst);
	if (m)
		printf(" epoch %u %s size %s%llu", m->epoch, datcp_mode_name(m->mode),
		       m->flags & DATCP_F_SIZE_KNOWN ? "" : "unknown/",
		       (unsigned long long)m->size_bytes);
	if (s)
		printf(" | acked %llu R_avg %.1f Mbit/s U %.2f P %.2f b %.3f cwnd %u ece %u%s%s",
		       (unsigned long long)s->bytes_acked, s->r_avg_Bps * 8 / 1e6,
		       (double)s->urgency_q / DATCP_Q, (double)s->precedence_q / DATCP_Q,
		       (double)s->b_q / DATCP_Q, s->cwnd, s->ece_count,
		       s->quench ? " QUENCHED" : "",
		       s->finished ? (s->met ? " finished(met)" : " finished(missed)") : "");
	printf("\n");
}

struct list_ctx {
	int json;
	int n;
};

static int list_one(const struct datcp_flow_key *k, const struct datcp_flow_meta *m,
		    const struct datcp_flow_stats *s, void *ctx)
{
	struct list_ctx *lc = ctx;

	if (lc->json) {
		printf("%s", lc->n ? "," : "");
		print_flow_json(k, m, s);
	} else {
		print_flow_text(k, m, s);
	}
	lc->n++;
	return 0;
}

static int cmd_flow(int argc, char **argv)
{
	static const struct option opts[] = { { "src", required_argument, 0, 's' },
					      { "dst", required_argument, 0, 'd' },
					      { "size", required_argument, 0, 'z' },
					      { "deadline-ms", required_argument, 0, 'D' },
					      { "importance", required_argument, 0, 'i' },
					      { "phi", required_argument, 0, 'f' },
					      { "mode", required_argument, 0, 'm' },
					      { "quench", required_argument, 0, 'q' },
					      { "epoch", required_argument, 0, 'e' },
					      { "json", no_argument, 0, 'j' },
					      { 0 } };
	const char *sub = argc > 1 ? argv[1] : "", *src = NULL, *dst = NULL;
	struct datcp_flow_meta meta = { .importance_q = DATCP_Q, .mode = DATCP_MODE_DATCP };
	unsigned long long v, deadline_ms = 0;
	int c, err, json = 0, has_deadline = 0, has_epoch = 0;
	struct datcp_flow_key key;
	double x;

	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			src = optarg;
			break;
		case 'd':
			dst = optarg;
			break;
		case 'z':
			if (parse_u64("--size", optarg, DATCP_SIZE_MAX, &v))
				return EXIT_USAGE;
			meta.size_bytes = v;
			meta.flags |= DATCP_F_SIZE_KNOWN;
			break;
		case 'D':
			if (parse_u64("--deadline-ms", optarg, DATCP_DEADLINE_MAX_NS / 1000000, &deadline_ms))
				return EXIT_USAGE;
			has_deadline = 1;
			break;
		case 'i':
			if (parse_real("--importance", optarg, 0, DATCP_PRECEDENCE_MAX_Q / DATCP_Q, &x))
				return EXIT_USAGE;
			meta.importance_q = to_q(x);
			break;
		case 'f':
			if (parse_real("--phi", optarg, 0, 1, &x))
				return EXIT_USAGE;
			meta.phi_q = to_q(x);
			break;
		case 'm':
			if (datcp_mode_parse(optarg) < 0)
				return usage_error("--mode: '%s' unknown (datcp, dctcp, d2tcp, pd2tcp, reno)",
						   optarg);
			meta.mode = (__u8)datcp_mode_parse(optarg);
			break;
		case 'q':
			if (datcp_quench_parse(optarg) < 0)
				return usage_error("--quench: '%s' unknown (off, suspend, kill)", optarg);
			meta.quench = (__u8)datcp_quench_parse(optarg);
			break;
		case 'e':
			if (parse_u64("--epoch", optarg, 0xffffffffULL, &v))
				return EXIT_USAGE;
			meta.epoch = (__u32)v;
			has_epoch = 1;
			break;
		case 'j':
			json = 1;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (!strcmp(sub, "list")) {
		struct list_ctx lc = { .json = json };

		if (json)
			printf("[");
		err = datcp_flow_foreach(list_one, &lc);
		if (json)
			printf("]\n");
		return err ? runtime_error(err) : 0;
	}
	if (strcmp(sub, "set") && strcmp(sub, "get") && strcmp(sub, "delete") && strcmp(sub, "resume"))
		return usage_error("flow set|get|resume|delete|list");
	if (!src || !dst)
		return usage_error("flow %s needs --src IP:PORT and --dst IP:PORT", sub);
	err = datcp_flow_key_parse(&key, src, dst);
	if (err)
		return usage_error("%s", datcp_last_error());

	if (!strcmp(sub, "set")) {
		struct datcp_flow_meta old;
		int has_old = 0;

		if (has_deadline && !(meta.flags & DATCP_F_SIZE_KNOWN))
			return usage_error("--deadline-ms needs --size");
		meta.start_ns = datcp_now_ns();
		if (has_deadline)
			meta.deadline_ns = meta.start_ns + deadline_ms * 1000000ULL;
		if (!has_epoch) {
			datcp_flow_get(&key, &old, &has_old, NULL, NULL);
			meta.epoch = has_old ? old.epoch + 1 : 1;
		}
		err = datcp_flow_set(&key, &meta);
	} else if (!strcmp(sub, "resume")) {
		err = datcp_flow_resume(&key);
	} else if (!strcmp(sub, "delete")) {
		err = datcp_flow_delete(&key);
	} else {
		struct datcp_flow_stats st;
		int hm = 0, hs = 0;

		err = datcp_flow_get(&key, &meta, &hm, &st, &hs);
		if (!err) {
			if (json) {
				print_flow_json(&key, hm ? &meta : NULL, hs ? &st : NULL);
				printf("\n");
			} else {
				print_flow_text(&key, hm ? &meta : NULL, hs ? &st : NULL);
			}
		}
	}
	return err ? runtime_error(err) : 0;
}

/* ---- switch ---- */

static int parse_dscp_map(const char *s, __u8 band[64])
{
	char *copy = strdup(s), *tok, *save = NULL;
	int ret = 0;

	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		unsigned int d, b;
		char extra;

		if (sscanf(tok, "%u=%u%c", &d, &b, &extra) != 2 || d > 63 || b >= DATCP_BANDS)
			ret = usage_error("--dscp-map: '%s' is not DSCP=BAND (DSCP 0..63, BAND 0..%d)",
					  tok, DATCP_BANDS - 1);
		else
			band[d] = (__u8)b;
	}
	free(copy);
	return ret;
}

static void print_counters_json(const struct datcp_port_config *cfg, const struct datcp_port_state *st)
{
	__u64 bytes = 0, packets = 0, marks = 0, drops = 0;
	int b;

	for (b = 0; b < DATCP_BANDS; b++) {
		bytes += st->band[b].bytes;
		packets += st->band[b].packets;
		marks += st->band[b].marks;
		drops += st->band[b].drops;
	}
	printf("{\"rate_bps\":%llu,\"buffer_bytes\":%u,\"mark\":\"%s\",\"k_bytes\":%u,"
	       "\"pfdct_k_t\":%llu,\"bytes\":%llu,\"packets\":%llu,"
	       "\"marks\":%llu,\"drops\":%llu,\"peak_queue_bytes\":%llu,\"bands\":[",
	       (unsigned long long)cfg->rate_bps, cfg->buffer_bytes, datcp_mark_name(cfg->mark_mode),
	       cfg->k_bytes, (unsigned long long)st->pfdct_k_t,
	       (unsigned long long)bytes, (unsigned long long)packets, (unsigned long long)marks,
	       (unsigned long long)drops, (unsigned long long)st->peak_queue_bytes);
	for (b = 0; b < DATCP_BANDS; b++)
		printf("%s{\"band\":%d,\"bytes\":%llu,\"packets\":%llu,\"marks\":%llu,\"drops\":%llu,"
		       "\"peak_queue_bytes\":%llu}",
		       b ? "," : "", b, (unsigned long long)st->band[b].bytes,
		       (unsigned long long)st->band[b].packets, (unsigned long long)st->band[b].marks,
		       (unsigned long long)st->band[b].drops,
		       (unsigned long long)st->band[b].peak_queue_bytes);
	printf("]}\n");
}

/* The port's queue every interval_us for duration_ms (DCUDP's Fig. 7): on an
 * absolute schedule, a late sample is taken at once and the schedule kept. */
static int switch_queue(const char *netns, const char *dev, unsigned long long duration_ms,
			unsigned long long interval_us)
{
	struct datcp_port_config cfg;
	struct datcp_port_state st;
	__u64 now = datcp_now_ns(), next = now, end = now + duration_ms * 1000000ULL;
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0); /* a reader that stops us early keeps every line */
	printf("t_ns,queue_bytes\n");
	while (next <= end) {
		struct timespec ts = { next / 1000000000ULL, next % 1000000000ULL };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		err = datcp_switch_read(netns, dev, &cfg, &st);
		if (err)
			return err;
		now = datcp_now_ns();
		printf("%llu,%llu\n", (unsigned long long)now,
		       (unsigned long long)aqm_queue_now(&cfg, &st, now));
		next += interval_us * 1000ULL;
	}
	return fflush(stdout) ? -errno : 0;
}

static int cmd_switch(int argc, char **argv)
{
	static const struct option opts[] = { { "netns", required_argument, 0, 'n' },
					      { "dev", required_argument, 0, 'd' },
					      { "rate-mbit", required_argument, 0, 'r' },
					      { "buffer-bytes", required_argument, 0, 'b' },
					      { "mark", required_argument, 0, 'm' },
					      { "red-min", required_argument, 0, '1' },
					      { "red-max", required_argument, 0, '2' },
					      { "red-maxp", required_argument, 0, 'p' },
					      { "k", required_argument, 0, 'k' },
					      { "k-bytes", required_argument, 0, 'k' },
					      { "rtt-us", required_argument, 0, 'R' },
					      { "preset", required_argument, 0, 'P' },
					      { "dscp-map", required_argument, 0, 'M' },
					      { "json", no_argument, 0, 'j' },
					      { "duration-ms", required_argument, 0, 'D' },
					      { "interval-us", required_argument, 0, 'I' },
					      { 0 } };
	const char *sub = argc > 1 ? argv[1] : "", *netns = NULL, *dev = NULL, *dscp_map = NULL;
	unsigned long long rtt_us = 0, duration_ms = 0, interval_us = 1000;
	struct datcp_port_config cfg;
	struct datcp_port_state st;
	unsigned long long v;
	int c, err, json = 0, i;
	double x;

	memset(&cfg, 0, sizeof(cfg));
	memset(cfg.dscp_band, 1, sizeof(cfg.dscp_band)); /* one standard band */
	/* DATCP Table 1: RED on the instantaneous queue, 80/120 KB, max_p 1 */
	cfg.mark_mode = DATCP_MARK_RED;
	cfg.red_min_bytes = 80000;
	cfg.red_max_bytes = 120000;
	cfg.red_maxp_q = DATCP_Q;
	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			netns = optarg;
			break;
		case 'd':
			dev = optarg;
			break;
		case 'r':
			if (parse_u64("--rate-mbit", optarg, 10000000, &v) || v == 0)
				return usage_error("--rate-mbit must be 1..10000000");
			cfg.rate_bps = v * 1000000ULL;
			break;
		case 'b':
			if (parse_u64("--buffer-bytes", optarg, 1U << 30, &v))
				return EXIT_USAGE;
			cfg.buffer_bytes = (__u32)v;
			break;
		case 'm':
			if (datcp_mark_parse(optarg) < 0)
				return usage_error("--mark: '%s' unknown (none, red, step, pfdct)", optarg);
			cfg.mark_mode = (__u32)datcp_mark_parse(optarg);
			break;
		case '1':
		case '2':
		case 'k':
			if (parse_u64(c == 'k' ? "--k-bytes" : c == '1' ? "--red-min" : "--red-max", optarg,
				      1U << 30, &v))
				return EXIT_USAGE;
			*(c == 'k' ? &cfg.k_bytes : c == '1' ? &cfg.red_min_bytes : &cfg.red_max_bytes) =
				(__u32)v;
			break;
		case 'p':
			if (parse_real("--red-maxp", optarg, 0, 1, &x))
				return EXIT_USAGE;
			cfg.red_maxp_q = to_q(x);
			break;
		case 'R':
			if (parse_u64("--rtt-us", optarg, 10000000, &v) || v == 0)
				return usage_error("--rtt-us must be 1..10000000");
			rtt_us = v;
			break;
		case 'P':
			if (strcmp(optarg, "pfdct"))
				return usage_error("--preset: '%s' unknown (pfdct)", optarg);
			/* PFDCT 3.2.3: retransmissions > short flows > long flows and every
			 * other DSCP (DATCP's classes among them: marked, in the long band) */
			memset(cfg.dscp_band, AQM_PFDCT_LONG_BAND, sizeof(cfg.dscp_band));
			cfg.dscp_band[PFDCT_DSCP_RETRANSMIT] = 0;
			cfg.dscp_band[PFDCT_DSCP_SHORT] = AQM_PFDCT_SHORT_BAND;
			break;
		case 'M':
			dscp_map = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'D':
			if (parse_u64("--duration-ms", optarg, 3600000, &duration_ms) || !duration_ms)
				return usage_error("--duration-ms must be 1..3600000");
			break;
		case 'I':
			if (parse_u64("--interval-us", optarg, 1000000, &interval_us) || interval_us < 100)
				return usage_error("--interval-us must be 100..1000000");
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (!dev)
		return usage_error("switch %s needs --dev IFNAME", sub);
	if (!strcmp(sub, "configure")) {
		if (!cfg.rate_bps || !cfg.buffer_bytes)
			return usage_error("switch configure needs --rate-mbit and --buffer-bytes");
		if (dscp_map && parse_dscp_map(dscp_map, cfg.dscp_band))
			return EXIT_USAGE;
		if (rtt_us) {
			if (cfg.mark_mode != DATCP_MARK_PFDCT || cfg.k_bytes)
				return usage_error("--rtt-us needs --mark pfdct and no --k-bytes");
			cfg.k_bytes = aqm_pfdct_ideal_k(cfg.rate_bps, rtt_us * 1000, 1500);
			if (!cfg.k_bytes)
				return usage_error("PFDCT's K_i (Eq. 15) is 0 at %llu Mbit/s and %llu us (C*RTT"
						   " <= 2 packets); give --k-bytes",
						   (unsigned long long)cfg.rate_bps / 1000000, rtt_us);
			printf("PFDCT K_i = %u bytes (Eq. 15: %llu Mbit/s, RTT %llu us)\n", cfg.k_bytes,
			       (unsigned long long)cfg.rate_bps / 1000000, rtt_us);
		}
		err = datcp_switch_configure(netns, dev, &cfg);
	} else if (!strcmp(sub, "counters")) {
		err = datcp_switch_read(netns, dev, &cfg, &st);
		if (!err && json) {
			print_counters_json(&cfg, &st);
		} else if (!err) {
			printf("port %s: %llu Mbit/s, buffer %u B, marking %s, peak queue %llu B\n", dev,
			       (unsigned long long)cfg.rate_bps / 1000000, cfg.buffer_bytes,
			       datcp_mark_name(cfg.mark_mode), (unsigned long long)st.peak_queue_bytes);
			for (i = 0; i < DATCP_BANDS; i++)
				printf("  band %d: %llu packets %llu bytes, %llu marks, %llu drops, peak %llu B\n",
				       i, (unsigned long long)st.band[i].packets,
				       (unsigned long long)st.band[i].bytes,
				       (unsigned long long)st.band[i].marks,
				       (unsigned long long)st.band[i].drops,
				       (unsigned long long)st.band[i].peak_queue_bytes);
		}
	} else if (!strcmp(sub, "queue")) {
		if (!duration_ms)
			return usage_error("switch queue needs --duration-ms");
		err = switch_queue(netns, dev, duration_ms, interval_us);
	} else if (!strcmp(sub, "reset")) {
		err = datcp_switch_reset(netns, dev);
	} else {
		return usage_error("switch configure|counters|queue|reset");
	}
	return err ? runtime_error(err) : 0;
}

/* ---- PFDCT ---- */

static const char *const pfdct_class_names[] = { "retransmit", "short", "long" };

struct pfdct_print {
	int json;
	int n;
};

static void print_pfdct_flow(const struct pfdct_flow_key *k, const struct pfdct_flow_stats *st, void *ctx)
{
	struct pfdct_print *p = ctx;
	char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN];
	const char *cls = st->cls < 3 ? pfdct_class_names[st->cls] : "?";

	inet_ntop(AF_INET, &k->saddr, src, sizeof(src));
	inet_ntop(AF_INET, &k->daddr, dst, sizeof(dst));
	if (p->json)
		printf("%s{\"src\":\"%s:%u\",\"dst\":\"%s:%u\",\"class\":\"%s\",\"bytes_acked\":%llu,"
		       "\"ece_bytes\":%llu,\"max_cwnd\":%u,\"cwnd\":%u,\"alpha_q\":%u,\"lq\":%u,"
		       "\"windows\":%u,\"rtt_us\":%u,\"rtt_min_us\":%u}",
		       p->n ? "," : "", src, k->sport, dst, k->dport, cls,
		       (unsigned long long)st->bytes_acked, (unsigned long long)st->ece_bytes, st->max_cwnd,
		       st->cwnd, st->alpha_q, st->lq, st->windows, st->rtt_us, st->rtt_min_us);
	else
		printf("%s:%u -> %s:%u %s: %llu B acked (%llu with ECE), cwnd %u (max %u), alpha %.3f, "
		       "LQ %u, rtt %u us (min %u), %u windows\n",
		       src, k->sport, dst, k->dport, cls, (unsigned long long)st->bytes_acked,
		       (unsigned long long)st->ece_bytes, st->cwnd, st->max_cwnd,
		       st->alpha_q / (double)DATCP_Q, st->lq, st->rtt_us, st->rtt_min_us, st->windows);
	p->n++;
}

static int cmd_pfdct(int argc, char **argv)
{
	static const struct option opts[] = { { "long-bytes", required_argument, 0, 'b' },
					      { "long-cwnd", required_argument, 0, 'w' },
					      { "netns", required_argument, 0, 'n' },
					      { "dev", required_argument, 0, 'd' },
					      { "json", no_argument, 0, 'j' },
					      { 0 } };
	const char *sub = argc > 1 ? argv[1] : "", *netns = NULL, *dev = NULL;
	struct pfdct_load_opts lo = { 0 };
	struct pfdct_tx_counters tx[3];
	struct pfdct_print pr = { 0 };
	unsigned long long v;
	int c, err, reused, i;

	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			if (parse_u64("--long-bytes", optarg, 1ULL << 40, &v) || v == 0)
				return usage_error("--long-bytes must be 1..%llu", 1ULL << 40);
			lo.long_bytes = v;
			break;
		case 'w':
			if (parse_u64("--long-cwnd", optarg, 1U << 20, &v) || v == 0)
				return usage_error("--long-cwnd must be 1..%u", 1U << 20);
			lo.long_cwnd = (__u32)v;
			break;
		case 'n':
			netns = optarg;
			break;
		case 'd':
			dev = optarg;
			break;
		case 'j':
			pr.json = 1;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (!strcmp(sub, "load")) {
		err = pfdct_load(&lo, &reused);
		if (!err && !pfdct_loaded_opts(&lo))
			printf("pfdct %s: long flows after %llu bytes with a window of %u segments\n",
			       reused ? "reused" : "loaded", (unsigned long long)lo.long_bytes, lo.long_cwnd);
	} else if (!strcmp(sub, "unload")) {
		err = pfdct_unload();
	} else if (!strcmp(sub, "attach") || !strcmp(sub, "detach")) {
		if (!dev)
			return usage_error("pfdct %s needs --dev IFNAME", sub);
		err = !strcmp(sub, "attach") ? pfdct_attach_tx(netns, dev) : pfdct_detach_tx(netns, dev);
	} else if (!strcmp(sub, "stats")) {
		if (pr.json)
			printf("{\"flows\":[");
		err = pfdct_flows(print_pfdct_flow, &pr);
		if (!err)
			err = pfdct_tx_counts(tx);
		for (i = 0; !err && i < 3; i++) {
			if (pr.json)
				printf("%s\"%s\":{\"packets\":%llu,\"retransmits\":%llu,\"ect_cleared\":%llu}",
				       i ? "," : "],\"tx\":{", pfdct_class_names[i],
				       (unsigned long long)tx[i].packets, (unsigned long long)tx[i].retransmits,
				       (unsigned long long)tx[i].ect_cleared);
			else if (i)
				printf("egress, %s flows: %llu data segments, %llu retransmitted (EF), "
				       "%llu turned Not-ECT\n", pfdct_class_names[i],
				       (unsigned long long)tx[i].packets, (unsigned long long)tx[i].retransmits,
				       (unsigned long long)tx[i].ect_cleared);
		}
		if (!err && pr.json)
			printf("}}\n");
	} else {
		return usage_error("pfdct load|unload|attach|detach|stats");
	}
	return err ? runtime_error(err) : 0;
}

/* ---- line rates ---- */

static int cmd_line_rate(int argc, char **argv)
{
	static const struct option opts[] = { { "netns", required_argument, 0, 'n' },
					      { "rate-mbit", required_argument, 0, 'r' },
					      { "dev", required_argument, 0, 'd' },
					      { 0 } };
	const char *sub = argc > 1 ? argv[1] : "", *netns = NULL, *dev = NULL;
	unsigned long long v;
	__u64 rate = 0;
	int c, err;

	argc--;
	argv++;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			netns = optarg;
			break;
		case 'r':
			if (parse_u64("--rate-mbit", optarg, 10000000, &v) || v == 0)
				return usage_error("--rate-mbit must be 1..10000000");
			rate = v * 1000000ULL;
			break;
		case 'd':
			dev = optarg;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (!strcmp(sub, "del"))
		err = datcp_line_rate_set(netns, 0);
	else if (strcmp(sub, "set"))
		return usage_error("line-rate set|del");
	else if (!rate == !dev)
		return usage_error("line-rate set needs one of --rate-mbit R and --dev IF");
	else if (dev && (err = datcp_link_speed(netns, dev, &rate)))
		return runtime_error(err);
	else
		err = datcp_line_rate_set(netns, rate);
	if (err)
		return runtime_error(err);
	if (rate)
		printf("line rate %llu Mbit/s\n", (unsigned long long)(rate / 1000000));
	return 0;
}

/* ---- events ---- */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct events_ctx {
	int json;
	long remaining; /* -1: unlimited */
};

static int print_event(const struct datcp_event *e, void *ctx)
{
	struct events_ctx *ec = ctx;
	static const char *const actions[] = { "none", "suspend", "kill" };
	char src[64], dst[64];

	datcp_flow_key_format(&e->key, 0, src, sizeof(src));
	datcp_flow_key_format(&e->key, 1, dst, sizeof(dst));
	if (e->type == DATCP_EV_FINISHED) {
		if (ec->json)
			printf("{\"event\":\"finished\",\"src\":\"%s\",\"dst\":\"%s\",\"epoch\":%u,"
			       "\"fct_ns\":%llu,\"met\":%s,\"netns_cookie\":%llu}\n",
			       src, dst, e->epoch, (unsigned long long)e->fct_ns, e->met ? "true" : "false",
			       (unsigned long long)e->key.netns_cookie);
		else
			printf("finished %s -> %s epoch %u in %.3f ms, deadline %s\n", src, dst, e->epoch,
			       e->fct_ns / 1e6, e->met ? "met" : "missed");
	} else if (e->type == DATCP_EV_CLOSED) {
		if (ec->json)
			printf("{\"event\":\"closed\",\"src\":\"%s\",\"dst\":\"%s\",\"epoch\":%u,"
			       "\"bytes_acked\":%llu,\"finished\":%s,\"fct_ns\":%llu,\"met\":%s,"
			       "\"quench\":\"%s\",\"netns_cookie\":%llu}\n",
			       src, dst, e->epoch, (unsigned long long)e->bytes_acked,
			       e->finished ? "true" : "false", (unsigned long long)e->fct_ns,
			       e->met ? "true" : "false", actions[e->action < 3 ? e->action : 0],
			       (unsigned long long)e->key.netns_cookie);
		else
			printf("closed %s -> %s epoch %u: %llu bytes acked, %s\n", src, dst, e->epoch,
			       (unsigned long long)e->bytes_acked,
			       e->finished ? (e->met ? "finished, deadline met" : "finished, deadline missed")
					   : "unfinished");
	} else if (e->type == DATCP_EV_RESUME) {
		const char *why = e->reason == DATCP_RESUME_QUIET ? "quiet" : "timeout";

		if (ec->json)
			printf("{\"event\":\"resume\",\"src\":\"%s\",\"dst\":\"%s\",\"epoch\":%u,"
			       "\"reason\":\"%s\",\"netns_cookie\":%llu}\n", src, dst, e->epoch, why,
			       (unsigned long long)e->key.netns_cookie);
		else
			printf("resume %s -> %s epoch %u (%s)\n", src, dst, e->epoch, why);
	} else if (e->type == DATCP_EV_QUENCH) {
		const char *a = actions[e->action < 3 ? e->action : 0];

		if (ec->json)
			printf("{\"event\":\"quench\",\"src\":\"%s\",\"dst\":\"%s\",\"epoch\":%u,"
			       "\"action\":\"%s\",\"precedence\":%.3f,\"netns_cookie\":%llu}\n",
			       src, dst, e->epoch, a, (double)e->precedence_q / DATCP_Q,
			       (unsigned long long)e->key.netns_cookie);
		else
			printf("quench %s -> %s epoch %u: %s (precedence %.2f)\n", src, dst, e->epoch, a,
			       (double)e->precedence_q / DATCP_Q);
	}
	fflush(stdout);
	if (ec->remaining > 0 && --ec->remaining == 0)
		stop = 1;
	return 0;
}

static int cmd_events(int argc, char **argv)
{
	static const struct option opts[] = { { "json", no_argument, 0, 'j' },
					      { "count", required_argument, 0, 'c' },
					      { "timeout-ms", required_argument, 0, 't' },
					      { "netns-ring", no_argument, 0, 'n' },
					      { 0 } };
	struct events_ctx ec = { .remaining = -1 };
	int own_ring = 0;
	unsigned long long v, timeout_ms = 0;
	struct datcp_events *evs;
	__u64 until = 0;
	int c, n = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			ec.json = 1;
			break;
		case 'c':
			if (parse_u64("--count", optarg, 1UL << 30, &v) || v == 0)
				return usage_error("--count must be positive");
			ec.remaining = (long)v;
			break;
		case 't':
			if (parse_u64("--timeout-ms", optarg, 1UL << 30, &timeout_ms))
				return EXIT_USAGE;
			break;
		case 'n':
			own_ring = 1;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	evs = own_ring ? datcp_events_open_netns(print_event, &ec) : datcp_events_open(print_event, &ec);
	if (!evs)
		return runtime_error(-errno);
	if (timeout_ms)
		until = datcp_now_ns() + timeout_ms * 1000000ULL;
	while (!stop && n >= 0 && (!until || datcp_now_ns() < until))
		n = datcp_events_poll(evs, 100);
	datcp_events_close(evs);
	return n < 0 && n != -EINTR ? runtime_error(n) : 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "help";

	argc--;
	argv++;
	if (!strcmp(cmd, "load"))
		return cmd_load(argc, argv);
	if (!strcmp(cmd, "unload"))
		return cmd_unload(argc, argv);
	if (!strcmp(cmd, "status"))
		return cmd_status(argc, argv);
	if (!strcmp(cmd, "prune"))
		return cmd_prune(argc, argv);
	if (!strcmp(cmd, "ports"))
		return cmd_ports(argc, argv);
	if (!strcmp(cmd, "flow"))
		return cmd_flow(argc, argv);
	if (!strcmp(cmd, "switch"))
		return cmd_switch(argc, argv);
	if (!strcmp(cmd, "events"))
		return cmd_events(argc, argv);
	if (!strcmp(cmd, "pfdct"))
		return cmd_pfdct(argc, argv);
	if (!strcmp(cmd, "line-rate"))
		return cmd_line_rate(argc, argv);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fputs(usage, stdout);
		return 0;
	}
	fprintf(stderr, "datcpctl: unknown command '%s'\n%s", cmd, usage);
	return EXIT_USAGE;
}
