#!/usr/bin/env bash
# Runs the scheduler behind the ToR (DATCP_TOR_IP, see fabric-net.sh) with its data in
# /var/lib/datcp-scheduler. Extra arguments go to the scheduler.
set -euo pipefail
[ -n "${DATCP_TOR_IP:-}" ] && /opt/datcp/bin/fabric-net.sh
mkdir -p /var/lib/datcp-scheduler
exec java -Xmx384m -jar /opt/datcp/scheduler.jar --data-dir /var/lib/datcp-scheduler \
	--grpc-port 9090 --http-port 8080 "$@"
