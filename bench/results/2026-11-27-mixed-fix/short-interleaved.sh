#!/bin/bash
# issue 22 §4 "fig8, fig11 and eq5 no worse": their CI-sized versions (--short) under the
# given profiles, RUNS rounds, each round every scenario under every profile (profile order
# swapped on every other round), both locks taken once for all rounds (WAIT: seconds to
# wait for them, default 3600), a time limit per run. Run files
# (<scenario>__<label>__seed<round>.json.gz; these scenarios are fixed, the seed only
# numbers the round) and loads.txt as interleaved.sh.
# Usage: short-interleaved.sh RUNS PROFILE...   (e.g. 3 yield tuned)
OUT=bench/results/2026-11-27-mixed-fix/short
mkdir -p "$OUT"
flock -w "${WAIT:-3600}" /tmp/datcp-bench.lock flock /tmp/datcp-kernel.lock bash -c '
	out=$1 runs=$2; shift 2
	for i in $(seq 1 "$runs"); do
		profiles=("$@")
		[ $(( i % 2 )) = 0 ] && profiles=($(printf "%s\n" "$@" | tac))
		for sc in fig8-4s fig11 eq5; do
			for p in "${profiles[@]}"; do
				l=datcp@$p
				[ "$p" = tuned ] && l=datcp
				before=$(cut -d" " -f1-3 /proc/loadavg) start=$(date -u +%H:%M:%S)
				timeout -k 30 120 bench/run "$sc" --short --runs 1 --seed "$i" --label "$l" \
					--boost-softirq --out "$out" --cc datcp --kmod-profile "$p" >/dev/null
				rc=$?
				echo "$sc round $i $p start $start load_before $before load_after $(cut -d" " -f1-3 /proc/loadavg) rc $rc" >>"$out/loads.txt"
			done
		done
	done' bash "$OUT" "$@" || exit
bench/run stats --out "$OUT"
