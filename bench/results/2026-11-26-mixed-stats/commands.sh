#!/bin/sh
# issue 22 items 1-2: mixed over seeds, CCs interleaved seed by seed (a drift of the
# shared machine's load spreads over the CCs); one run at a time under both locks.
# Usage: commands.sh FIRST_SEED LAST_SEED
OUT=bench/results/2026-11-26-mixed-stats
run() {  # label, then bench/run arguments
	l=$1; shift
	flock /tmp/datcp-bench.lock flock /tmp/datcp-kernel.lock \
		bench/run mixed --runs 1 --seed "$s" --label "$l" --kernel-trace 0.2 \
		--boost-softirq --out "$OUT" "$@"
}
for s in $(seq "$1" "$2"); do
	run datcp --cc datcp --kmod-profile tuned
	run datcp@paper --cc datcp --kmod-profile paper
	run pd2tcp --cc pd2tcp --kmod-profile tuned
	run bbr --cc bbr
done
bench/run stats --out "$OUT"
