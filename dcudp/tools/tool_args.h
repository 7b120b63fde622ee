/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/* tool_args.h - option values of the dcudp and fqcn tools: fail fast, naming the
 * option; and the tools' clock. */
#ifndef DCUDP_TOOL_ARGS_H
#define DCUDP_TOOL_ARGS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline int tool_u64(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
		fprintf(stderr, "%s: '%s' is not an integer in %llu..%llu\n", name, s, (unsigned long long)lo,
			(unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t tool_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

#endif
