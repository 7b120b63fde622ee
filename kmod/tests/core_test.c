// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * core_test - checks the algorithm core (datcp_core.h, datcp_aqm.h,
 * pfdct_core.h), the
 * same code the BPF programs run, against the language-neutral vectors in
 * the CSV files of tests/vectors/. Each file is one function; its header names the
 * columns; lines starting with '#' are comments. Ends with the line
 * "N passed, N failed" and exits non-zero on any failure.
 *
 *   core_test DIR
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>
#include "datcp_core.h"
#include "datcp_aqm.h"
#include "pfdct_core.h"

#define MAX_COLS 24
#define MAX_LINE 1024

struct row {
	const char *file;
	int line;
	int ncols;
	char names[MAX_COLS][48];
	char vals[MAX_COLS][48];
};

static int passed, failed, malformed;
static const struct datcp_params tuned = DATCP_PARAMS_TUNED, paper = DATCP_PARAMS_PAPER,
				 yield = DATCP_PARAMS_YIELD;

/* The profile a vector file is checked against: *_paper.csv use "paper",
 * *_yield.csv "yield", the others "tuned". */
static const struct datcp_params *profile_of(const char *file)
{
	if (strstr(file, "_paper.csv"))
		return &paper;
	return strstr(file, "_yield.csv") ? &yield : &tuned;
}

static long long col_s(struct row *r, const char *name)
{
	int i;

	for (i = 0; i < r->ncols; i++)
		if (!strcmp(r->names[i], name))
			return strtoll(r->vals[i], NULL, 0);
	fprintf(stderr, "%s:%d: no column '%s'\n", r->file, r->line, name);
	malformed++;
	return 0;
}

static unsigned long long col(struct row *r, const char *name)
{
	int i;

	for (i = 0; i < r->ncols; i++)
		if (!strcmp(r->names[i], name))
			return r->vals[i][0] == '-' ? (unsigned long long)strtoll(r->vals[i], NULL, 0)
						    : strtoull(r->vals[i], NULL, 0);
	fprintf(stderr, "%s:%d: no column '%s'\n", r->file, r->line, name);
	malformed++;
	return 0;
}

static void check(struct row *r, const char *what, unsigned long long got, unsigned long long want,
		  unsigned long long tol)
{
	unsigned long long diff = got > want ? got - want : want - got;

	if (diff <= tol) {
		passed++;
		return;
	}
	failed++;
	fprintf(stderr, "FAIL %s:%d %s: got %llu, want %llu (tolerance %llu)\n", r->file, r->line, what,
		got, want, tol);
}

/* PFDCT's flow count carried between rows of one pfdct_flows scenario. */
static struct aqm_pfdct_flows flows_state;
static long long flows_scenario = -1;

/* Port state carried between rows of one aqm_enqueue scenario. */
static struct datcp_port_state aqm_state;
static long long aqm_scenario = -1;

/* A hopeless flow (R_desired far above a constant R_avg) starting at U_max,
 * one row a step; rows of a scenario share the state. op "w": one window
 * (rnd 0, so a draw with p_quench > 0 quenches); op "r": a resume order.
 * expected_quenched: the state after the step. */
static struct datcp_flow_state cycle_state;
static long long cycle_scenario = -1;

static void run_quench_cycle(struct row *r, const struct datcp_params *prm)
{
	const __u64 start = 1000000000ULL;
	struct datcp_flow_meta m = { .mode = DATCP_MODE_DATCP, .importance_q = DATCP_Q,
				     .quench = DATCP_QUENCH_SUSPEND, .flags = DATCP_F_SIZE_KNOWN,
				     .size_bytes = 1000000000ULL, .deadline_ns = start + 100000000000ULL };
	long long step = col_s(r, "step");
	struct datcp_window w = { .now_ns = start + (__u64)step * 10000000ULL,
				  .acked_bytes = 1000, .window_ns = 10000000ULL,
				  .acked_total = (__u64)step * 1000 };
	const char *op = r->vals[2];

	if (col_s(r, "scenario") != cycle_scenario) {
		datcp_flow_state_init(&cycle_state, start);
		cycle_state.urgency_q = prm->u_max_q;
		cycle_state.r_avg = 100000;
		cycle_scenario = col_s(r, "scenario");
	}
	if (!strcmp(op, "r"))
		datcp_flow_state_resume(&cycle_state);
	else
		datcp_window_step(&cycle_state, &m, &w, prm, 12500000);
	check(r, "quenched", cycle_state.quenched, col(r, "expected_quenched"), 0);
}

