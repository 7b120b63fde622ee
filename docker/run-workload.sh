#!/usr/bin/env bash
# Runs the jobs of a workload spec on the Docker cluster once per mode and round, checks from
# the kernel that every mode's shuffle connections ran what the mode defines, and writes
# DIR/results.json (issue 16's schema; the rounds' raw JSON and kernel samples under DIR/raw/).
# docker/README.md, "The workload runner". Needs root.
#   --spec FILE        the workload (docker/workloads/*.json; format: bench/README.md)
#   --modes LIST       comma-separated, of off,dctcp,prio,on (default: all four, in that order);
#                      without off: no comparison report (TABLE.md), the estimates in MAP-END.md
#   --rounds N         rounds per mode (default 1); results carry the medians
#   --out DIR          default bench/results/workload/docker-SPECNAME
#   --skip-build       use the images as they are (default: mvn package + build-images.sh)
# Env: DATCP_KERNEL_LOCK_HELD=1 when the caller already holds /tmp/datcp-kernel.lock (the
# it-tests run under it); otherwise the runner takes it for the whole run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=../scripts/docker-env.sh
. scripts/docker-env.sh

usage() {
	sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
die() {
	echo "run-workload: $*" >&2
	exit 1
}
spec="" modes=off,dctcp,prio,on rounds=1 out="" build=1
while [ $# -gt 0 ]; do
	case "$1" in
	--spec) spec=${2:?--spec needs a file}; shift 2 ;;
	--modes) modes=${2:?--modes needs a list}; shift 2 ;;
	--rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
	--out) out=${2:?--out needs a directory}; shift 2 ;;
	--skip-build) build=""; shift ;;
	-h | --help) usage ;;
	*) echo "run-workload: unknown argument '$1'" >&2; usage ;;
	esac
done
[ -n "$spec" ] || { echo "run-workload: --spec is required" >&2; usage; }
[ -f "$spec" ] || die "--spec: no such file: $spec"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds: must be an integer >= 1, not '$rounds'"
IFS=, read -ra mode_list <<<"$modes"
[ ${#mode_list[@]} -gt 0 ] || die "--modes: empty"
for m in "${mode_list[@]}"; do
	case "$m" in off | dctcp | prio | on) ;; *) die "--modes: '$m' unknown (accepted: off, dctcp, prio, on)" ;; esac
done
[ "$(printf '%s\n' "${mode_list[@]}" | sort | uniq -d)" = "" ] || die "--modes: a mode is listed twice"
if [ -x bench/workload ]; then
	python3 bench/workload validate "$spec" >/dev/null || die "--spec: $spec is not a valid workload spec"
fi
# the spec's name, cluster layout and link rate (the job client validates the whole spec again)
read -r spec_name cluster link_mbit < <(python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(s.get("name", "?"), s.get("cluster", "shared"), "%g" % s.get("link_mbit", 100))' "$spec") ||
	die "--spec: $spec is not JSON"
link_bps=$(python3 -c 'import sys; print(round(float(sys.argv[1]) * 1e6))' "$link_mbit")
out=${out:-$root/bench/results/workload/docker-$spec_name}
mkdir -p "$out"
out=$(cd "$out" && pwd)
spec=$(cd "$(dirname "$spec")" && pwd)/$(basename "$spec")

# One cluster per mode, named apart from the demo's and Testcontainers' (docker/README.md)
export DATCP_CLUSTER=datcp-wl DATCP_BRIDGES=dtcp-wl
case "$cluster" in
ab)
	compose_file=docker/compose.yaml nms=(nm1 nm2 nm3 nmr) ;;
shared)
	compose_file=docker/compose-shared.yaml nms=(nm1 nm2 nm3 nm4) ;;
*) die "--spec: cluster must be shared or ab, not '$cluster'" ;;
esac
compose=(docker-compose -p "$DATCP_CLUSTER" -f "$compose_file")
DATCP_CGROUP2=$(findmnt -n -t cgroup2 -o TARGET | head -1)
[ -n "$DATCP_CGROUP2" ] || die "no cgroup v2 mount on this host (the agents need one)"
export DATCP_CGROUP2
ctl=$root/kmod/build/datcpctl
plugin=(-D mapreduce.job.reduce.shuffle.consumer.plugin.class=io.datcp.shuffle.reduceside.DatcpShuffle)
rule=(DOCKER-USER -i dtcp-+ -m physdev --physdev-is-bridged -j ACCEPT)
rule_added="" data="" datcp_before=""

