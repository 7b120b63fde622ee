#!/bin/bash
# issue 22 item 4: mixed (§4.3) for the baselines without a mixed run since dctcp, d2tcp and
# pd2tcp moved to step marking at K: cubic, reno-ecn, dctcp, d2tcp, over seeds FIRST..LAST.
# Each CC on the switch ports bench/run gives it by default (profile paper: cubic and
# reno-ecn on RED 80/120 KB, dctcp and d2tcp on step K = 30 KB), as the datcp and
# pd2tcp/bbr mixed runs it is compared with (../2026-11-27-mixed-fix/interleaved.sh,
# ../2026-11-26-mixed-stats/commands.sh), with their --kernel-trace 0.2 (samples the
# datcp-family modes only: dctcp, d2tcp) so that those runs carry the same sampling load.
# Seed by seed the CCs run interleaved, their order rotated by one every seed; both locks
# are taken once per seed (~7 min), never for the batch: other sessions need them between.
# Every run has a time limit. loads.txt: per run the start, the load averages before and
# after, the exit code.
# Usage: commands.sh FIRST LAST
OUT=bench/results/2026-11-27-mixed-baselines
CCS=(cubic reno-ecn dctcp d2tcp)
first=$1 last=$2
for s in $(seq "$first" "$last"); do
	r=$(( (s - 1) % ${#CCS[@]} ))
	order=("${CCS[@]:r}" "${CCS[@]:0:r}")
	flock /tmp/datcp-bench.lock flock /tmp/datcp-kernel.lock timeout -k 30 1500 bash -c '
		out=$1 s=$2; shift 2
		for cc in "$@"; do
			[ -e "$out/mixed__${cc}__seed$s.json.gz" ] && continue  # done by an earlier batch
			before=$(cut -d" " -f1-3 /proc/loadavg) start=$(date -u +%H:%M:%S)
			timeout -k 30 300 bench/run mixed --cc "$cc" --label "$cc" --runs 1 --seed "$s" \
				--kernel-trace 0.2 --boost-softirq --out "$out" >/dev/null
			rc=$?
			echo "mixed seed $s $cc start $start load_before $before load_after $(cut -d" " -f1-3 /proc/loadavg) rc $rc" >>"$out/loads.txt"
		done' bash "$OUT" "$s" "${order[@]}"
done
bench/run stats --out "$OUT"
