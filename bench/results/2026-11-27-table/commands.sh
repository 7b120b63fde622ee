#!/bin/bash
# issue 22 item 5: the README's results table again, every scenario x CC over seeds
# FIRST..LAST (the fixed scenarios only repeat: the seed names the run). Seed by seed, and
# within a seed scenario by scenario, the CCs run interleaved (their order rotated by one
# every seed) so that a drift of the shared machine's load spreads over them. The locks are
# taken twice per seed (fig8-4s, fig8-3s, fig11, eq5; then incast), ~5 min each, never for the batch: other
# sessions need them between. Every run has a time limit. loads.txt: per run the start,
# the load averages before and after, the exit code.
# Usage: commands.sh FIRST LAST
OUT=bench/results/2026-11-27-table
CCS=(datcp cubic reno-ecn dctcp d2tcp pd2tcp bbr)
first=$1 last=$2
hold() {  # seed scenario:cc... : one lock hold (~5 min), the runs in order
	flock /tmp/datcp-bench.lock flock /tmp/datcp-kernel.lock timeout -k 30 900 bash -c '
		out=$1 s=$2; shift 2
		for run in "$@"; do
			sc=${run%%:*} cc=${run#*:}
			[ -e "$out/${sc}__${cc}__seed$s.json.gz" ] && continue  # done by an earlier batch
			before=$(cut -d" " -f1-3 /proc/loadavg) start=$(date -u +%H:%M:%S)
			timeout -k 30 300 bench/run "$sc" --cc "$cc" --label "$cc" --kmod-profile yield \
				--runs 1 --seed "$s" \
				--boost-softirq --out "$out" >/dev/null
			rc=$?
			echo "$sc seed $s $cc start $start load_before $before load_after $(cut -d" " -f1-3 /proc/loadavg) rc $rc" >>"$out/loads.txt"
		done' bash "$OUT" "$@"
}
for s in $(seq "$first" "$last"); do
	r=$(( (s - 1) % ${#CCS[@]} ))
	order=("${CCS[@]:r}" "${CCS[@]:0:r}")
	# the table's "without quenching" (datcp-noquench) where it names one
	hold "$s" "${order[@]/#/fig8-4s:}" "${order[@]/#/fig8-3s:}" fig8-3s:datcp-noquench \
		"${order[@]/#/fig11:}" fig11:datcp-noquench "${order[@]/#/eq5:}" eq5:datcp-noquench
	hold "$s" "${order[@]/#/incast:}"
done
bench/run stats --out "$OUT"