down() {
	[ -n "$data" ] || return 0
	DATCP_DATA=$data "${compose[@]}" down -t 20 >/dev/null 2>&1 || true
	# the agents' sockops and registrations outlive the containers: a later mode must start
	# from a kernel without them (off must not run on datcp), as DatcpCluster.stop() does
	if [ -z "$datcp_before" ] && [ -e /sys/fs/bpf/datcp ] && [ -x "$ctl" ]; then
		"$ctl" unload --force >/dev/null 2>&1 || echo "run-workload: datcpctl unload --force failed" >&2
	fi
	rm -rf "$data"
	data=""
}
cleanup() {
	down
	[ -n "$rule_added" ] && iptables -D "${rule[@]}" 2>/dev/null
	docker_down
}
trap cleanup EXIT

docker_up
# networks of a cluster run that died without cleaning up would hold the compose file's subnets
# ("Pool overlaps with other one on this address space"): Testcontainers clusters' (label
# io.datcp.cluster, as DatcpCluster removes them) and this script's own project's; one in use
# is not removed
for n in $(docker network ls -q --filter label=io.datcp.cluster) \
	$(docker network ls -q --filter label=com.docker.compose.project="$DATCP_CLUSTER"); do
	docker network rm "$n" >/dev/null 2>&1 || true
done
if [ -n "$build" ]; then
	mvn -B -ntp -q package -DskipTests -DskipITs
	bash docker/build-images.sh
fi
if [[ ,$modes, =~ ,(dctcp|prio|on), ]] &&
	! docker run --rm --entrypoint sh datcp/hadoop:dev -c 'ls /opt/datcp/plugin/*.jar /opt/datcp/agent/*.jar' >/dev/null 2>&1; then
	die "modes $modes need the DATCP plugin and agent in datcp/hadoop:dev (mvn package, build-images.sh)"
fi
if ! iptables -C "${rule[@]}" 2>/dev/null; then
	iptables -I "${rule[@]}"
	rule_added=1
fi

# mode_env MODE: the cluster's settings for a mode (issue 16 §2; docker/README.md); every mode
# runs the ToR ports at the spec's link rate, and the agents and the scheduler know it
mode_env() {
	local red=(TOR_MARK=red) step=(TOR_MARK=step TOR_K_BYTES=30000) one_band=(TOR_DSCP_MAP=)
	local bands=(TOR_DSCP_MAP=34=0,0=1,8=2) link=(TOR_RATE_MBIT="$link_mbit")
	local agent=kernel.lineRateBitsPerSecond=$link_bps scheduler=planner.downlinkBitsPerSecond=$link_bps
	local nl=$'\n'
	case "$1" in
	off) env_vars=(DATCP_SHUFFLE=stock "${red[@]}" "${one_band[@]}") services=(tor rm "${nms[@]}") ;;
	dctcp) env_vars=(DATCP_SHUFFLE=datcp DATCP_SCHEDULER= "DATCP_AGENT_EXTRA=policy.defaultMode=dctcp$nl$agent"
		"${step[@]}" "${one_band[@]}") services=(tor rm "${nms[@]}") ;;
	prio) env_vars=(DATCP_SHUFFLE=datcp DATCP_SCHEDULER=scheduler:9090
		"DATCP_AGENT_EXTRA=policy.defaultMode=dctcp$nl$agent"
		"DATCP_SCHEDULER_EXTRA=planner.policy=order$nl$scheduler"
		"${step[@]}" "${bands[@]}") services=(tor scheduler rm "${nms[@]}") ;;
	on) env_vars=(DATCP_SHUFFLE=datcp DATCP_SCHEDULER=scheduler:9090 "DATCP_AGENT_EXTRA=$agent"
		"DATCP_SCHEDULER_EXTRA=$scheduler" "${red[@]}" "${bands[@]}") services=(tor scheduler rm "${nms[@]}") ;;
	esac
	env_vars+=("${link[@]}")
}

