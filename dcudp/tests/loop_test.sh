#!/usr/bin/env bash
# loop_test.sh - DCUDP file transfers between two network namespaces this
# test creates (root). A sender namespace and a receiver namespace joined by
# a veth pair; each case sends a random file with dcudp-send to dcudp-recv
# and checks it arrived byte-exact:
#   pacing   no shaping: the pacer alone holds 100 Mbit/s (printed: achieved
#            rate, lateness of sends p50/p99/max); asserts it is not starved
#            below half of the target (every case asserts the sender never
#            goes above its UDP Mode rate)
#   stop     endless data until --stop-at-ns with --notsent-pkts 64 (V-B's
#            FTP flow): the wire stops within 100 ms, the receiver's 10 ms
#            bins (--bin-ms) add up to what it delivered
#   loss     2% of UDP datagrams dropped each way (tests/loss.bpf.c, a tc
#            program: this kernel has no netem): NAKs, retransmissions,
#            keep-alives and shutdown under loss
#   ce       5% of datagrams CE-marked at random (tests/loss.bpf.c): the
#            sender enters Congestion Mode, ACK/ACK2 flow, the file arrives
#   marking  the sender's egress is an emulated switch port (kmod/'s
#            datcpctl: HTB 50 Mbit/s, 200 KB buffer, RED on the instantaneous
#            queue from 1 packet to th_max = 15 packets, marking with
#            probability 1 above it, as DCUDP section IV-A.1 and V-A); the
#            sender (C = 50, UDP Mode at 100 Mbit/s) must enter Congestion Mode
#            (sender and receiver counters) and deliver the file
# Prints one line per check and "N passed, N failed". Everything it creates
# (namespaces, tc, a datcp load it made) is removed on exit, also on failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$HERE/build
DATCPCTL=${DATCPCTL:-$HERE/../kmod/build/datcpctl}
NS_S=dcu$$-s
NS_R=dcu$$-r
IP_R=10.77.0.2
PORT=9000
WORK=$(mktemp -d /tmp/dcudp-loop.XXXXXX)
passed=0 failed=0
we_loaded=0 port_configured=0 recv_pid=

