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
#   DATCP_SCHEDULER_NAME  this scheduler's host name (default scheduler): its certificate's
#                    DNS name and, in the HA mode, the address it joins the election with
#   DATCP_SCHEDULERS every scheduler's host name (default DATCP_SCHEDULER_NAME). The first one
#                    makes the cluster's CA, every scheduler's certificate, the nodes'
#                    certificates and tokens and (HA mode) the admin token, and hands each other
#                    scheduler its share in DATCP_SHARE_DIR/NAME; the others wait for it (120 s)
#   DATCP_SHARE_DIR  default /data/scheduler-share (on the shared volume: a test cluster only)
#   DATCP_ZOOKEEPER  ha.zookeeper.connect: the HA mode (scheduler/README.md, "High
#                    availability") with the same auth.token, ZooKeeper credential
#                    (ha.zookeeper.auth, made by the first scheduler) and node tokens on every
#                    scheduler
#   DATCP_HA_SESSION_MS  ha.zookeeper.sessionTimeoutMillis in the HA mode, default 4000
#   DATCP_ZK_TLS_DIR the HA mode's TLS to ZooKeeper (ha.zookeeper.tls.*): the ZooKeeper
#                    container's CA (ca.pem) and the schedulers' PEM key store (scheduler.pem)
#                    that zookeeper-entrypoint.sh puts there; waited for (120 s), read from there
#                    (a new ZooKeeper container's new CA applies at the next connection).
#                    Default /data/zookeeper-tls
#   DATCP_SCHEDULER_EXTRA  extra lines for scheduler.properties (keys: scheduler/README.md)
set -euo pipefail
[ -n "${DATCP_TOR_IP:-}" ] && /opt/datcp/bin/fabric-net.sh
data=/var/lib/datcp-scheduler
mkdir -p "$data"
pki=$data/pki
tls_dir=${DATCP_TLS_DIR:-/data/node-tls}
name=${DATCP_SCHEDULER_NAME:-scheduler}
schedulers=${DATCP_SCHEDULERS:-$name}
maker=${schedulers%% *}
share=${DATCP_SHARE_DIR:-/data/scheduler-share}
token_dir=${DATCP_TOKEN_DIR:-/data/node-tokens}
# a new container makes a new CA (certificates of an earlier cluster on this /data are not
# trusted); a restarted one keeps its own, so that its agents' certificates stay good
if [ ! -s "$pki/ca.pem" ] && [ "$name" = "$maker" ]; then
	rm -rf "$pki" "$tls_dir" "$share"
	/opt/datcp/bin/tls-pki.sh "$pki" ca
	for s in $schedulers; do
		/opt/datcp/bin/tls-pki.sh "$pki" server "$s" "DNS:$s" DNS:localhost IP:127.0.0.1
	done
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
	if [ -n "${DATCP_ZOOKEEPER:-}" ]; then
		# the HA mode needs one admin token (auth.token) and one ZooKeeper credential
		# (ha.zookeeper.auth) on every scheduler
		(umask 077; openssl rand -hex 32 >"$data/token"
			echo "digest:datcp:$(openssl rand -hex 24)" >"$data/zk-auth")
	fi
	umask 077
	for host in ${DATCP_NODES:-}; do
		mkdir -p "$token_dir"
		java -Xmx128m -jar /opt/datcp/scheduler.jar --data-dir "$data" --mint-node-token "$host" \
			>"$token_dir/$host.tmp"
		mv "$token_dir/$host.tmp" "$token_dir/$host"
	done
	for s in $schedulers; do
		[ "$s" = "$name" ] && continue
		mkdir -p "$share/$s.tmp"
		cp "$pki/ca.pem" "$pki/$s.pem" "$pki/$s.key" "$share/$s.tmp/"
		[ -f "$data/token" ] && cp "$data/token" "$share/$s.tmp/token"
		[ -f "$data/zk-auth" ] && cp "$data/zk-auth" "$share/$s.tmp/zk-auth"
		[ -f "$data/node-tokens" ] && cp "$data/node-tokens" "$share/$s.tmp/node-tokens"
		mv "$share/$s.tmp" "$share/$s"
	done
elif [ ! -s "$pki/ca.pem" ]; then
	# another scheduler's share: the CA (without its key), this one's certificate, the tokens
	for _ in $(seq 120); do [ -d "$share/$name" ] && break; sleep 1; done
	[ -d "$share/$name" ] || { echo "scheduler: no share from $maker in $share/$name" >&2; exit 2; }
	mkdir -p "$pki"
	cp "$share/$name/ca.pem" "$share/$name/$name.pem" "$share/$name/$name.key" "$pki/"
	[ -f "$share/$name/token" ] && cp "$share/$name/token" "$data/token"
	[ -f "$share/$name/zk-auth" ] && cp "$share/$name/zk-auth" "$data/zk-auth"
	[ -f "$share/$name/node-tokens" ] && cp "$share/$name/node-tokens" "$data/node-tokens"
	chmod 600 "$pki/$name.key" "$data/token" "$data/zk-auth" "$data/node-tokens" 2>/dev/null || true
fi
ha=
if [ -n "${DATCP_ZOOKEEPER:-}" ]; then
	zk_tls=${DATCP_ZK_TLS_DIR:-/data/zookeeper-tls}
	for _ in $(seq 120); do [ -d "$zk_tls" ] && break; sleep 1; done
	[ -d "$zk_tls" ] || { echo "scheduler: no ZooKeeper TLS files in $zk_tls" >&2; exit 2; }
	ha="ha.zookeeper.connect=$DATCP_ZOOKEEPER
ha.zookeeper.tls.keyStoreFile=$zk_tls/scheduler.pem
ha.zookeeper.tls.trustStoreFile=$zk_tls/ca.pem
ha.zookeeper.sessionTimeoutMillis=${DATCP_HA_SESSION_MS:-4000}
ha.advertisedHost=$name
ha.zookeeper.auth=@$data/zk-auth
watch.heartbeatMillis=1000
auth.token=$(cat "$data/token")"
fi
cat >"$data/scheduler.properties" <<PROPS
yarn.rm.webappAddress=${DATCP_RM_WEBAPP:-http://rm:8088}
tls.certFile=$pki/$name.pem
tls.keyFile=$pki/$name.key
tls.clientCaFile=$pki/ca.pem
tls.clientAuth=require
$ha
${DATCP_SCHEDULER_EXTRA:-}
PROPS
exec java -Xmx384m -jar /opt/datcp/scheduler.jar --data-dir "$data" \
	--config "$data/scheduler.properties" --grpc-port 9090 --http-port 8080 "$@"
