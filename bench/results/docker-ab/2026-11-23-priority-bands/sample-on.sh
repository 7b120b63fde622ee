#!/usr/bin/env bash
# On-mode A/B rounds on the demo cluster (images built: docker/build-images.sh, dockerd
# running), sampling the kernel's flow table on nm1 every ~50 ms and the scheduler's jobs
# every ~100 ms. Usage: sample-on.sh ROUNDS TAG [OUTDIR (absolute)]; TOR_DSCP_MAP= (empty)
# runs the ToR with one band, as before 2026-11-23.
# Needs root. timeline.py OUTDIR [ROUND...] prints what the scheduler and the kernel knew when.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
. scripts/docker-env.sh
rounds=${1:-10}; tag=${2:-d1}
res=${3:-/tmp/datcp-sample-$tag}; mkdir -p $res
data=$(mktemp -d /tmp/datcp-diag-data.XXXXXX)
compose=(docker-compose -p datcp-demo -f docker/compose.yaml)
export DATCP_CGROUP2=$(findmnt -n -t cgroup2 -o TARGET | head -1)
rule=(DOCKER-USER -i dtcp-+ -m physdev --physdev-is-bridged -j ACCEPT)
cleanup() {
  DATCP_DATA=$data "${compose[@]}" down -t 20 >/dev/null 2>&1 || true
  iptables -D "${rule[@]}" 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT
iptables -C "${rule[@]}" 2>/dev/null || iptables -I "${rule[@]}"
exec 9>/tmp/datcp-kernel.lock; flock 9
DATCP_DATA=$data DATCP_SHUFFLE=datcp "${compose[@]}" up -d >/dev/null
for _ in $(seq 180); do
  n=$(docker exec datcp-demo-rm curl -fsS http://rm:8088/ws/v1/cluster/metrics 2>/dev/null | sed -nE 's/.*"activeNodes":([0-9]+).*/\1/p' || true)
  [ "${n:-0}" -ge 4 ] && break; sleep 1
done
echo "nodes $n"
# samplers inside containers
docker exec -d datcp-demo-nm1 sh -c 'while :; do echo "T $(date +%s%N)"; /opt/datcp/kmod/datcpctl flow list --json; sleep 0.05; done > /tmp/flows.log 2>&1'
docker exec -d datcp-demo-scheduler sh -c 'while :; do echo "T $(date +%s%N)"; curl -fsS http://localhost:8080/api/v1/jobs; echo; sleep 0.1; done > /tmp/jobs.log 2>&1'
docker exec datcp-demo-rm datcp-job io.datcp.it.jobs.AbScenario \
  -D mapreduce.job.reduce.shuffle.consumer.plugin.class=io.datcp.shuffle.reduceside.DatcpShuffle \
  --label on --work /data/ab-diag --rounds $rounds --out /data/ab-diag.json >/dev/null || echo "scenario rc $?"
cp $data/ab-diag.json $res/
docker cp datcp-demo-nm1:/tmp/flows.log $res/flows.log
docker cp datcp-demo-scheduler:/tmp/jobs.log $res/jobs.log
for h in nm1 nm2 nm3 nmr; do docker cp datcp-demo-$h:/tmp/datcp-agent.log $res/agent-$h.log 2>/dev/null || true; done
docker logs datcp-demo-scheduler > $res/scheduler.log 2>&1 || true
# per-job flow outcomes
python3 - "$res/ab-diag.json" > $res/jobids.txt <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d["rounds"]:
    print(r["jobA"]["jobId"], r["jobB"]["jobId"])
PY
while read a b; do
  for j in $a $b; do docker exec datcp-demo-scheduler curl -fsS "http://localhost:8080/api/v1/flows?job=$j" > $res/flows-$j.json || true; done
done < $res/jobids.txt
echo done
