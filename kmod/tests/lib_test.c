// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * lib_test - libdatcp's checks of its input, which run before any kernel
 * access (no root needed; only invalid flows, so that nothing reaches a
 * datcp that another process may have loaded): datcp_flow_set refuses out-of-range flows with a
 * message naming the problem; flow keys carry the caller's network namespace and keys of
 * another namespace are refused before any kernel access; the parameter profiles and setters.
 * Ends with "N passed, N failed".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "datcp.h"

static int passed, failed;

static void expect(const char *what, int err, int want_err, const char *want_msg)
{
	const char *msg = datcp_last_error();

	if (err == want_err && (!want_msg || strstr(msg, want_msg))) {
		passed++;
		return;
	}
	failed++;
	fprintf(stderr, "FAIL %s: got %d '%s', want %d '%s'\n", what, err, msg, want_err,
		want_msg ? want_msg : "");
}

static struct datcp_flow_meta good(void)
{
	struct datcp_flow_meta m = { .size_bytes = 1000000, .importance_q = DATCP_Q,
				     .mode = DATCP_MODE_DATCP, .flags = DATCP_F_SIZE_KNOWN,
				     .epoch = 1 };

	m.deadline_ns = datcp_now_ns() + 2000000000ULL;
	return m;
}

static void flow_set_checks(void)
{
	struct datcp_flow_key key;
	struct datcp_flow_meta m;

	datcp_flow_key_parse(&key, "10.0.0.1:13562", "10.0.0.2:40000");
	m = good();
	m.deadline_ns = ~0ULL; /* was accepted and wrapped to a negative T_remain */
	expect("deadline 2^64-1", datcp_flow_set(&key, &m), -EINVAL, "more than a year");
	m.deadline_ns = datcp_now_ns() + (1ULL << 63);
	expect("deadline now + 2^63", datcp_flow_set(&key, &m), -EINVAL, "more than a year");
	m.deadline_ns = datcp_now_ns() - 5000000;
	expect("deadline in the past", datcp_flow_set(&key, &m), -EINVAL, "in the past");
	m = good();
	m.start_ns = m.deadline_ns + 1;
	expect("deadline before start", datcp_flow_set(&key, &m), -EINVAL, "not after the flow's start");
	m = good();
	m.flags = 0;
	expect("deadline without size", datcp_flow_set(&key, &m), -EINVAL, "needs the flow's size");
	m = good();
	m.size_bytes = DATCP_SIZE_MAX + 1;
	expect("size above 1 PiB", datcp_flow_set(&key, &m), -EINVAL, "above the limit");
	m = good();
	m.importance_q = DATCP_PRECEDENCE_MAX_Q + 1;
	expect("importance above 10", datcp_flow_set(&key, &m), -EINVAL, "importance");
	m = good();
	m.phi_q = DATCP_Q + 1;
	expect("phi above 1", datcp_flow_set(&key, &m), -EINVAL, "phi");
	m = good();
	m.mode = DATCP_MODE_MAX;
	expect("unknown mode", datcp_flow_set(&key, &m), -EINVAL, "mode 5 unknown");
	m = good();
	m.quench = 3;
	expect("unknown quench", datcp_flow_set(&key, &m), -EINVAL, "quench 3 unknown");
	m = good();
	m.flags |= 0x80;
	expect("unknown flag", datcp_flow_set(&key, &m), -EINVAL, "unknown bits");
	m = good();
	key.sport = 0;
	expect("port 0", datcp_flow_set(&key, &m), -EINVAL, "ports must be 1..65535");
}

/* The key names the caller's network namespace, as the kernel names the socket's; a
 * neighbour's namespace is refused (a hostile local caller aiming at another
 * container's flow with the same 4-tuple). */
