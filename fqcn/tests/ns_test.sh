#!/usr/bin/env bash
# ns_test.sh - QCN between network namespaces this test creates (root): a
# sender, a switch (Linux bridge) and a receiver; the switch's port toward
# the receiver is a drop-tail port, HTB at the link rate + bfifo of 150000 B
# (the FQCN paper's buffer, section IV-A). fqcn-cp runs in the switch on that
# port with Q_eq = 24000 B (the paper's 16 packets); fqcn-cbr offers 100
# Mbit/s of UDP with its reaction point, the 802.1Qau rates scaled to the
# link by 1/100 (R_AI 50 kbit/s, R_HAI 500 kbit/s, min 50 kbit/s), BC_LIMIT
# and T as in the standard. Cases:
#   no-cp     the port at 50 Mbit/s without a congestion point: no CNM, the
#             source keeps 100 Mbit/s and the port drops about half
#   qcn       the congestion point in qcn mode, the port at 50 Mbit/s for
#             2.5 s, then at 95 Mbit/s (tc class change) for 2.5 s: the
#             source is cut to the link (CR at most 60 Mbit/s, loss under
#             10%, goodput at least 40 Mbit/s) and then recovers (CR and
#             goodput in the last second at least 80 Mbit/s)
#   fqcn      as qcn with the congestion point in fqcn mode (one flow is
#             always at its share, so FQCN acts as QCN here)
#   fqcn-two  two sources of 70 and 20 Mbit/s into the 50 Mbit/s port, fqcn
#             mode: only the source over its share gets CNMs
#   tcp-rp    a TCP flow's reaction point (fqcn-incast server --rp, rates
#             scaled by 1/10 as bench/run fqcn-incast does): 20 CNMs at
#             |Fb| 63 for its flow cut CR to the minimum, 0.5 Mbit/s, and the
#             socket's pacing then holds the next 20 KB to about that rate
#             (at least 0.1 s; 1.6 ms at the port's 100 Mbit/s); a CNM for
#             another flow is counted foreign and changes nothing
# Prints one line per check and "N passed, N failed". Everything it creates
# is removed on exit, also on failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$HERE/build
P=fq$$
NS_S=$P-s NS_T=$P-t NS_W=$P-sw NS_R=$P-r
IP_S=10.78.1.1 IP_T=10.78.1.2 IP_R=10.78.2.1
WORK=$(mktemp -d /tmp/fqcn-ns.XXXXXX)
RP_ARGS=(--rp --r-ai-kbit 50 --r-hai-kbit 500 --min-rate-kbit 50)
passed=0 failed=0
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	for ns in "$NS_S" "$NS_T" "$NS_W" "$NS_R"; do ip netns del "$ns" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() { echo "ok   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }
# check DESC EXPR: EXPR is an awk condition on the numbers in DESC's message
check() { if awk "BEGIN { exit !($2) }"; then ok "$1"; else bad "$1"; fi; }
# val FILE NAME: the value of a "name=value" line
val() { sed -n "s/^$2=//p" "$1" | tail -n 1; }
# mean_field FILE PREFIX FIELD FROM_MS TO_MS: mean of FIELD= on PREFIX lines with t_ms in [FROM, TO)
mean_field() {
	awk -v pre="$2" -v fld="$3" -v lo="$4" -v hi="$5" '
		$1 == pre { t = -1; v = ""
			for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "t_ms") t = kv[2]; if (kv[1] == fld) v = kv[2] }
			if (t >= lo && t < hi && v != "") { s += v; n++ } }
		END { printf "%.3f", n ? s / n : -1 }' "$1"
}

if [ "$(id -u)" != 0 ]; then
	echo "ns_test: needs root (network namespaces)"; echo "0 passed, 1 failed"; exit 1
fi
for b in fqcn-cp fqcn-cbr fqcn-sink fqcn-incast; do
	[ -x "$BUILD/$b" ] || { echo "ns_test: $BUILD/$b missing (make -C fqcn)"; echo "0 passed, 1 failed"; exit 1; }
done

# host NS DEV_ON_SWITCH IP
host() {
	ip netns add "$1" && ip -n "$1" link set lo up &&
		ip link add eth0 netns "$1" type veth peer name "$2" netns "$NS_W" &&
		ip -n "$NS_W" link set "$2" master br0 && ip -n "$NS_W" link set "$2" up &&
		ip -n "$1" addr add "$3/16" dev eth0 && ip -n "$1" link set eth0 up &&
		ip netns exec "$1" ethtool -K eth0 tso off gso off gro off >/dev/null 2>&1 &&
		ip netns exec "$NS_W" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1
}
ip netns add "$NS_W" && ip -n "$NS_W" link add br0 type bridge stp_state 0 forward_delay 0 &&
	ip -n "$NS_W" link set br0 up && host "$NS_S" s0 "$IP_S" && host "$NS_T" s1 "$IP_T" &&
	host "$NS_R" r0 "$IP_R" || {
	echo "ns_test: cannot create the namespaces"; echo "0 passed, 1 failed"; exit 1
}

