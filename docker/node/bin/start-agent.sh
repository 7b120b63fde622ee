#!/usr/bin/env bash
# Starts the DATCP agent (host role) in the background for the NodeManager's shuffle plugin.
# Writes its configuration from the environment (keys: agent/README.md):
#   DATCP_SCHEDULER   host:port of the scheduler's gRPC API (empty: default policy only)
#   DATCP_AGENT_EXTRA extra lines for the properties file
#   DATCP_TOKEN_DIR   where the scheduler put this host's node token (default
#                     /data/node-tokens/HOST; waited for up to 60 s when DATCP_SCHEDULER is set)
#   DATCP_TLS_DIR     where the scheduler put this host's CA, certificate and key (default
#                     /data/node-tls/HOST/{ca,cert,key}.pem; waited for as the token): the agent
#                     speaks mutual TLS to the scheduler
# The host's cgroup v2 root, bind-mounted at /run/datcp/cgroup2, is where it attaches sockops
# (Docker's own cgroup namespace hides it). Its log goes to /tmp/datcp-agent.log; it listens
# on /run/datcp/agent.sock (gRPC: the NodeManager's shuffle service) and /run/datcp/events.sock
# (the reduce tasks' reports), mode 0660, group hadoop. The NodeManager and its tasks run as
# root in this container, and root is always allowed (local.nodeManagerUser stays empty: root
# only); any other user here is refused by the file mode and by the agent's SO_PEERCRED check.
set -euo pipefail
jar=/opt/datcp/agent/datcp-agent.jar
[ -f "$jar" ] || { echo "node: DATCP_SHUFFLE=datcp needs the agent ($jar) in the image" >&2; exit 2; }
mkdir -p /etc/datcp /run/datcp /var/lib/datcp-agent
getent group hadoop >/dev/null || groupadd --system hadoop
token=${DATCP_TOKEN_DIR:-/data/node-tokens}/$(hostname)
tls=${DATCP_TLS_DIR:-/data/node-tls}/$(hostname)
if [ -n "${DATCP_SCHEDULER:-}" ]; then
	for _ in $(seq 60); do [ -s "$token" ] && [ -d "$tls" ] && break; sleep 1; done
	[ -s "$token" ] || echo "node: no node token at $token; the scheduler will refuse this agent" >&2
	[ -d "$tls" ] || echo "node: no certificate in $tls; the scheduler will refuse this agent" >&2
fi
cat >/etc/datcp/agent.properties <<PROPS
agent.role=host
agent.host=$(hostname)
local.socketPath=/run/datcp/agent.sock
local.eventsSocketPath=/run/datcp/events.sock
local.socketGroup=hadoop
local.socketMode=0660
kernel.library=/opt/datcp/kmod/libdatcp.so
scheduler.target=${DATCP_SCHEDULER:-}
scheduler.tokenFile=$([ -s "$token" ] && echo "$token")
$([ -n "${DATCP_SCHEDULER:-}" ] && [ -d "$tls" ] && printf 'scheduler.caFile=%s\nscheduler.certFile=%s\nscheduler.keyFile=%s' "$tls/ca.pem" "$tls/cert.pem" "$tls/key.pem")
state.dir=/var/lib/datcp-agent
$(mountpoint -q /run/datcp/cgroup2 && echo kernel.cgroup=/run/datcp/cgroup2)
${DATCP_AGENT_EXTRA:-}
PROPS
nohup java -Xmx256m -XX:TieredStopAtLevel=1 -jar "$jar" --config /etc/datcp/agent.properties \
	>/tmp/datcp-agent.log 2>&1 &
echo $! >/run/datcp/agent.pid
