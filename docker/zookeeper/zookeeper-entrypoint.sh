#!/usr/bin/env bash
# Runs one ZooKeeper server (ZooKeeperServerMain, standalone) behind the ToR (DATCP_TOR_IP, see
# fabric-net.sh), its data in /var/lib/zookeeper, on a secure client port only: TLS (Netty) on
# 2281 with client certificates required, no plaintext port. Prints "zookeeper: ready" once the
# secure port answers the four-letter "ruok" (the only one allowed) over TLS.
#   ZK_TICK_MILLIS  tickTime (default 1000): clients may ask for session timeouts from 2 to 20
#                   ticks, so the schedulers' ha.zookeeper.sessionTimeoutMillis can be 2000-20000
#   DATCP_ZK_TLS_DIR  default /data/zookeeper-tls. A new container makes a throwaway CA of its
#                   own (its key stays in the container, /var/lib/zookeeper/pki; a restart keeps
#                   it), the server's certificate (DNS:zookeeper, DNS:localhost, IP:127.0.0.1)
#                   and one client certificate for the schedulers, "datcp-scheduler"; it puts
#                   ca.pem and scheduler.pem (that key, then its certificate: the PEM key store
#                   of ha.zookeeper.tls.keyStoreFile) in DATCP_ZK_TLS_DIR (the directory appears
#                   whole). A CA apart from the schedulers' own: a node's certificate does not
#                   reach ZooKeeper. A key on the shared volume: a test cluster only.
set -euo pipefail
[ -n "${DATCP_TOR_IP:-}" ] && /opt/datcp/bin/fabric-net.sh
port=2281
pki=/var/lib/zookeeper/pki
tls_dir=${DATCP_ZK_TLS_DIR:-/data/zookeeper-tls}
mkdir -p /var/lib/zookeeper /etc/zookeeper
if [ ! -s "$pki/ca.pem" ]; then
	rm -rf "$pki" "$tls_dir"
	/opt/datcp/bin/tls-pki.sh "$pki" ca
	/opt/datcp/bin/tls-pki.sh "$pki" server zookeeper DNS:zookeeper DNS:localhost IP:127.0.0.1
	/opt/datcp/bin/tls-pki.sh "$pki" client datcp-scheduler
	(umask 077
		cat "$pki/zookeeper.key" "$pki/zookeeper.pem" >"$pki/zookeeper-keystore.pem"
		mkdir -p "$tls_dir.tmp"
		cp "$pki/ca.pem" "$tls_dir.tmp/ca.pem"
		cat "$pki/datcp-scheduler.key" "$pki/datcp-scheduler.pem" >"$tls_dir.tmp/scheduler.pem")
	mv "$tls_dir.tmp" "$tls_dir"
fi
cat >/etc/zookeeper/zoo.cfg <<CFG
tickTime=${ZK_TICK_MILLIS:-1000}
dataDir=/var/lib/zookeeper
secureClientPort=$port
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=$pki/zookeeper-keystore.pem
ssl.keyStore.type=PEM
ssl.trustStore.location=$pki/ca.pem
ssl.trustStore.type=PEM
ssl.clientAuth=need
maxClientCnxns=60
admin.enableServer=false
4lw.commands.whitelist=ruok
CFG
# the readiness line comes from a probe beside the server, which runs as this process; it
# presents the schedulers' certificate, as the port asks every client for one
(
	for _ in $(seq 120); do
		answer=$(timeout 5 openssl s_client -quiet -connect "127.0.0.1:$port" \
			-CAfile "$pki/ca.pem" -cert "$pki/datcp-scheduler.pem" \
			-key "$pki/datcp-scheduler.key" -verify_return_error <<<ruok 2>/dev/null |
			head -c 4 || true)
		if [ "$answer" = imok ]; then
			echo "zookeeper: ready on port $port (TLS)"
			exit 0
		fi
		sleep 0.5
	done
	echo "zookeeper: no answer on port $port after 60 s" >&2
) &
exec java -Xmx128m -cp '/opt/zookeeper/lib/*' org.apache.zookeeper.server.ZooKeeperServerMain \
	/etc/zookeeper/zoo.cfg