cleanup() {
	[ -n "$recv_pid" ] && kill "$recv_pid" 2>/dev/null
	[ "$port_configured" = 1 ] && "$DATCPCTL" switch reset --netns "$NS_S" --dev vs >/dev/null 2>&1
	[ "$we_loaded" = 1 ] && "$DATCPCTL" unload >/dev/null 2>&1
	ip netns del "$NS_S" 2>/dev/null
	ip netns del "$NS_R" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() { echo "ok   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }
# stat FILE NAME: the value of a "name=value" line the tools print
stat() { sed -n "s/^$2=//p" "$1" | tail -n 1; }

if [ "$(id -u)" != 0 ]; then
	echo "loop_test: needs root (network namespaces)"; echo "0 passed, 1 failed"; exit 1
fi
for b in dcudp-send dcudp-recv loss.bpf.o; do
	[ -e "$BUILD/$b" ] || { echo "loop_test: $BUILD/$b missing (make -C dcudp)"; echo "0 passed, 1 failed"; exit 1; }
done

ip netns add "$NS_S" && ip netns add "$NS_R" &&
	ip link add vs netns "$NS_S" type veth peer name vr netns "$NS_R" &&
	ip -n "$NS_S" addr add 10.77.0.1/24 dev vs && ip -n "$NS_R" addr add "$IP_R"/24 dev vr &&
	ip -n "$NS_S" link set vs up && ip -n "$NS_R" link set vr up &&
	ip -n "$NS_S" link set lo up && ip -n "$NS_R" link set lo up || {
	echo "loop_test: cannot create the namespaces"; echo "0 passed, 1 failed"; exit 1
}
# the switch port must see MTU-sized packets
for ns in "$NS_S" "$NS_R"; do
	ip netns exec "$ns" ethtool -K "$( [ "$ns" = "$NS_S" ] && echo vs || echo vr)" tso off gso off gro off >/dev/null 2>&1
done
head -c 6000000 /dev/urandom >"$WORK/in.bin"

# transfer NAME LINK_MBIT [UDP_MBIT]: one file from the sender to the receiver namespace;
# LINK_MBIT is C, the bottleneck, UDP_MBIT the UDP Mode rate (default C)
transfer() {
	local name=$1 mbit=$2 udp=${3:-$2} st
	PORT=$((PORT + 1))
	ip netns exec "$NS_R" "$BUILD/dcudp-recv" --port "$PORT" --link-mbit "$mbit" --out "$WORK/$name.out" \
		>"$WORK/$name.recv" 2>&1 &
	recv_pid=$!
	sleep 0.2
	# nice -15 as the bench generator: the pacer needs the CPU on time (2 shared CPUs)
	timeout 60 nice -n -15 ip netns exec "$NS_S" "$BUILD/dcudp-send" --host "$IP_R" --port "$PORT" --link-mbit "$mbit" \
		--udp-mbit "$udp" --file "$WORK/in.bin" >"$WORK/$name.send" 2>&1
	st=$?
	timeout 10 tail --pid="$recv_pid" -f /dev/null
	wait "$recv_pid" 2>/dev/null || st=1
	recv_pid=
	# the sender never goes above its UDP Mode rate, C or more (payload share 1456/1500)
	if ! awk -v r="$(stat "$WORK/$name.send" send_mbit)" -v m="$udp" 'BEGIN { exit !(r <= m * 0.9707 * 1.05) }'; then
		bad "$name: sent at $(stat "$WORK/$name.send" send_mbit) Mbit/s, above its rate $udp"
	fi
	if [ "$st" = 0 ] && cmp -s "$WORK/in.bin" "$WORK/$name.out"; then
		ok "$name: 6000000 bytes byte-exact ($(stat "$WORK/$name.recv" goodput_mbit) Mbit/s goodput," \
			"$(stat "$WORK/$name.send" data_retransmitted) retransmitted after $(stat "$WORK/$name.send" naks) NAKs," \
			"$(stat "$WORK/$name.recv" ce_received) CE)"
	else
		bad "$name: transfer failed or differs (exit $st)"
		sed 's/^/    send: /' "$WORK/$name.send" | grep -v '=0$' | head -n 40
		sed 's/^/    recv: /' "$WORK/$name.recv" | grep -v '=0$' | head -n 40
		return 1
	fi
}

# ---- pacing: 100 Mbit/s on a bare veth ----
ok_pacing=0
transfer pacing 100 && ok_pacing=1
if [ "$ok_pacing" = 1 ]; then
	s=$WORK/pacing.send
	rate=$(stat "$s" send_mbit)
	echo "     pacer: $rate Mbit/s of payload sent (target 100 Mbit/s of 1500-byte datagrams = 97.07 of payload)," \
		"send lateness p50 $(stat "$s" pace_late_p50_ns) ns, p99 $(stat "$s" pace_late_p99_ns) ns," \
		"max $(stat "$s" pace_late_max_ns) ns over $(stat "$s" pace_sends) sends"
	if awk -v r="$rate" 'BEGIN { exit !(r >= 97.07 / 2) }'; then
		ok "pacing: rate $rate Mbit/s of payload, not starved below 48.5"
	else
		bad "pacing: rate $rate Mbit/s of payload, starved below 48.5"
	fi
fi

# ---- stop: endless data until a time, the queue of unsent packets bounded (V-B's FTP) ----
PORT=$((PORT + 1))
start=$(python3 -c 'import time; print(time.monotonic_ns() + 300000000)')
stop=$((start + 400000000))
ip netns exec "$NS_R" "$BUILD/dcudp-recv" --port "$PORT" --link-mbit 100 --bin-ms 10 --bin-from-ns "$start" \
	>"$WORK/stop.recv" 2>&1 &
recv_pid=$!
sleep 0.1
timeout 30 nice -n -15 ip netns exec "$NS_S" "$BUILD/dcudp-send" --host "$IP_R" --port "$PORT" --link-mbit 100 \
	--start-at-ns "$start" --stop-at-ns "$stop" --notsent-pkts 64 --message-bytes 14560 >"$WORK/stop.send" 2>&1
st=$?
timeout 10 tail --pid="$recv_pid" -f /dev/null
wait "$recv_pid" 2>/dev/null || st=1
recv_pid=
late=$(( ($(stat "$WORK/stop.send" last_send_ns) - stop) / 1000000 ))
delivered=$(stat "$WORK/stop.recv" bytes_delivered)
binsum=$(stat "$WORK/stop.recv" bins_bytes | tr ',' '\n' | awk '{ s += $1 } END { print s + 0 }')
nbins=$(stat "$WORK/stop.recv" bins_bytes | tr ',' '\n' | grep -c .)
if [ "$st" = 0 ] && [ "$late" -le 100 ] && [ "${delivered:-0}" -ge 2400000 ]; then
	ok "stop: endless data stopped at --stop-at-ns, last datagram ${late} ms after it (<= 100), $delivered bytes delivered (>= 2.4 MB: 48 Mbit/s for 0.4 s)"
else
	bad "stop: exit $st, last datagram ${late} ms after the stop, $delivered bytes delivered"
fi
[ "$binsum" = "$delivered" ] && [ "$nbins" -ge 40 ] && [ "$nbins" -le 55 ] &&
	ok "stop: 10 ms receive bins ($nbins) add up to the bytes delivered ($binsum)" ||
	bad "stop: bins ($nbins, sum $binsum) do not match the bytes delivered ($delivered)"

# ---- loss: 2% each way ----
for pair in "$NS_S vs" "$NS_R vr"; do
	set -- $pair
	tc -n "$1" qdisc add dev "$2" clsact &&
		tc -n "$1" filter add dev "$2" egress bpf direct-action obj "$BUILD/loss.bpf.o" sec tc/loss ||
		bad "loss: cannot attach the loss program on $2"
done
if transfer loss 100; then
	r=$(stat "$WORK/loss.send" data_retransmitted)
	[ "${r:-0}" -gt 0 ] && ok "loss: $r packets retransmitted after NAKs" || bad "loss: nothing was retransmitted"
fi
tc -n "$NS_S" qdisc del dev vs clsact
tc -n "$NS_R" qdisc del dev vr clsact

# ---- random CE: 5% of datagrams marked on the way, no queue ----
tc -n "$NS_S" qdisc add dev vs clsact &&
	tc -n "$NS_S" filter add dev vs egress bpf direct-action obj "$BUILD/loss.bpf.o" sec tc/mark ||
	bad "ce: cannot attach the marking program"
if transfer ce 100; then
	s=$WORK/ce.send r=$WORK/ce.recv
	echo "     ce: Congestion Mode entered $(stat "$s" congestion_entries)x, left $(stat "$s" congestion_exits)x;" \
		"ACKs $(stat "$s" acks), CWR $(stat "$r" cwr), last Rate_data $(stat "$s" rate_data_pps) pkt/s"
	[ "$(stat "$s" congestion_entries)" -gt 0 ] && [ "$(stat "$r" ack2s)" -gt 0 ] &&
		ok "ce: Congestion Mode entered on CE, ACK/ACK2 exchanged ($(stat "$r" ack2s) RTT samples)" ||
		bad "ce: Congestion Mode not entered or no ACK2"
fi
tc -n "$NS_S" qdisc del dev vs clsact

# ---- marking: an ECN switch port at 50 Mbit/s, sender at 100 ----
if [ ! -x "$DATCPCTL" ]; then
	bad "marking: $DATCPCTL missing (make -C kmod)"
else
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	if out=$("$DATCPCTL" load --no-sockops 2>&1); then
		echo "$out" | grep -q reused || we_loaded=1
		if "$DATCPCTL" switch configure --netns "$NS_S" --dev vs --rate-mbit 50 --buffer-bytes 200000 \
			--mark red --red-min 1500 --red-max 22500 --red-maxp 1 >/dev/null; then
			port_configured=1
			if transfer marking 50 100; then
				s=$WORK/marking.send r=$WORK/marking.recv
				echo "     marking: sender entered Congestion Mode $(stat "$s" congestion_entries)x, left" \
					"$(stat "$s" congestion_exits)x; last Rate_data $(stat "$s" rate_data_pps) pkt/s, Rate_max" \
					"$(stat "$s" rate_max_pps) pkt/s (line $(stat "$s" rate_line_pps)); ACKs $(stat "$s" acks)," \
					"ACK2s $(stat "$r" ack2s), receiver RTT $(stat "$r" rtt_ns) ns"
				[ "$(stat "$r" ce_received)" -gt 0 ] && ok "marking: receiver saw $(stat "$r" ce_received) CE" ||
					bad "marking: no CE arrived"
				[ "$(stat "$s" congestion_entries)" -gt 0 ] && [ "$(stat "$r" congestion_entries)" -gt 0 ] &&
					ok "marking: Congestion Mode entered (sender $(stat "$s" congestion_entries), receiver $(stat "$r" congestion_entries))" ||
					bad "marking: Congestion Mode not entered"
				[ "$(stat "$r" ack2s)" -gt 0 ] && ok "marking: ACK/ACK2 exchanged ($(stat "$r" ack2s) RTT samples)" ||
					bad "marking: no ACK2 reached the receiver"
			fi
		else
			bad "marking: datcpctl switch configure failed"
		fi
	else
		bad "marking: datcpctl load failed: $out"
	fi
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