static void run_row(struct row *r)
{
	const struct datcp_params *prm = profile_of(r->file);
	char f[64];

	/* foo_paper.csv and foo_yield.csv check the same function as foo.csv,
	 * under that profile */
	snprintf(f, sizeof(f), "%s", r->file);
	if (strstr(f, "_paper.csv"))
		strcpy(strstr(f, "_paper.csv"), ".csv");
	if (strstr(f, "_yield.csv"))
		strcpy(strstr(f, "_yield.csv"), ".csv");

	if (!strcmp(f, "rate.csv")) {
		check(r, "rate", datcp_rate_Bps(col(r, "bytes"), col(r, "ns")), col(r, "rate_Bps"), 0);
	} else if (!strcmp(f, "r_avg.csv")) {
		check(r, "r_avg", datcp_r_avg(col(r, "r_avg"), col(r, "r_last"), (int)col(r, "slow_start"), prm),
		      col(r, "expected"), col(r, "tolerance"));
	} else if (!strcmp(f, "desired_rate.csv")) {
		check(r, "r_desired", datcp_desired_rate(col(r, "v_remain"), col_s(r, "t_remain_ns")),
		      col(r, "expected"), 0);
	} else if (!strcmp(f, "granularity.csv")) {
		check(r, "g", datcp_granularity(col(r, "r_desired"), col(r, "r_avg"), (__u32)col(r, "g_max_q")),
		      col(r, "expected_q"), 0);
	} else if (!strcmp(f, "urgency.csv")) {
		int inc;
		__u32 u = datcp_urgency_update((__u32)col(r, "u_q"), col(r, "r_desired"), col(r, "r_avg"),
					       prm->g_max_q, prm->u_max_q, &inc);

		check(r, "urgency", u, col(r, "expected_u_q"), 0);
		check(r, "increased", (unsigned)inc, col(r, "expected_increased"), 0);
	} else if (!strcmp(f, "precedence.csv")) {
		check(r, "precedence",
		      datcp_precedence((__u32)col(r, "phi_q"), (__u32)col(r, "importance_q"), (__u32)col(r, "u_q"),
				       prm->u_max_q),
		      col(r, "expected_q"), 0);
	} else if (!strcmp(f, "dctcp_precedence.csv")) {
		check(r, "precedence",
		      dctcp_precedence((__u32)col(r, "phi_q"), (__u32)col(r, "importance_q"), prm->u_max_q),
		      col(r, "expected_q"), 0);
	} else if (!strcmp(f, "md_factor.csv")) {
		check(r, "b", datcp_md_factor((__u32)col(r, "p_q")), col(r, "expected_b_q"), col(r, "tolerance"));
	} else if (!strcmp(f, "ssthresh.csv")) {
		check(r, "ssthresh", datcp_ssthresh((__u32)col(r, "cwnd"), (__u32)col(r, "b_q")),
		      col(r, "expected"), 0);
	} else if (!strcmp(f, "reduction_repair.csv")) {
		check(r, "repaired ssthresh",
		      datcp_reduction_repair((int)col(r, "in_reduction"), (__u32)col(r, "prior_cwnd"),
					     (__u32)col(r, "ssthresh"), (__u32)col(r, "prior_ssthresh"),
					     (__u32)col(r, "b_q")),
		      col(r, "expected"), 0);
	} else if (!strcmp(f, "quench_prob.csv")) {
		check(r, "p_quench", datcp_quench_prob((__u32)col(r, "p_q"), prm->quench_p_max_q, prm->quench_draws), col(r, "expected_q"), 0);
	} else if (!strcmp(f, "quench_step.csv")) {
		struct datcp_quench_state_q s = { .r_avg_prev = col(r, "r_avg_prev"),
						  .theta = (__u32)col(r, "theta"),
						  .u_increased = (__u32)col(r, "u_increased") };
		struct datcp_params q_prm = *prm;
		int q;

		q_prm.theta_max = (__u32)col(r, "theta_max");
		q = datcp_quench_step(&s, col(r, "r_avg"), (int)col(r, "hopeful"), (__u32)col(r, "p_q"),
				      &q_prm, (__u32)col(r, "rnd"));

		check(r, "quench", (unsigned)q, col(r, "expected_quench"), 0);
		check(r, "theta", s.theta, col(r, "expected_theta"), 0);
		check(r, "r_avg_prev", s.r_avg_prev, col(r, "r_avg"), 0);
	} else if (!strcmp(f, "dctcp_alpha.csv")) {
		check(r, "alpha",
		      dctcp_alpha_update((__u32)col(r, "alpha_q"), col(r, "marked"), col(r, "total"),
					 (__u32)col(r, "g_q")),
		      col(r, "expected_q"), 0);
	} else if (!strcmp(f, "pow.csv")) {
		check(r, "pow", datcp_pow_q((__u32)col(r, "x_q"), (__u32)col(r, "e_q")), col(r, "expected_q"),
		      col(r, "tolerance"));
	} else if (!strcmp(f, "d2tcp_d.csv")) {
		check(r, "d",
		      d2tcp_deadline_factor(col(r, "v_remain"), col(r, "r_avg"), col_s(r, "t_remain_ns"),
					    (int)col(r, "has_deadline")),
		      col(r, "expected_q"), 0);
	} else if (!strcmp(f, "pd2tcp_p.csv")) {
		check(r, "p",
		      pd2tcp_priority(col(r, "v_remain"), col(r, "r_avg_since_start"), col_s(r, "t_remain_ns"),
				      col(r, "deadline_total_ns"), (int)col(r, "has_deadline"),
				      col(r, "line_rate_Bps")),
		      col(r, "expected_q"), 0);
	} else if (!strcmp(f, "can_meet.csv")) {
		check(r, "can_meet",
		      (unsigned)datcp_can_meet(col(r, "v_remain"), col(r, "r_avg"), col_s(r, "t_remain_ns")),
		      col(r, "expected"), 0);
	} else if (!strcmp(f, "overdue.csv")) {
		check(r, "overdue",
		      (unsigned)datcp_overdue(col(r, "v_remain"), col_s(r, "t_remain_ns"), col(r, "line_rate_Bps")),
		      col(r, "expected"), 0);
	} else if (!strcmp(f, "t_remain.csv")) {
		check(r, "t_remain", (unsigned long long)datcp_t_remain(col(r, "deadline_ns"), col(r, "now_ns")),
		      (unsigned long long)col_s(r, "expected"), 0);
	} else if (!strcmp(f, "resume_due.csv")) {
		struct datcp_params q_prm = *prm;

		q_prm.resume_quiet_ms = (__u32)col(r, "quiet_ms");
		q_prm.quench_timeout_ms = (__u32)col(r, "timeout_ms");
		check(r, "resume reason",
		      datcp_resume_due(col(r, "now_ns"), col(r, "quenched_ns"), col(r, "last_mark_ns"), &q_prm),
		      col(r, "expected_reason"), 0);
	} else if (!strcmp(f, "quench_cycle.csv")) {
		run_quench_cycle(r, prm);
	} else if (!strcmp(f, "window_step.csv")) {
		const __u64 now = 1000000000ULL;
		long long size = col_s(r, "size"), deadline = col_s(r, "deadline_rel_ns");
		struct datcp_flow_meta m = { .mode = (__u8)col(r, "mode"),
					     .importance_q = (__u32)col(r, "importance_q"),
					     .phi_q = (__u32)col(r, "phi_q"),
					     .quench = DATCP_QUENCH_SUSPEND };
		struct datcp_window w = { .now_ns = now,
					  .acked_bytes = col(r, "acked_bytes"),
					  .window_ns = col(r, "window_ns"),
					  .acked_total = col(r, "acked_total"),
					  .ece_bytes = col(r, "ece_bytes"),
					  .slow_start = (__u8)col(r, "slow_start") };
		struct datcp_flow_state s;

		if (size >= 0) {
			m.size_bytes = (__u64)size;
			m.flags = DATCP_F_SIZE_KNOWN;
		}
		if (deadline)
			m.deadline_ns = now + (__u64)deadline;
		datcp_flow_state_init(&s, now);
		check(r, "quench action", datcp_window_step(&s, &m, &w, prm, 12500000), DATCP_QS_NONE, 0);
		check(r, "urgency", s.urgency_q, col(r, "expected_urgency_q"), 0);
		check(r, "precedence", s.precedence_q, col(r, "expected_precedence_q"), 0);
		check(r, "b", s.b_q, col(r, "expected_b_q"), col(r, "tolerance_b"));
	} else if (!strcmp(f, "aqm_service.csv")) {
		check(r, "service", aqm_service_bytes(col(r, "dt_ns"), col(r, "rate_bps")),
		      col(r, "expected_bytes"), 0);
	} else if (!strcmp(f, "pfdct_ideal_k.csv")) {
		check(r, "K_i", aqm_pfdct_ideal_k(col(r, "rate_bps"), col(r, "rtt_ns"), (__u32)col(r, "mtu")),
		      col(r, "expected_bytes"), col(r, "tolerance"));
	} else if (!strcmp(f, "aqm_red.csv")) {
		check(r, "red mark",
		      (unsigned)aqm_red_mark(col(r, "q"), (__u32)col(r, "min"), (__u32)col(r, "max"),
					     (__u32)col(r, "maxp_q"), (__u32)col(r, "rnd")),
		      col(r, "expected_mark"), 0);
	} else if (!strcmp(f, "aqm_queue_now.csv")) {
		struct datcp_port_config cfg = { .rate_bps = col(r, "rate_bps") };
		struct datcp_port_state st = { .last_ns = col(r, "last_ns"),
					       .vq_bytes = { col(r, "vq0"), col(r, "vq1"), col(r, "vq2") } };

		check(r, "queue now", aqm_queue_now(&cfg, &st, col(r, "now_ns")), col(r, "expected_bytes"), 0);
		check(r, "state untouched", st.vq_bytes[1], col(r, "vq1"), 0);
	} else if (!strcmp(f, "aqm_enqueue.csv")) {
		struct datcp_port_config cfg = { .rate_bps = col(r, "rate_bps"),
						 .buffer_bytes = (__u32)col(r, "buffer"),
						 .mark_mode = (__u32)col(r, "mark"),
						 .red_min_bytes = (__u32)col(r, "red_min"),
						 .red_max_bytes = (__u32)col(r, "red_max"),
						 .red_maxp_q = (__u32)col(r, "red_maxp_q"),
						 .k_bytes = (__u32)col(r, "k") };
		int v;

		if (col_s(r, "scenario") != aqm_scenario) {
			memset(&aqm_state, 0, sizeof(aqm_state));
			aqm_state.pfdct_k_t = cfg.k_bytes;
			aqm_scenario = col_s(r, "scenario");
		}
		v = aqm_enqueue(&cfg, &aqm_state, col(r, "now_ns"), (__u32)col(r, "len"), (__u32)col(r, "band"),
				(__u32)col(r, "rnd"), (__u32)col(r, "pfdct_flows"));
		check(r, "verdict", (unsigned)v, col(r, "expected_verdict"), 0);
		check(r, "queue", aqm_queue_total(aqm_state.vq_bytes), col(r, "expected_queue"), 0);
	} else if (!strcmp(f, "pfdct_threshold.csv")) {
		__u64 avg = col(r, "avg_q");
		__u64 k_t = aqm_pfdct_threshold(&avg, col(r, "k_t"), col(r, "q"), (__u32)col(r, "k_ideal"),
						(__u32)col(r, "buffer"), (__u32)col(r, "flows"));

		check(r, "K_t", k_t, col(r, "expected_k_t"), 0);
		check(r, "LQV", avg, col(r, "expected_avg_q"), 0);
	} else if (!strcmp(f, "pfdct_band.csv")) {
		check(r, "band", aqm_pfdct_band((__u32)col(r, "dscp_band"), (__u32)col(r, "ecn")),
		      col(r, "expected_band"), 0);
	} else if (!strcmp(f, "pfdct_flows.csv")) {
		if (col_s(r, "scenario") != flows_scenario) {
			memset(&flows_state, 0, sizeof(flows_state));
			flows_scenario = col_s(r, "scenario");
		}
		check(r, "N",
		      aqm_pfdct_count_flow(&flows_state, (__u32)col(r, "hash"), (int)col(r, "is_long"),
					   col(r, "now_ns")),
		      col(r, "expected_n"), 0);
	} else if (!strcmp(f, "pfdct_classify.csv")) {
		check(r, "class",
		      pfdct_classify((__u32)col(r, "class"), col(r, "bytes_sent"), (__u32)col(r, "max_cwnd"),
				     col(r, "long_bytes"), (__u32)col(r, "long_cwnd")),
		      col(r, "expected_class"), 0);
	} else if (!strcmp(f, "pfdct_lq.csv")) {
		check(r, "LQ",
		      pfdct_queue_estimate((__u32)col(r, "rtt_c_us"), (__u32)col(r, "rtt_min_us"),
					   (__u32)col(r, "cwnd")),
		      col(r, "expected_lq"), 0);
	} else if (!strcmp(f, "pfdct_retransmit.csv")) {
		check(r, "retransmit",
		      (unsigned)pfdct_is_retransmit((__u32)col(r, "end_seq"), (__u32)col(r, "highest_end")),
		      col(r, "expected"), 0);
	} else if (!strcmp(f, "pfdct_ssthresh.csv")) {
		check(r, "ssthresh", pfdct_ssthresh((__u32)col(r, "cwnd"), (__u32)col(r, "alpha_q")),
		      col(r, "expected"), 0);
	} else {
		fprintf(stderr, "%s: no test knows this vector file\n", f);
		malformed++;
	}
}