static void netns_checks(void)
{
	struct datcp_flow_key key;
	struct datcp_flow_meta m = good();
	socklen_t len = sizeof(__u64);
	__u64 own = 0, lib = 0;
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0), hm, hs;

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &own, &len))
		own = 0;
	if (fd >= 0)
		close(fd);
	expect("datcp_netns_cookie", datcp_netns_cookie(&lib), 0, NULL);
	expect("it is SO_NETNS_COOKIE's", own && lib == own ? 0 : -1, 0, NULL);
	expect("parse", datcp_flow_key_parse(&key, "10.0.0.1:13562", "10.0.0.2:40000"), 0, NULL);
	expect("a parsed key names the caller's namespace", key.netns_cookie == own ? 0 : -1, 0, NULL);
	key.netns_cookie = own + 1;
	m.phi_q = DATCP_Q + 1; /* invalid too: nothing may reach the kernel if the check is missing */
	expect("set in another namespace", datcp_flow_set(&key, &m), -EPERM,
	       "may only use its own namespace's flows");
	expect("get in another namespace", datcp_flow_get(&key, NULL, &hm, NULL, &hs), -EPERM,
	       "may only use its own namespace's flows");
	expect("resume in another namespace", datcp_flow_resume(&key), -EPERM, "its own namespace");
	expect("delete in another namespace", datcp_flow_delete(&key), -EPERM, "its own namespace");
}

static void param_checks(void)
{
	struct datcp_params p;
	char buf[768];

	expect("profile paper", datcp_params_profile("paper", &p), 0, NULL);
	expect("paper G is 0.05", p.g_max_q == 51 && p.quench_draws == 1 && !p.ewma_new_weight ? 0 : -1,
	       0, NULL);
	expect("unknown profile", datcp_params_profile("fast", &p), -EINVAL, "tuned, paper, yield");
	expect("no name is the default profile", datcp_params_profile(NULL, &p), 0, NULL);
	expect("the default is yield: deadline-agnostic flows at U_min",
	       p.agnostic_u_min == 1 && p.g_max_q == 102 ? 0 : -1, 0, NULL);
	expect("profile yield", datcp_params_profile("yield", &p), 0, NULL);
	expect("yield is tuned with agnostic_u_min 1",
	       p.agnostic_u_min == 1 && p.g_max_q == 102 && p.quench_draws == 4 ? 0 : -1, 0, NULL);
	expect("agnostic_u_min is 0 or 1", datcp_param_set(&p, "agnostic_u_min", "2"), -EINVAL,
	       "in [0, 1]");
	expect("profile tuned", datcp_params_profile("tuned", &p), 0, NULL);
	expect("set g", datcp_param_set(&p, "g", "0.05"), 0, NULL);
	expect("g is now 0.05", p.g_max_q == 51 ? 0 : -1, 0, NULL);
	expect("set ewma", datcp_param_set(&p, "ewma", "paper"), 0, NULL);
	expect("g out of range", datcp_param_set(&p, "g", "2"), -EINVAL, "in [0, 1]");
	expect("unknown parameter lists the names", datcp_param_set(&p, "gee", "1"), -EINVAL,
	       "quench_timeout_ms");
	expect("theta is an integer", datcp_param_set(&p, "theta", "2.5"), -EINVAL, "integer");
	expect("u_max >= 1", datcp_param_set(&p, "u_max", "0.5"), -EINVAL, "u_max must be >= 1");
	datcp_params_profile("tuned", &p);
	datcp_param_set(&p, "line_rate_mbit", "100");
	expect("line rate in bytes/s", p.line_rate_Bps == 12500000 ? 0 : -1, 0, NULL);
	datcp_params_format(&p, buf, sizeof(buf));
	expect("format", strstr(buf, "g=0.1 ") && strstr(buf, "ewma=new") &&
				 strstr(buf, "line_rate_mbit=100") && strstr(buf, "agnostic_u_min=0")
			 ? 0 : -1, 0, NULL);
	if (!strstr(buf, "g=0.1 "))
		fprintf(stderr, "format gave: %s\n", buf);
}

int main(void)
{
	flow_set_checks();
	netns_checks();
	param_checks();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
