#!/usr/bin/env bash
# The main job: the DATCP paper's fig8 scenario (3 flows x 10 MB with a 4 s
# deadline + 3 endless background flows on one 100 Mbit/s bottleneck) on a
# local emulated cluster of network namespaces, once with datcp and once
# with cubic, each printing its table. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make -s -C kmod all
for cc in datcp cubic; do
	echo
	echo "=== fig8-4s with $cc ==="
	bench/run fig8-4s --cc "$cc"
done
