#!/usr/bin/env bash
# The job A/B scenario (DATCP §4.4, Fig. 14) on the Docker cluster: the workload runner on
# docker/workloads/ab.json, off and on, then the A/B table (docker/ab-table.py: job B's copy
# and completion, job A's completion, whether B's flows met their deadlines). Results in
# bench/results/workload/docker-ab/ (AB.md: the A/B table; TABLE.md: the workload report).
# Needs root.
#   --skip-build   use the images as they are (default: mvn package + docker/build-images.sh)
# Env: DATCP_AB_ROUNDS  rounds per mode (default 5; the table shows medians)
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results/workload/docker-ab
case "${1:-}" in "" | --skip-build) ;; *)
	echo "demo-ab: unknown argument '$1' (accepted: --skip-build)" >&2
	exit 2
	;;
esac
bash docker/run-workload.sh --spec docker/workloads/ab.json --modes off,on \
	--rounds "${DATCP_AB_ROUNDS:-5}" --out "$out" ${1:+"$1"}
echo
python3 docker/ab-table.py "$out" | tee "$out/AB.md"
