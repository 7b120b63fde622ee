#!/bin/sh
# issue 22 item 3: mixed over seeds, datcp profiles interleaved seed by seed (a drift
# of the shared machine's load spreads over them), every run alone under both locks,
# taken once for the whole batch (four other sessions held them for 20+ min at a time).
# Usage: commands.sh FIRST_SEED LAST_SEED [PROFILE...]   (default: yield tuned paper)
OUT=bench/results/2026-11-27-mixed-fix
first=$1 last=$2
shift 2
profiles=${*:-yield tuned paper}
flock /tmp/datcp-bench.lock flock /tmp/datcp-kernel.lock sh -c '
	first=$1 last=$2 out=$3; shift 3
	for s in $(seq "$first" "$last"); do
		for p in "$@"; do
			l=datcp@$p
			[ "$p" = tuned ] && l=datcp
			bench/run mixed --runs 1 --seed "$s" --label "$l" --kernel-trace 0.2 \
				--boost-softirq --out "$out" --cc datcp --kmod-profile "$p"
		done
	done' sh "$first" "$last" "$OUT" $profiles
bench/run stats --out "$OUT"
bench/run diagnose --out "$OUT"
