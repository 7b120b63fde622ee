#!/bin/sh
# issue 22 item 3: mixed over seeds, datcp profiles yield (tuned + agnostic_u_min),
# tuned (the default) and paper interleaved seed by seed (a drift of the shared
# machine's load spreads over them); one run at a time under both locks.
# Usage: commands.sh FIRST_SEED LAST_SEED [PROFILE...]   (default: yield tuned paper)
OUT=bench/results/2026-11-27-mixed-fix
first=$1 last=$2
shift 2
profiles=${*:-yield tuned paper}
for s in $(seq "$first" "$last"); do
	for p in $profiles; do
		l=datcp@$p
		[ "$p" = tuned ] && l=datcp
		flock /tmp/datcp-bench.lock flock /tmp/datcp-kernel.lock \
			bench/run mixed --runs 1 --seed "$s" --label "$l" --kernel-trace 0.2 \
			--boost-softirq --out "$OUT" --cc datcp --kmod-profile "$p"
	done
done
bench/run stats --out "$OUT"
bench/run diagnose --out "$OUT"
