// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * core_test - checks QCN's and FQCN's arithmetic (include/fqcn_core.h, the
 * code fqcn-cp and fqcn-cbr run) against the hand-checked vectors of
 * tests/vectors/. Each file has a fixed column list, checked against its
 * header line so that a reordered file fails instead of passing by
 * accident; '#' lines are comments (they carry the hand computations).
 * Ends with "N passed, N failed"; exits non-zero on any failure, on a file
 * missing or malformed.
 *
 *   core_test DIR
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fqcn_core.h"

static int passed, failed;

static void expect(const char *file, int line, const char *what, int64_t got, int64_t want)
{
	if (got == want) {
		passed++;
		return;
	}
	failed++;
	fprintf(stderr, "FAIL %s:%d %s: got %" PRId64 ", want %" PRId64 "\n", file, line, what, got, want);
}

static void row_fb(const char *f, int ln, const char *s)
{
	uint64_t q, q_old, q_eq;
	int64_t fb;
	uint32_t fb_q;

	if (sscanf(s, "%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNd64 ",%" SCNu32, &q, &q_old, &q_eq, &fb, &fb_q) != 5)
		goto bad;
	expect(f, ln, "fb", fqcn_fb(q, q_old, q_eq), fb);
	expect(f, ln, "fb_q", fqcn_fb_quantize(fqcn_fb(q, q_old, q_eq), q_eq), fb_q);
	return;
bad:
	expect(f, ln, "parse", 0, 1);
}

static void row_sample(const char *f, int ln, const char *s)
{
	uint32_t fb_q, interval;

	if (sscanf(s, "%" SCNu32 ",%" SCNu32, &fb_q, &interval) != 2) {
		expect(f, ln, "parse", 0, 1);
		return;
	}
	expect(f, ln, "interval", fqcn_sample_interval(fb_q), interval);
}

static void row_share(const char *f, int ln, const char *s)
{
	uint64_t a_i, a_sum;
	uint32_t n, over;

	if (sscanf(s, "%" SCNu64 ",%" SCNu64 ",%" SCNu32 ",%" SCNu32, &a_i, &a_sum, &n, &over) != 4) {
		expect(f, ln, "parse", 0, 1);
		return;
	}
	expect(f, ln, "over", fqcn_over_share(a_i, a_sum, n), over);
}

static void row_fair(const char *f, int ln, const char *s)
{
	uint64_t a[4];
	uint32_t fb_q, want[4], got[4], sent, i;

	if (sscanf(s, "%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNu32 ",%" SCNu32 ",%" SCNu32 ",%" SCNu32
		   ",%" SCNu32 ",%" SCNu32,
		   &a[0], &a[1], &a[2], &a[3], &fb_q, &want[0], &want[1], &want[2], &want[3], &sent) != 10) {
		expect(f, ln, "parse", 0, 1);
		return;
	}
	expect(f, ln, "sent", fqcn_fair_feedback(a, 4, fb_q, got), sent);
	for (i = 0; i < 4; i++)
		expect(f, ln, "fb_i", got[i], want[i]);
}

/* cp.csv: one congestion point carried from row to row */
static struct fqcn_cp cp;

static void row_cp(const char *f, int ln, const char *s)
{
	char op[16];
	uint64_t arg, q_old;
	int64_t out, left;

	if (sscanf(s, "%15[a-z],%" SCNu64 ",%" SCNd64 ",%" SCNd64 ",%" SCNu64, op, &arg, &out, &left, &q_old) != 5) {
		expect(f, ln, "parse", 0, 1);
		return;
	}
	if (!strcmp(op, "init")) /* a fresh point, Q_eq 24000, sampling base arg */
		fqcn_cp_init(&cp, 24000, (uint32_t)arg);
	else if (!strcmp(op, "arrive"))
		expect(f, ln, "sampled", fqcn_cp_arrival(&cp, (uint32_t)arg), out);
	else if (!strcmp(op, "sample"))
		expect(f, ln, "fb_q", fqcn_cp_sample(&cp, arg), out);
	else
		expect(f, ln, "op", 0, 1);
	expect(f, ln, "sample_left", cp.sample_left, left);
	expect(f, ln, "q_old", (int64_t)cp.q_old, (int64_t)q_old);
}

/* rp.csv: one reaction point per scenario, carried from row to row */
static struct fqcn_rp rp;
static struct fqcn_rp_params prm;
static uint32_t rp_scenario;

static void row_rp(const char *f, int ln, const char *s)
{
	char op[16], arg[40];
	uint32_t scenario, bc, timer, fb_q;
	uint64_t line, cr, tr, now;

	if (sscanf(s, "%" SCNu32 ",%" SCNu64 ",%15[a-z],%39[0-9:],%" SCNu64 ",%" SCNu64 ",%" SCNu32 ",%" SCNu32,
		   &scenario, &line, op, arg, &cr, &tr, &bc, &timer) != 8) {
		expect(f, ln, "parse", 0, 1);
		return;
	}
	if (scenario != rp_scenario) {
		struct fqcn_rp_params fresh = FQCN_RP_PARAMS_QAU(line);

		prm = fresh;
		fqcn_rp_init(&rp, &prm);
		rp_scenario = scenario;
	}
	if (!strcmp(op, "cnm") && sscanf(arg, "%" SCNu32 ":%" SCNu64, &fb_q, &now) == 2)
		fqcn_rp_on_cnm(&rp, &prm, fb_q, now);
	else if (!strcmp(op, "sent"))
		fqcn_rp_on_sent(&rp, &prm, strtoull(arg, NULL, 10));
	else if (!strcmp(op, "time"))
		fqcn_rp_on_time(&rp, &prm, strtoull(arg, NULL, 10));
	else
		expect(f, ln, "op", 0, 1);
	expect(f, ln, "cr", (int64_t)rp.cr, (int64_t)cr);
	expect(f, ln, "tr", (int64_t)rp.tr, (int64_t)tr);
	expect(f, ln, "bc_stage", rp.bc_stage, bc);
	expect(f, ln, "timer_stage", rp.timer_stage, timer);
}

static const struct {
	const char *file, *header;
	void (*row)(const char *file, int line, const char *text);
} suites[] = {
	{ "fb.csv", "q,q_old,q_eq,fb,fb_q", row_fb },
	{ "sample.csv", "fb_q,interval", row_sample },
	{ "share.csv", "a_i,a_sum,n_active,over", row_share },
	{ "fair.csv", "a1,a2,a3,a4,fb_q,f1,f2,f3,f4,sent", row_fair },
	{ "cp.csv", "op,arg,out,sample_left,q_old", row_cp },
	{ "rp.csv", "scenario,line,op,arg,cr,tr,bc_stage,timer_stage", row_rp },
};

static void run_suite(const char *dir, unsigned k)
{
	char path[512], text[512];
	int ln = 0, rows = 0, header = 0;
	FILE *in;

	snprintf(path, sizeof(path), "%s/%s", dir, suites[k].file);
	in = fopen(path, "r");
	if (!in) {
		perror(path);
		failed++;
		return;
	}
	if (!strcmp(suites[k].file, "cp.csv"))
		fqcn_cp_init(&cp, 24000, FQCN_SAMPLE_BASE);
	rp_scenario = 0;
	while (fgets(text, sizeof(text), in)) {
		ln++;
		text[strcspn(text, "\r\n")] = 0;
		if (text[0] == '#' || text[0] == 0)
			continue;
		if (!header) {
			header = 1;
			if (strcmp(text, suites[k].header)) {
				fprintf(stderr, "FAIL %s:%d header '%s', want '%s'\n", suites[k].file, ln, text,
					suites[k].header);
				failed++;
				break;
			}
			continue;
		}
		suites[k].row(suites[k].file, ln, text);
		rows++;
	}
	fclose(in);
	if (!rows) {
		fprintf(stderr, "FAIL %s: no rows\n", suites[k].file);
		failed++;
	}
}

int main(int argc, char **argv)
{
	unsigned k;

	if (argc != 2) {
		fprintf(stderr, "usage: core_test VECTOR_DIR\n");
		return 2;
	}
	for (k = 0; k < sizeof(suites) / sizeof(suites[0]); k++)
		run_suite(argv[1], k);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
