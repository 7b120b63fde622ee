/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * fqcn_rp_tool.h - what the tools with a reaction point share (fqcn-cbr,
 * fqcn-incast server): the reaction point's options and reading the CNMs
 * of one flow.
 */
#ifndef FQCN_RP_TOOL_H
#define FQCN_RP_TOOL_H

#include <arpa/inet.h>
#include <getopt.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "fqcn_cnm.h"
#include "fqcn_core.h"
#include "tool_args.h"

/* getopt_long entries whose values 1..5 fqcn_rp_option takes */
#define FQCN_RP_LONG_OPTIONS                                                                      \
	{ "bc-limit-bytes", required_argument, 0, 1 }, { "t-us", required_argument, 0, 2 },      \
	{ "r-ai-kbit", required_argument, 0, 3 }, { "r-hai-kbit", required_argument, 0, 4 },     \
	{ "min-rate-kbit", required_argument, 0, 5 }

/* Option ch (1..5) with value arg into p: 0, or -1 with the option named on stderr. */
static inline int fqcn_rp_option(int ch, const char *arg, struct fqcn_rp_params *p)
{
	uint64_t v;

	switch (ch) {
	case 1: return tool_u64("--bc-limit-bytes", arg, 1000, 1U << 30, &p->bc_limit);
	case 2: if (tool_u64("--t-us", arg, 10, 10000000, &v)) return -1; p->t_ns = v * 1000; return 0;
	case 3: if (tool_u64("--r-ai-kbit", arg, 1, 100000000, &v)) return -1; p->r_ai = v * 1000; return 0;
	case 4: if (tool_u64("--r-hai-kbit", arg, 1, 100000000, &v)) return -1; p->r_hai = v * 1000; return 0;
	case 5: if (tool_u64("--min-rate-kbit", arg, 1, 100000000, &v)) return -1; p->min_rate = v * 1000; return 0;
	}
	return -1;
}

/* The flow a reaction point limits (network order) and the CNMs it read. */
struct fqcn_rp_flow {
	uint32_t daddr;
	uint16_t sport, dport;
	uint64_t cnms, cnms_foreign;
};

/* Reads the CNMs waiting on fd: those for the flow drive the reaction point
 * (Eq. 2) when use_rp, others are counted foreign. */
static inline void fqcn_rp_read_cnms(int fd, struct fqcn_rp_flow *f, struct fqcn_rp *rp,
				     const struct fqcn_rp_params *p, bool use_rp, uint64_t now_ns)
{
	struct fqcn_cnm cnm;

	while (recv(fd, &cnm, sizeof(cnm), MSG_DONTWAIT) == sizeof(cnm)) {
		if (ntohl(cnm.magic) != FQCN_CNM_MAGIC || cnm.version != FQCN_CNM_VERSION ||
		    cnm.flow_sport != f->sport || cnm.flow_dport != f->dport || cnm.flow_daddr != f->daddr) {
			f->cnms_foreign++;
			continue;
		}
		f->cnms++;
		if (use_rp)
			fqcn_rp_on_cnm(rp, p, cnm.fb_q, now_ns);
	}
}

#endif /* FQCN_RP_TOOL_H */
