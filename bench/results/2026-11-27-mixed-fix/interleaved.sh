#!/bin/bash
# issue 22 item 1: mixed over seeds FIRST..LAST, the profiles interleaved seed by seed and
# their order swapped on every other seed (a drift of the shared machine's load, or a
# cost of running first after another session, spreads over both). Both locks are taken
# once for the batch (other sessions' Docker and hostile runs hold them 15-25 min at a
# time: taken per seed, a batch would not finish in a session); every run has a time
# limit. loads.txt: per run the start, the load averages before and after, exit code.
# Usage: interleaved.sh FIRST LAST PROFILE...   (e.g. 1 10 yield tuned)
OUT=bench/results/2026-11-27-mixed-fix/interleaved
mkdir -p "$OUT"
flock /tmp/datcp-bench.lock flock /tmp/datcp-kernel.lock bash -c '
	out=$1 first=$2 last=$3; shift 3
	for s in $(seq "$first" "$last"); do
		profiles=("$@")
		[ $(( (s - first) % 2 )) = 1 ] && profiles=($(printf "%s\n" "$@" | tac))
		for p in "${profiles[@]}"; do
			l=datcp@$p
			[ "$p" = tuned ] && l=datcp
			before=$(cut -d" " -f1-3 /proc/loadavg) start=$(date -u +%H:%M:%S)
			timeout -k 30 300 bench/run mixed --runs 1 --seed "$s" --label "$l" \
				--kernel-trace 0.2 --boost-softirq --out "$out" --cc datcp \
				--kmod-profile "$p" >/dev/null
			rc=$?
			echo "seed $s $p start $start load_before $before load_after $(cut -d" " -f1-3 /proc/loadavg) rc $rc" >>"$out/loads.txt"
		done
	done' bash "$OUT" "$1" "$2" "${@:3}"
bench/run stats --out "$OUT"
bench/run diagnose --out "$OUT"
