/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/* tool_args.h - option values of the dcudp tools: fail fast, naming the option. */
#ifndef DCUDP_TOOL_ARGS_H
#define DCUDP_TOOL_ARGS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif
