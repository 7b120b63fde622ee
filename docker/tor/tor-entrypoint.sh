#!/usr/bin/env bash
# The top-of-rack switch: routes between the hosts' links (one Docker network per host) and
# makes each egress port a DATCP switch port (DATCP Table 1): HTB at the link rate + a bfifo
# buffer + kmod's AQM (RED on the instantaneous queue, marking ECN-capable packets and
# dropping the others), with strict-priority bands by DSCP. On SIGTERM it clears its ports so
# nothing stays in the kernel.
# Env:
#   TOR_SHAPER       datcp (kmod AQM via datcpctl, default) | agent (as datcp, then the agent in
#                    switch role keeps the ports) | htb (HTB + bfifo tail drop, no BPF) | none
#   TOR_PORTS        number of links to wait for (default: the ones present)
#   TOR_RATE_MBIT (100) TOR_BUFFER_BYTES (200000) TOR_RED_MIN (80000) TOR_RED_MAX (120000)
#   TOR_RED_MAXP (1)
#   TOR_MARK         red (default: RED on the instantaneous queue, DATCP Table 1) | step (DCTCP's
#                    step marking: every ECN-capable packet above TOR_K_BYTES is marked, default
#                    30000, bench's dctcp baseline)
#   TOR_DSCP_MAP     DSCP=BAND pairs (default 34=0,0=1,8=2: kmod's precedence classes high AF41,
#                    standard CS0, low CS1, as the scheduler's default dscpBands); empty: one band
set -uo pipefail
shaper=${TOR_SHAPER:-datcp}
rate=${TOR_RATE_MBIT:-100} buffer=${TOR_BUFFER_BYTES:-200000}
dscp_map=${TOR_DSCP_MAP-34=0,0=1,8=2}
mark=${TOR_MARK:-red}
ctl=/opt/datcp/kmod/datcpctl
case "$shaper" in datcp | agent | htb | none) ;; *)
	echo "tor: TOR_SHAPER must be datcp, agent, htb or none, not '$shaper'" >&2
	exit 2
	;;
esac
case "$mark" in
red) marking=(--mark red --red-min "${TOR_RED_MIN:-80000}" --red-max "${TOR_RED_MAX:-120000}"
	--red-maxp "${TOR_RED_MAXP:-1}") ;;
step) marking=(--mark step --k-bytes "${TOR_K_BYTES:-30000}") ;;
*)
	echo "tor: TOR_MARK must be red or step, not '$mark'" >&2
	exit 2
	;;
esac

ports() { ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -v '^lo$'; }
if [ -n "${TOR_PORTS:-}" ]; then
	for _ in $(seq 100); do [ "$(ports | wc -l)" -ge "$TOR_PORTS" ] && break; sleep 0.1; done
fi
[ "$(sysctl -n net.ipv4.ip_forward)" = 1 ] || { echo "tor: run with --sysctl net.ipv4.ip_forward=1" >&2; exit 2; }

cleanup() {
	if [ "$shaper" = datcp ] || [ "$shaper" = agent ]; then
		[ -f /run/datcp-agent.pid ] && kill "$(cat /run/datcp-agent.pid)" 2>/dev/null && sleep 0.5
		for p in $(ports); do "$ctl" switch reset --dev "$p" 2>/dev/null; done
		"$ctl" unload 2>/dev/null || echo "tor: datcp stays loaded (still in use by others)"
	fi
	exit 0
}
trap cleanup TERM INT

for p in $(ports); do
	ethtool -K "$p" tso off gso off gro off >/dev/null 2>&1 || echo "tor: offloads stay on at $p" >&2
done
case "$shaper" in
datcp | agent)
	[ -x "$ctl" ] || { echo "tor: TOR_SHAPER=$shaper needs datcpctl in the image" >&2; exit 2; }
	mountpoint -q /sys/fs/bpf || { echo "tor: mount the host's /sys/fs/bpf into the ToR" >&2; exit 2; }
	"$ctl" load --no-sockops || exit 1
	for p in $(ports); do
		"$ctl" switch configure --dev "$p" --rate-mbit "$rate" --buffer-bytes "$buffer" "${marking[@]}" \
			${dscp_map:+--dscp-map "$dscp_map"} || { cleanup; exit 1; }
	done
	;;
htb)
	for p in $(ports); do
		tc qdisc replace dev "$p" root handle 1: htb default 1 &&
			tc class replace dev "$p" parent 1: classid 1:1 htb rate "${rate}mbit" &&
			tc qdisc replace dev "$p" parent 1:1 bfifo limit "$buffer" || exit 1
	done
	;;
esac
if [ "$shaper" = agent ]; then
	jar=/opt/datcp/agent/datcp-agent.jar
	[ -f "$jar" ] || { echo "tor: TOR_SHAPER=agent needs the agent ($jar) in the image" >&2; cleanup; }
	mkdir -p /etc/datcp /var/lib/datcp-agent
	cat >/etc/datcp/agent.properties <<PROPS
agent.role=switch
switch.name=${TOR_NAME:-tor}
kernel.library=/opt/datcp/kmod/libdatcp.so
scheduler.target=${DATCP_SCHEDULER:-}
state.dir=/var/lib/datcp-agent
PROPS
	java -Xmx256m -jar "$jar" --config /etc/datcp/agent.properties >/tmp/datcp-agent.log 2>&1 &
	echo $! >/run/datcp-agent.pid
fi
echo "tor: ready ($shaper, marking $mark, ports: $(ports | tr '\n' ' '))"
sleep infinity &
wait $!
