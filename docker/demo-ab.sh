#!/usr/bin/env bash
# The job A/B scenario (DATCP §4.4, Fig. 14) on the Docker cluster of docker/compose.yaml:
# once with the system off (Hadoop's ShuffleHandler, cubic) and, when the node image carries
# the DATCP shuffle plugin and agent, once on (plugin + agent + scheduler + datcp). Prints the
# comparison table and keeps the results in bench/results/docker-ab/. Needs root.
#   --skip-build   use the images as they are (default: mvn package + docker/build-images.sh)
# Env: DATCP_AB_ROUNDS  pairs of jobs per mode (default 5; the table shows medians)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=../scripts/docker-env.sh
. scripts/docker-env.sh
out=$root/bench/results/docker-ab
data=$(mktemp -d /tmp/datcp-demo-data.XXXXXX)
compose=(docker-compose -p datcp-demo -f docker/compose.yaml)
# the agents attach sockops at the root of the host's cgroup v2 hierarchy
DATCP_CGROUP2=$(findmnt -n -t cgroup2 -o TARGET | head -1)
[ -n "$DATCP_CGROUP2" ] || { echo "demo: no cgroup v2 mount on this host (the agents need one)" >&2; exit 1; }
export DATCP_CGROUP2
rule=(DOCKER-USER -i dtcp-+ -m physdev --physdev-is-bridged -j ACCEPT)
rule_added=""

cleanup() {
	DATCP_DATA=$data "${compose[@]}" down -t 20 >/dev/null 2>&1 || true
	[ -n "$rule_added" ] && iptables -D "${rule[@]}" 2>/dev/null
	rm -rf "$data"
	docker_down
}
trap cleanup EXIT

docker_up
if [ "${1:-}" != --skip-build ]; then
	mvn -B -q package -DskipTests -DskipITs
	bash docker/build-images.sh
fi

# Frames bridged inside the cluster's internal networks (to and from the ToR) would be dropped
# by Docker's isolation rules because their addresses are in other hosts' subnets.
if ! iptables -C "${rule[@]}" 2>/dev/null; then
	iptables -I "${rule[@]}"
	rule_added=1
fi

# run MODE LABEL: start the cluster, run the scenario, stop the cluster
run() {
	local shuffle=$1 label=$2
	echo "== A/B $label (DATCP_SHUFFLE=$shuffle)"
	# a new scheduler mints new node tokens: start without the last run's, so that no agent
	# begins with one the new scheduler refuses (it would re-read the file until the new one is there)
	rm -rf "$data/node-tokens"
	DATCP_DATA=$data DATCP_SHUFFLE=$shuffle "${compose[@]}" up -d >/dev/null
	for _ in $(seq 180); do
		# the RM answers only after a while: a failed call must not end the script (set -e)
		n=$(docker exec datcp-demo-rm curl -fsS http://rm:8088/ws/v1/cluster/metrics 2>/dev/null |
			sed -nE 's/.*"activeNodes":([0-9]+).*/\1/p' || true)
		[ "${n:-0}" -ge 4 ] && break
		sleep 1
	done
	[ "${n:-0}" -ge 4 ] || { echo "demo: the NodeManagers did not register" >&2; exit 1; }
	local plugin=()
	# system on: the jobs' reduces report through the DATCP shuffle consumer plugin
	[ "$shuffle" = datcp ] &&
		plugin=(-D mapreduce.job.reduce.shuffle.consumer.plugin.class=io.datcp.shuffle.reduceside.DatcpShuffle)
	docker exec datcp-demo-rm datcp-job io.datcp.it.jobs.AbScenario "${plugin[@]}" --label "$label" \
		--work "/data/ab-$label" --rounds "${DATCP_AB_ROUNDS:-5}" --out "/data/ab-$label.json" >/dev/null
	mkdir -p "$out"
	cp "$data/ab-$label.json" "$out/ab-$label.json"
	DATCP_DATA=$data "${compose[@]}" down -t 20 >/dev/null
}

{
	flock 9
	run stock off
	if docker run --rm --entrypoint sh datcp/hadoop:dev -c 'ls /opt/datcp/plugin/*.jar /opt/datcp/agent/*.jar' >/dev/null 2>&1; then
		run datcp on
	else
		echo "demo: the node image has no DATCP plugin and agent: only the 'off' run was made"
		rm -f "$out/ab-on.json"
	fi
} 9>/tmp/datcp-kernel.lock

echo
if [ -f "$out/ab-on.json" ]; then
	python3 docker/ab-table.py "$out/ab-off.json" "$out/ab-on.json" | tee "$out/TABLE.md"
else
	python3 docker/ab-table.py "$out/ab-off.json" | tee "$out/TABLE.md"
fi
