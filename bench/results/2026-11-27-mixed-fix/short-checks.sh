#!/bin/sh
# fig8-4s, fig11 and eq5 short (the CI-sized scenarios) under profiles yield and tuned,
# interleaved, 3 runs each (eq5 1), all under both locks taken once.
# Usage: short-checks.sh > short-checks.txt
exec flock /tmp/datcp-bench.lock flock /tmp/datcp-kernel.lock sh -c '
	for i in 1 2 3; do
		for sc in fig8-4s fig11; do
			for p in yield tuned; do
				printf "%s %s run %s: " "$sc" "$p" "$i"
				bench/run "$sc" --short --cc datcp --kmod-profile "$p" --boost-softirq --json |
					python3 -c "import json, sys; r = json.load(sys.stdin); s = r[\"summary\"]; print(json.dumps({\"met\": s[\"met\"], \"fct_s\": s.get(\"fct_s\"), \"quenched\": sum(1 for f in r[\"flows\"] if f.get(\"suspended\") or f.get(\"killed\")), \"kmod_params\": r.get(\"kmod_params\", \"\")[-16:]}))"
			done
		done
	done
	for p in yield tuned; do
		printf "eq5 %s: " "$p"
		bench/run eq5 --short --cc datcp --kmod-profile "$p" --boost-softirq --json |
			python3 -c "import json, sys; r = json.load(sys.stdin); print(json.dumps(r[\"summary\"]))"
	done'
