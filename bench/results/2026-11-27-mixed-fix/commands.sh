#!/bin/sh
# issue 22 item 3: mixed over seeds, datcp profiles interleaved seed by seed (a drift
# of the shared machine's load spreads over them). Each seed's runs run one after the
# other under both locks, taken once per seed (the locks were contended by four other
# sessions: one acquisition per seed rather than per run).
# Usage: commands.sh FIRST_SEED LAST_SEED [PROFILE...]   (default: yield tuned paper)
OUT=bench/results/2026-11-27-mixed-fix
first=$1 last=$2
shift 2
profiles=${*:-yield tuned paper}
for s in $(seq "$first" "$last"); do
	flock /tmp/datcp-bench.lock flock /tmp/datcp-kernel.lock sh -c '
		s=$1; out=$2; shift 2
		for p in "$@"; do
			l=datcp@$p
			[ "$p" = tuned ] && l=datcp
			bench/run mixed --runs 1 --seed "$s" --label "$l" --kernel-trace 0.2 \
				--boost-softirq --out "$out" --cc datcp --kmod-profile "$p"
		done' sh "$s" "$OUT" $profiles
done
bench/run stats --out "$OUT"
bench/run diagnose --out "$OUT"
