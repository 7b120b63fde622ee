#!/usr/bin/env bash
# Runs the scheduler behind the ToR (DATCP_TOR_IP, see fabric-net.sh) with its data in
# /var/lib/datcp-scheduler. Extra arguments go to the scheduler.
#   DATCP_NODES      host names to mint node tokens for (scheduler/README.md, "Node
#                    credentials"); each token goes to DATCP_TOKEN_DIR/HOST (0600), where that
#                    host's agent reads it. In this demo cluster the directory is on the shared
#                    /data volume: every node could read every token, acceptable for a test
#                    cluster only.
#   DATCP_TOKEN_DIR  default /data/node-tokens
#   DATCP_RM_WEBAPP  ResourceManager web address for job attributes, default http://rm:8088
#   DATCP_SCHEDULER_EXTRA  extra lines for scheduler.properties (keys: scheduler/README.md)
set -euo pipefail
[ -n "${DATCP_TOR_IP:-}" ] && /opt/datcp/bin/fabric-net.sh
data=/var/lib/datcp-scheduler
mkdir -p "$data"
token_dir=${DATCP_TOKEN_DIR:-/data/node-tokens}
for host in ${DATCP_NODES:-}; do
	mkdir -p "$token_dir"
	umask 077
	java -Xmx128m -jar /opt/datcp/scheduler.jar --data-dir "$data" --mint-node-token "$host" \
		>"$token_dir/$host.tmp"
	mv "$token_dir/$host.tmp" "$token_dir/$host"
done
cat >"$data/scheduler.properties" <<PROPS
yarn.rm.webappAddress=${DATCP_RM_WEBAPP:-http://rm:8088}
${DATCP_SCHEDULER_EXTRA:-}
PROPS
exec java -Xmx384m -jar /opt/datcp/scheduler.jar --data-dir "$data" \
	--config "$data/scheduler.properties" --grpc-port 9090 --http-port 8080 "$@"