# port MBIT: the switch port toward the receiver, fresh (counters from zero)
port() {
	ip netns exec "$NS_W" tc qdisc del dev r0 root 2>/dev/null
	ip netns exec "$NS_W" tc qdisc add dev r0 root handle 1: htb default 1 &&
		ip netns exec "$NS_W" tc class add dev r0 parent 1: classid 1:1 htb rate "${1}mbit" ceil "${1}mbit" &&
		ip netns exec "$NS_W" tc qdisc add dev r0 parent 1:1 handle 10: bfifo limit 150000
}
port_rate() { ip netns exec "$NS_W" tc class change dev r0 parent 1: classid 1:1 htb rate "${1}mbit" ceil "${1}mbit"; }

# run NAME MODE MS: the sink, a congestion point (MODE qcn|fqcn, or none) and source(s) started by
# the caller's function "sources NAME MS"; waits for them
run() {
	local name=$1 mode=$2 ms=$3
	port 50 || { bad "$name: port set-up"; return 1; }
	ip netns exec "$NS_R" "$BUILD/fqcn-sink" --port 9000 --duration-ms $((ms + 700)) --interval-ms 100 \
		>"$WORK/$name.sink" 2>&1 &
	pids+=($!)
	if [ "$mode" != none ]; then
		ip netns exec "$NS_W" "$BUILD/fqcn-cp" --port r0 --in s0,s1 --q-eq-bytes 24000 --mode "$mode" \
			--duration-ms $((ms + 500)) --log >"$WORK/$name.cp" 2>&1 &
		pids+=($!)
	fi
	sleep 0.2
	sources "$name" "$ms"
	wait
	pids=()
}

echo "== no-cp: 100 Mbit/s into 50 without a congestion point"
sources() { ip netns exec "$NS_S" nice -n -15 "$BUILD/fqcn-cbr" --dst "$IP_R" --dst-port 9000 --src-port 5001 \
	--rate-mbit 100 --duration-ms "$2" --log-ms 100 "${RP_ARGS[@]}" >"$WORK/$1.cbr" 2>&1; }
run no-cp none 2000
drops=$(ip netns exec "$NS_W" tc -s qdisc show dev r0 | awk '/dropped/ { gsub(",", ""); print $7; exit }')
sent=$(val "$WORK/no-cp.cbr" sent_bytes)
check "no-cp: no CNM reached the source ($(val "$WORK/no-cp.cbr" cnms))" "$(val "$WORK/no-cp.cbr" cnms) == 0"
check "no-cp: the source kept 100 Mbit/s (sent $(val "$WORK/no-cp.cbr" sent_mbit))" \
	"$(val "$WORK/no-cp.cbr" sent_mbit) >= 90"
check "no-cp: the port dropped ${drops:-?} of $((sent / 1514)) frames (at least 30%)" \
	"${drops:-0} * 1514 >= 0.3 * $sent"

# qcn_case NAME MODE: the cut at 50 Mbit/s and the recovery at 95
qcn_case() {
	local name=$1 mode=$2 cut goodput cr_late goodput_late loss drops sent
	sources() {
		( sleep 2.5; port_rate 95 ) &
		ip netns exec "$NS_S" nice -n -15 "$BUILD/fqcn-cbr" --dst "$IP_R" --dst-port 9000 --src-port 5001 \
			--rate-mbit 100 --duration-ms "$2" --log-ms 100 "${RP_ARGS[@]}" >"$WORK/$1.cbr" 2>&1
	}
	echo "== $name: 100 Mbit/s into 50 for 2.5 s, then 95, congestion point in $mode mode"
	run "$name" "$mode" 5000
	cat "$WORK/$name.cp" | grep -v '^sample' | sed 's/^/   cp: /'
	grep -v '^rate' "$WORK/$name.cbr" | sed 's/^/   cbr: /'
	cut=$(val "$WORK/$name.cbr" cr_min_mbit)
	drops=$(val "$WORK/$name.cp" port_drops)
	sent=$(val "$WORK/$name.cbr" sent_bytes)
	goodput=$(mean_field "$WORK/$name.sink" rx mbit 1000 2500)
	cr_late=$(mean_field "$WORK/$name.cbr" rate cr_mbit 4000 5000)
	goodput_late=$(mean_field "$WORK/$name.sink" rx mbit 4000 5000)
	check "$name: CNMs reached the source ($(val "$WORK/$name.cbr" cnms), $(val "$WORK/$name.cbr" cnms_foreign) foreign)" \
		"$(val "$WORK/$name.cbr" cnms) > 0 && $(val "$WORK/$name.cbr" cnms_foreign) == 0"
	check "$name: CR cut from 100 to $cut Mbit/s (at most 60)" "$cut <= 60"
	check "$name: the port dropped ${drops:-?} of $((sent / 1514)) frames (under 10%)" \
		"${drops:-1e9} * 1514 < 0.1 * $sent"
	check "$name: goodput at 50 Mbit/s, 1-2.5 s: $goodput Mbit/s (at least 40)" "$goodput >= 40"
	check "$name: CR recovered at 95 Mbit/s, 4-5 s: $cr_late Mbit/s (at least 80)" "$cr_late >= 80"
	check "$name: goodput at 95 Mbit/s, 4-5 s: $goodput_late Mbit/s (at least 80)" "$goodput_late >= 80"
}
qcn_case qcn qcn
qcn_case fqcn fqcn

