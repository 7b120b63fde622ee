#!/usr/bin/env bash
# Runs the scheduler behind the ToR (DATCP_TOR_IP, see fabric-net.sh) with its data in
# /var/lib/datcp-scheduler. Extra arguments go to the scheduler.
#   DATCP_NODES      host names to mint node tokens for (scheduler/README.md, "Node
#                    credentials"); each token goes to DATCP_TOKEN_DIR/HOST (0600), where that
#                    host's agent reads it. In this demo cluster the directory is on the shared
#                    /data volume: every node could read every token, acceptable for a test
#                    cluster only.
#   DATCP_TOKEN_DIR  default /data/node-tokens
#   DATCP_TLS_DIR    default /data/node-tls. A new container makes a throwaway CA (its key stays
#                    in the container, /var/lib/datcp-scheduler/pki; a restart keeps it), the
#                    scheduler's certificate (DNS:scheduler, DNS:localhost, IP:127.0.0.1) and
#                    one client certificate per DATCP_NODES host, named after it, to
#                    DATCP_TLS_DIR/HOST/{ca,cert,key}.pem (the directory appears whole). The
#                    scheduler runs with mutual TLS required on gRPC (tls.clientAuth=require)
#                    and TLS on HTTP (curl --cacert /var/lib/datcp-scheduler/pki/ca.pem
#                    https://localhost:8080/). Keys on the shared volume: a test cluster only,
#                    as the tokens.
#   DATCP_RM_WEBAPP  ResourceManager web address for job attributes, default http://rm:8088
#   DATCP_SCHEDULER_EXTRA  extra lines for scheduler.properties (keys: scheduler/README.md)
set -euo pipefail
[ -n "${DATCP_TOR_IP:-}" ] && /opt/datcp/bin/fabric-net.sh
data=/var/lib/datcp-scheduler
mkdir -p "$data"
pki=$data/pki
tls_dir=${DATCP_TLS_DIR:-/data/node-tls}
# a new container makes a new CA (certificates of an earlier cluster on this /data are not
# trusted); a restarted one keeps its own, so that its agents' certificates stay good
if [ ! -s "$pki/ca.key" ]; then
	rm -rf "$pki" "$tls_dir"
	/opt/datcp/bin/tls-pki.sh "$pki" ca
	/opt/datcp/bin/tls-pki.sh "$pki" server scheduler DNS:scheduler DNS:localhost IP:127.0.0.1
	mkdir -p "$tls_dir"
	for host in ${DATCP_NODES:-}; do
		/opt/datcp/bin/tls-pki.sh "$pki" client "$host"
		d=$tls_dir/$host
		mkdir -p "$d.tmp"
		cp "$pki/ca.pem" "$d.tmp/ca.pem"
		cp "$pki/$host.pem" "$d.tmp/cert.pem"
		cp "$pki/$host.key" "$d.tmp/key.pem"
		mv "$d.tmp" "$d"
	done
fi
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
tls.certFile=$pki/scheduler.pem
tls.keyFile=$pki/scheduler.key
tls.clientCaFile=$pki/ca.pem
tls.clientAuth=require
${DATCP_SCHEDULER_EXTRA:-}
PROPS
exec java -Xmx384m -jar /opt/datcp/scheduler.jar --data-dir "$data" \
	--config "$data/scheduler.properties" --grpc-port 9090 --http-port 8080 "$@"