# up MODE: start the mode's cluster and wait until it can run jobs
up() {
	local mode=$1 n=0
	mode_env "$mode"
	data=$(mktemp -d /tmp/datcp-wl-data.XXXXXX)
	# as DatcpCluster: datcp pinned before this cluster is not this cluster's to unload
	datcp_before=""
	[ -e /sys/fs/bpf/datcp ] && datcp_before=1
	cp "$spec" "$data/spec.json"
	echo "== $mode: ${env_vars[*]//$'\n'/; }"
	# a run that was killed leaves its networks behind, and their subnets would clash
	"${compose[@]}" down -t 5 >/dev/null 2>&1 || true
	env "${env_vars[@]}" DATCP_DATA="$data" "${compose[@]}" up -d "${services[@]}" >/dev/null
	for _ in $(seq 180); do
		# the RM answers only after a while: a failed call must not end the script (set -e)
		n=$(docker exec "$DATCP_CLUSTER-rm" curl -fsS http://rm:8088/ws/v1/cluster/metrics 2>/dev/null |
			sed -nE 's/.*"activeNodes":([0-9]+).*/\1/p' || true)
		[ "${n:-0}" -ge ${#nms[@]} ] && break
		sleep 1
	done
	[ "${n:-0}" -ge ${#nms[@]} ] || die "$mode: only ${n:-0} of ${#nms[@]} NodeManagers registered"
	if [ "$mode" != off ]; then
		for nm in "${nms[@]}"; do
			for _ in $(seq 60); do
				docker exec "$DATCP_CLUSTER-$nm" /opt/datcp/kmod/datcpctl status --json 2>/dev/null |
					grep -q '"sockops_attached":true' && continue 2
				sleep 1
			done
			die "$mode: the agent on $nm did not attach sockops (docker exec $DATCP_CLUSTER-$nm cat /tmp/datcp-agent.log)"
		done
	fi
	if [[ " ${services[*]} " == *" scheduler "* ]]; then
		local ready=""
		for _ in $(seq 120); do
			docker logs "$DATCP_CLUSTER-scheduler" 2>&1 | grep -q "datcp scheduler ready" && { ready=1; break; }
			[ "$(docker inspect -f '{{.State.Running}}' "$DATCP_CLUSTER-scheduler")" = true ] || break
			sleep 1
		done
		if [ -z "$ready" ]; then
			docker logs --tail 20 "$DATCP_CLUSTER-scheduler" >&2
			die "$mode: the scheduler did not start (its log above)"
		fi
	fi
	settle
}

# settle: wait (at most 90 s) until the cluster's containers use less than a fifth of one CPU
# together, twice in a row. Daemons that just started (NodeManagers, RM, and in the DATCP modes
# the agents and the scheduler) load classes and compile for a while; on two CPUs a job
# submitted meanwhile measures their start-up, which a cluster in service has long behind it.
settle() {
	local quiet=0 pct
	for _ in $(seq 45); do
		pct=$(docker stats --no-stream --format '{{.Name}} {{.CPUPerc}}' |
			awk -v p="$DATCP_CLUSTER-" 'index($1, p) == 1 {sub("%", "", $2); s += $2} END {printf "%d", s}')
		if [ "${pct:-100}" -lt 20 ]; then
			quiet=$((quiet + 1))
			[ "$quiet" -ge 2 ] && return 0
		else
			quiet=0
		fi
		sleep 1
	done
	echo "run-workload: $mode's cluster still used ${pct}% of a CPU after 90 s; running anyway" >&2
}

# cpu_snapshot: CPU time (ns) each of the cluster's containers has used so far, from its
# cgroup (v1 cpuacct or v2 cpu.stat), one "name ns" line per container
cpu_snapshot() {
	local name pid cg ns stat
	for name in $(docker ps --filter "name=^$DATCP_CLUSTER-" --format '{{.Names}}'); do
		pid=$(docker inspect -f '{{.State.Pid}}' "$name" 2>/dev/null) || continue
		ns=""
		cg=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3}' "/proc/$pid/cgroup" 2>/dev/null)
		if [ -n "$cg" ] && [ -r "/sys/fs/cgroup/cpuacct$cg/cpuacct.usage" ]; then
			ns=$(cat "/sys/fs/cgroup/cpuacct$cg/cpuacct.usage")
		else
			cg=$(awk -F: '$1 == 0 {print $3}' "/proc/$pid/cgroup" 2>/dev/null)
			stat=/sys/fs/cgroup$cg/cpu.stat
			[ -r "$stat" ] || stat=/sys/fs/cgroup/unified$cg/cpu.stat
			[ -r "$stat" ] && ns=$(awk '$1 == "usage_usec" {print $2 * 1000}' "$stat")
		fi
		[ -n "$ns" ] && echo "${name#"$DATCP_CLUSTER-"} $ns"
	done
}

# samplers START|STOP DIR: the NodeManagers' shuffle connections and the datcp flow table,
# read from the kernel every 200 ms (ss) and 500 ms (flows) while the jobs run; each
# container's CPU time at start and stop, and every second the CPU time of each NodeManager's
# processes by role (docker/node/bin/cpu-sampler.sh)
samplers() {
	local dir=$2 nm
	if [ "$1" = stop ]; then
		touch "$data/$dir/stop"
		sleep 1
		cpu_snapshot >"$data/$dir/cpu-stop.txt"
		return
	fi
	mkdir -p "$data/$dir"
	cpu_snapshot >"$data/$dir/cpu-start.txt"
	for nm in "${nms[@]}"; do
		docker exec -d "$DATCP_CLUSTER-$nm" sh -c "exec /opt/datcp/bin/cpu-sampler.sh /data/$dir >/data/$dir/ps-$nm.txt 2>&1"
	done
	for nm in "${nms[@]}"; do
		docker exec -d "$DATCP_CLUSTER-$nm" sh -c "while [ ! -e /data/$dir/stop ]; do
			echo \"# \$(date +%s.%N)\"
			ss -tinoH --tos state established '( sport = :13562 or dport = :13562 )'
			sleep 0.2
		done >/data/$dir/ss-$nm.txt 2>&1"
	done
	docker exec -d "$DATCP_CLUSTER-${nms[0]}" sh -c "while [ ! -e /data/$dir/stop ]; do
		/opt/datcp/kmod/datcpctl flow list --json 2>/dev/null
		sleep 0.5
	done >/data/$dir/flows.txt"
}

# scheduler_records MODE I: what the scheduler decided for the round's jobs (its per-flow
# reasons, deadlines and outcomes), kept beside the round for the report's "why"
scheduler_records() {
	local mode=$1 i=$2 id ca=/var/lib/datcp-scheduler/pki/ca.pem # made at the scheduler's start
	{
		echo '{"jobs": '
		docker exec "$DATCP_CLUSTER-scheduler" curl -fsS --cacert "$ca" https://localhost:8080/api/v1/jobs || echo null
		echo ', "flows": {'
		local sep=""
		for id in $(python3 -c 'import json, sys
for j in json.load(open(sys.argv[1]))["jobs"].values(): print(j["history"]["jobId"])' "$out/raw/$mode/round-$i.json"); do
			printf '%s"%s": ' "$sep" "$id"
			docker exec "$DATCP_CLUSTER-scheduler" curl -fsS --cacert "$ca" "https://localhost:8080/api/v1/flows?job=$id" || echo null
			sep=,
		done
		echo '}}'
	} >"$out/raw/$mode/round-$i-scheduler.json"
}

# shuffle_service_metrics MODE I: each NodeManager's DatcpShuffleFlows counters (registrations,
# untagged flows, the registration latency histogram: shuffle-plugin/README.md), cumulative since
# the mode's cluster started, as its JMX servlet gives them
shuffle_service_metrics() {
	local mode=$1 i=$2 nm sep=""
	{
		echo '{'
		for nm in "${nms[@]}"; do
			printf '%s"%s": ' "$sep" "$nm"
			docker exec "$DATCP_CLUSTER-$nm" curl -fsS "http://localhost:8042/jmx?qry=Hadoop:name=DatcpShuffleFlows,*" || echo null
			sep=,
		done
		echo '}'
	} >"$out/raw/$mode/round-$i-shuffle-service.json"
}

run_mode() {
	local mode=$1 i jc=() rc
	# with the scheduler, the reduces report their side through the DATCP consumer plugin
	case "$mode" in prio | on) jc=("${plugin[@]}") ;; esac
	up "$mode"
	mkdir -p "$out/raw/$mode"
	for i in $(seq "$rounds"); do
		echo "== $mode round $i/$rounds"
		samplers start "samples-$mode-$i"
		rc=0
		docker exec "$DATCP_CLUSTER-rm" datcp-job io.datcp.it.jobs.WorkloadScenario "${jc[@]}" \
			--spec /data/spec.json --work "/data/wl-$mode-$i" --label "$mode-$i" \
			--out "/data/round-$i.json" 2>"$out/raw/$mode/round-$i.log" || rc=$?
		samplers stop "samples-$mode-$i"
		rm -rf "$out/raw/$mode/round-$i-samples"
		cp -r "$data/samples-$mode-$i" "$out/raw/$mode/round-$i-samples"
		[ -f "$data/round-$i.json" ] && cp "$data/round-$i.json" "$out/raw/$mode/round-$i.json"
		if [ "$rc" != 0 ]; then
			grep -E "WorkloadScenario: FAILED|Exception" "$out/raw/$mode/round-$i.log" | head -5 >&2
			die "$mode round $i: the jobs did not all succeed with their exact bytes (log $out/raw/$mode/round-$i.log)"
		fi
		if [[ " ${services[*]} " == *" scheduler "* ]]; then
			scheduler_records "$mode" "$i"
			# issue 19 item 8: each job's real last map end against the scheduler's estimates
			PYTHONPATH=$root/bench python3 -m datcpbench.dockerrun mapend --mode "$mode" --index "$i" \
				--round "$out/raw/$mode/round-$i.json" --scheduler "$out/raw/$mode/round-$i-scheduler.json"
		fi
		if [ "$mode" != off ]; then shuffle_service_metrics "$mode" "$i"; fi
		PYTHONPATH=$root/bench python3 -m datcpbench.dockerrun check --mode "$mode" \
			--samples "$out/raw/$mode/round-$i-samples" --out "$out/raw/$mode/round-$i-check.json" ||
			die "$mode round $i: the kernel's shuffle connections are not what mode $mode defines (above)"
		python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print("  jct: " + ", ".join("%s %.1f s" % (n, j["jct_s"]) for n, j in r["jobs"].items()))' "$out/raw/$mode/round-$i.json"
	done
	if [ "$mode" != off ]; then
		for nm in "${nms[@]}"; do
			docker exec "$DATCP_CLUSTER-$nm" cat /tmp/datcp-agent.log >"$out/raw/$mode/agent-$nm.log" 2>&1 || true
		done
	fi
	down
}

run_all() {
	for m in "${mode_list[@]}"; do
		run_mode "$m"
	done
}
if [ "${DATCP_KERNEL_LOCK_HELD:-}" = 1 ]; then
	run_all
else
	exec 9>/tmp/datcp-kernel.lock
	flock 9
	run_all
	flock -u 9
fi

PYTHONPATH=$root/bench python3 -m datcpbench.dockerrun merge --dir "$out" --spec "$spec_name" \
	--modes "$modes" --rounds "$rounds"
echo "run-workload: $out/results.json"
if [[ ,$modes, != *,off,* ]]; then
	# TABLE.md compares every mode with off; without it only the estimates' section stands
	echo "run-workload: no mode off in --modes $modes: no comparison report; the last map's end in $out/MAP-END.md"
	PYTHONPATH=$root/bench python3 -m datcpbench.dockerrun mapends --results "$out/results.json" \
		--out "$out/MAP-END.md"
elif [ -x bench/workload ]; then
	python3 bench/workload report "$out/results.json" --out "$out"
else
	echo "run-workload: the report tool (bench/workload report) is missing: no TABLE.md or plots"
fi