static int split(char *line, char out[MAX_COLS][48])
{
	char *tok, *save = NULL;
	int n = 0;

	line[strcspn(line, "\r\n")] = 0;
	for (tok = strtok_r(line, ",", &save); tok && n < MAX_COLS; tok = strtok_r(NULL, ",", &save))
		snprintf(out[n++], 48, "%s", tok);
	return n;
}

static void run_file(const char *dir, const char *name)
{
	char path[4096], line[MAX_LINE];
	struct row r = { .file = name };
	int have_header = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	aqm_scenario = cycle_scenario = flows_scenario = -1; /* scenarios do not cross files */
	fp = fopen(path, "r");
	if (!fp) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		malformed++;
		return;
	}
	while (fgets(line, sizeof(line), fp)) {
		r.line++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!have_header) {
			r.ncols = split(line, r.names);
			have_header = 1;
			continue;
		}
		if (split(line, r.vals) != r.ncols) {
			fprintf(stderr, "%s:%d: wrong number of columns\n", name, r.line);
			malformed++;
			continue;
		}
		run_row(&r);
	}
	fclose(fp);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_csv(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 4 && !strcmp(d->d_name + n - 4, ".csv");
}

int main(int argc, char **argv)
{
	struct dirent **list;
	int n, i;

	if (argc != 2) {
		fprintf(stderr, "usage: core_test VECTOR_DIR\n");
		return 2;
	}
	n = scandir(argv[1], &list, is_csv, by_name);
	if (n <= 0) {
		fprintf(stderr, "no vector files in %s\n", argv[1]);
		return 2;
	}
	for (i = 0; i < n; i++) {
		run_file(argv[1], list[i]->d_name);
		free(list[i]);
	}
	free(list);
	failed += malformed;
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
