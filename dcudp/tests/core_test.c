// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * core_test - checks DCUDP's control law (include/dcudp_core.h), the code the
 * library runs, against the CSV files of tests/vectors/, which tests/gen_vectors.py
 * computes from the paper's formulas with exact fractions. Each file is one
 * function (rate_law.csv a sequence of Fig. 4 events); the header names the
 * columns, '#' lines are comments. Ends with "N passed, N failed" and exits
 * non-zero on any failure or a file that could not be read.
 *
 *   core_test DIR
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcudp_core.h"

#define MAX_COLS 16

struct row {
	const char *file;
	int line, ncols;
	char names[MAX_COLS][32];
	char vals[MAX_COLS][32];
};

static int passed, failed, broken;

static const char *col_str(struct row *r, const char *name)
{
	int i;

	for (i = 0; i < r->ncols; i++)
		if (!strcmp(r->names[i], name))
			return r->vals[i];
	fprintf(stderr, "%s:%d: no column '%s'\n", r->file, r->line, name);
	broken++;
	return "0";
}

static uint64_t col(struct row *r, const char *name)
{
	return strtoull(col_str(r, name), NULL, 10);
}

static void check(struct row *r, const char *what, uint64_t got, uint64_t want)
{
	if (got == want) {
		passed++;
		return;
	}
	failed++;
	fprintf(stderr, "FAIL %s:%d %s: got %llu, want %llu\n", r->file, r->line, what, (unsigned long long)got,
		(unsigned long long)want);
}

/* rate_law.csv: the rate state carried from row to row within a scenario */
static struct dcudp_rate law;
static uint64_t law_scenario = ~0ULL;

static void run_rate_law(struct row *r)
{
	const char *op = col_str(r, "op");
	uint64_t rtt = col(r, "rtt_ns");

	if (col(r, "scenario") != law_scenario) {
		law_scenario = col(r, "scenario");
		dcudp_rate_enter(&law, col(r, "line_pps"));
	}
	if (!strcmp(op, "ack"))
		dcudp_rate_on_ack(&law, false, rtt);
	else if (!strcmp(op, "ack_ece"))
		dcudp_rate_on_ack(&law, true, rtt);
	else if (!strcmp(op, "nak"))
		dcudp_rate_on_nak(&law, rtt);
	else if (!strcmp(op, "sent"))
		dcudp_rate_on_data_sent(&law);
	else {
		fprintf(stderr, "%s:%d: op '%s' unknown\n", r->file, r->line, op);
		broken++;
		return;
	}
	check(r, "rate_data", law.rate_data, col(r, "rate_data"));
	check(r, "rate_max", law.rate_max, col(r, "rate_max"));
	check(r, "n_ack", law.n_ack, col(r, "n_ack"));
	check(r, "n_ecn", law.n_ecn, col(r, "n_ecn"));
	check(r, "freeze", law.freeze, col(r, "freeze"));
}

static void fill(struct dcudp_window *w, struct row *r, const char *prefix, uint64_t n)
{
	char name[8];
	uint64_t i;

	memset(w, 0, sizeof(*w));
	for (i = 1; i <= n; i++) {
		snprintf(name, sizeof(name), "%s%llu", prefix, (unsigned long long)i);
		dcudp_window_push(w, col(r, name));
	}
}

static void run_row(struct row *r)
{
	const char *f = r->file;
	struct dcudp_window a, b;

	if (!strcmp(f, "line_rate.csv")) {
		check(r, "rate", dcudp_line_rate(col(r, "link_bps"), (uint32_t)col(r, "pkt_bytes")), col(r, "expected_pps"));
	} else if (!strcmp(f, "interval.csv")) {
		check(r, "interval", dcudp_interval_ns(col(r, "rate_pps")), col(r, "expected_ns"));
	} else if (!strcmp(f, "rate_floor.csv")) {
		check(r, "floor", dcudp_rate_floor(col(r, "rtt_ns")), col(r, "expected_pps"));
	} else if (!strcmp(f, "ecn_cut.csv")) {
		check(r, "cut",
		      dcudp_ecn_cut(col(r, "rate"), col(r, "rate_data"), (uint32_t)col(r, "n_ecn"), (uint32_t)col(r, "n_ack"),
				    col(r, "rtt_ns")),
		      col(r, "expected"));
	} else if (!strcmp(f, "rate_law.csv")) {
		run_rate_law(r);
	} else if (!strcmp(f, "rtt.csv")) {
		check(r, "rtt", dcudp_rtt_update(col(r, "rtt_ns"), col(r, "sample_ns")), col(r, "expected_ns"));
	} else if (!strcmp(f, "trend.csv")) {
		fill(&a, r, "s", col(r, "n"));
		check(r, "trend", dcudp_trend(&a), col(r, "expected_q"));
		check(r, "latest", dcudp_window_latest(&a), col(r, "latest"));
	} else if (!strcmp(f, "exit.csv")) {
		fill(&a, r, "r", col(r, "nr"));
		fill(&b, r, "p", 4);
		check(r, "step", dcudp_exit_check(&a, &b, col(r, "cond1")), col(r, "expected"));
	} else if (!strcmp(f, "th_max.csv")) {
		check(r, "th_max",
		      dcudp_th_max((uint32_t)col(r, "max_qsize"), (uint32_t)col(r, "n"), col(r, "rtt_idle_ns"),
				   col(r, "delay_ns"), col(r, "interval_ns")),
		      col(r, "expected"));
	} else if (!strcmp(f, "p_ecn.csv")) {
		check(r, "p_ecn", dcudp_p_ecn((uint32_t)col(r, "ce"), (uint32_t)col(r, "packets")), col(r, "expected_q"));
	} else {
		fprintf(stderr, "%s: no test for this file\n", f);
		broken++;
	}
}

static int split(char *line, char out[MAX_COLS][32])
{
	int n = 0;
	char *tok, *save;

	line[strcspn(line, "\r\n")] = 0;
	for (tok = strtok_r(line, ",", &save); tok && n < MAX_COLS; tok = strtok_r(NULL, ",", &save))
		snprintf(out[n++], 32, "%s", tok);
	return n;
}

static void run_file(const char *dir, const char *name)
{
	char path[512], line[512];
	struct row r = { .file = name };
	bool header = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f) {
		perror(path);
		broken++;
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		r.line++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!header) {
			r.ncols = split(line, r.names);
			header = true;
			continue;
		}
		if (split(line, r.vals) != r.ncols) {
			fprintf(stderr, "%s:%d: %d columns expected\n", name, r.line, r.ncols);
			broken++;
			continue;
		}
		run_row(&r);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	struct dirent **ents;
	int n, i, files = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: core_test VECTOR_DIR\n");
		return 2;
	}
	n = scandir(argv[1], &ents, NULL, alphasort);
	if (n < 0) {
		perror(argv[1]);
		return 2;
	}
	for (i = 0; i < n; i++) {
		size_t len = strlen(ents[i]->d_name);

		if (len > 4 && !strcmp(ents[i]->d_name + len - 4, ".csv")) {
			run_file(argv[1], ents[i]->d_name);
			files++;
		}
		free(ents[i]);
	}
	free(ents);
	if (!files) {
		fprintf(stderr, "%s: no vector files\n", argv[1]);
		broken++;
	}
	printf("%d passed, %d failed\n", passed, failed + broken);
	return failed || broken ? 1 : 0;
}
