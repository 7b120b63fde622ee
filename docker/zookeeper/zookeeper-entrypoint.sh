#!/usr/bin/env bash
# Runs one ZooKeeper server (ZooKeeperServerMain, standalone) behind the ToR (DATCP_TOR_IP, see
# fabric-net.sh), its data in /var/lib/zookeeper. Prints "zookeeper: ready" once the client port
# answers (the four-letter "ruok", the only one allowed).
#   ZK_TICK_MILLIS  tickTime (default 1000): clients may ask for session timeouts from 2 to 20
#                   ticks, so the schedulers' ha.zookeeper.sessionTimeoutMillis can be 2000-20000
set -euo pipefail
[ -n "${DATCP_TOR_IP:-}" ] && /opt/datcp/bin/fabric-net.sh
mkdir -p /var/lib/zookeeper /etc/zookeeper
cat >/etc/zookeeper/zoo.cfg <<CFG
tickTime=${ZK_TICK_MILLIS:-1000}
dataDir=/var/lib/zookeeper
clientPort=2181
maxClientCnxns=60
admin.enableServer=false
4lw.commands.whitelist=ruok
CFG
# the readiness line comes from a probe beside the server, which runs as this process
(
	for _ in $(seq 120); do
		answer=$(bash -c 'exec 3<>/dev/tcp/127.0.0.1/2181 && printf ruok >&3 && head -c 4 <&3' \
			2>/dev/null || true)
		if [ "$answer" = imok ]; then
			echo "zookeeper: ready on port 2181"
			exit 0
		fi
		sleep 0.5
	done
	echo "zookeeper: no answer on port 2181 after 60 s" >&2
) &
exec java -Xmx128m -cp '/opt/zookeeper/lib/*' org.apache.zookeeper.server.ZooKeeperServerMain \
	/etc/zookeeper/zoo.cfg
