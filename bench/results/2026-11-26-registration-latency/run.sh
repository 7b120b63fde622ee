#!/usr/bin/env bash
# The measurement of this folder (README.md): fb-20 in mode `on` on the Docker cluster with this
# branch's shuffle plugin, the NodeManagers' register timeout set to TIMEOUT_MS.
#   run.sh TIMEOUT_MS ROUNDS OUT
# Puts the plugin jar of shuffle-plugin/target/ into a throw-away image derived from the
# current datcp/hadoop:dev (the other images as they are), with
# datcp.shuffle.register.timeout-ms in YARN_SITE_EXTRA, runs docker/run-workload.sh on it and
# gives datcp/hadoop:dev its previous image back. Run as root under both locks:
#   flock /tmp/datcp-bench.lock flock /tmp/datcp-docker.lock bash run.sh 5 3 /tmp/out
set -euo pipefail
timeout_ms=${1:?timeout ms} rounds=${2:?rounds} out=${3:?out dir}
cd "$(dirname "$0")/../../.."
. scripts/docker-env.sh
saved=datcp/hadoop:regtimeout-saved ctx=""
restore() {
	if docker image inspect "$saved" >/dev/null 2>&1; then
		docker tag "$saved" datcp/hadoop:dev
		docker rmi "$saved" datcp/hadoop:regtimeout-run >/dev/null 2>&1 || true
	fi
	[ -n "$ctx" ] && rm -rf "$ctx"
	docker_down
}
trap restore EXIT
docker_up
docker tag datcp/hadoop:dev "$saved"
ctx=$(mktemp -d)
cp shuffle-plugin/target/datcp-shuffle-plugin.jar "$ctx/"
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $saved
COPY datcp-shuffle-plugin.jar /opt/datcp/plugin/datcp-shuffle-plugin.jar
ENV YARN_SITE_EXTRA="<property><name>datcp.shuffle.register.timeout-ms</name><value>$timeout_ms</value></property>"
DOCKERFILE
DOCKER_BUILDKIT=0 docker build -q -t datcp/hadoop:regtimeout-run "$ctx" >/dev/null
docker tag datcp/hadoop:regtimeout-run datcp/hadoop:dev
bash docker/run-workload.sh --spec docker/workloads/fb-20.json --modes on --rounds "$rounds" \
	--out "$out" --skip-build