echo "== fqcn-two: 70 and 20 Mbit/s into 50, congestion point in fqcn mode"
sources() {
	ip netns exec "$NS_T" nice -n -15 "$BUILD/fqcn-cbr" --dst "$IP_R" --dst-port 9000 --src-port 5002 \
		--rate-mbit 20 --duration-ms "$2" --log-ms 100 "${RP_ARGS[@]}" >"$WORK/$1.small" 2>&1 &
	ip netns exec "$NS_S" nice -n -15 "$BUILD/fqcn-cbr" --dst "$IP_R" --dst-port 9000 --src-port 5001 \
		--rate-mbit 70 --duration-ms "$2" --log-ms 100 "${RP_ARGS[@]}" >"$WORK/$1.cbr" 2>&1
	wait
}
run fqcn-two fqcn 3000
grep -v '^sample' "$WORK/fqcn-two.cp" | sed 's/^/   cp: /'
check "fqcn-two: the 70 Mbit/s source got CNMs ($(val "$WORK/fqcn-two.cbr" cnms))" "$(val "$WORK/fqcn-two.cbr" cnms) > 0"
check "fqcn-two: the 20 Mbit/s source, under its share, got none ($(val "$WORK/fqcn-two.small" cnms))" \
	"$(val "$WORK/fqcn-two.small" cnms) == 0"
check "fqcn-two: the 20 Mbit/s source kept its rate ($(val "$WORK/fqcn-two.small" sent_mbit) Mbit/s sent)" \
	"$(val "$WORK/fqcn-two.small" sent_mbit) >= 19"

echo "== tcp-rp: a TCP server's reaction point, 20 CNMs at |Fb| 63, then 20 KB"
port 100 || bad "tcp-rp: port set-up"
ip netns exec "$NS_S" "$BUILD/fqcn-incast" server --port 5001 --mss 1000 --rp --line-rate-mbit 100 \
	--bc-limit-bytes 15000 --r-ai-kbit 500 --r-hai-kbit 5000 --min-rate-kbit 500 >"$WORK/tcp-rp.srv" 2>&1 &
pids+=($!)
sleep 0.2
# the client: CNMs as fqcn-cp writes them (fqcn_cnm.h), one for another flow, then a 20 KB read
ip netns exec "$NS_R" timeout 20 python3 - "$IP_S" >"$WORK/tcp-rp.cli" 2>&1 <<'PY'
import socket, struct, sys, time
srv = sys.argv[1]
c = socket.create_connection((srv, 5001))
me, port = c.getsockname()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind((me, 7999))
cnm = lambda dport: struct.pack("!IBBBBIHHii", 0x51434E4D, 1, 63, 0, 0,
                                struct.unpack("!I", socket.inet_aton(me))[0], 5001, dport, 0, 0)
u.sendto(cnm(port ^ 1), (srv, 5001))
for _ in range(20):
    u.sendto(cnm(port), (srv, 5001))
    time.sleep(0.001)
time.sleep(0.05)
t = time.monotonic()
c.sendall(struct.pack("!I", 20000))
got = 0
while got < 20000:
    got += len(c.recv(65536))
print(f"seconds={time.monotonic() - t:.4f}")
c.close()
PY
wait
pids=()
cat "$WORK/tcp-rp.cli" "$WORK/tcp-rp.srv" | sed 's/^/   /'
check "tcp-rp: the flow's 20 CNMs counted, the other flow's as foreign ($(val "$WORK/tcp-rp.srv" cnms), $(val "$WORK/tcp-rp.srv" cnms_foreign))" \
	"$(val "$WORK/tcp-rp.srv" cnms) == 20 && $(val "$WORK/tcp-rp.srv" cnms_foreign) == 1"
check "tcp-rp: CR cut to the minimum ($(val "$WORK/tcp-rp.srv" cr_min_mbit) Mbit/s, 0.5)" \
	"$(val "$WORK/tcp-rp.srv" cr_min_mbit) <= 0.5"
check "tcp-rp: 20 KB paced at about CR: $(val "$WORK/tcp-rp.cli" seconds) s (at least 0.1)" \
	"$(val "$WORK/tcp-rp.cli" seconds) >= 0.1"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
