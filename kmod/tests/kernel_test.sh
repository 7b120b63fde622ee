#!/usr/bin/env bash
# Kernel tests of kmod/ on the real kernel (root, bpffs, BTF): load/unload
# round trip, idempotent reuse, clear errors, a datcp transfer on loopback
# that finishes with an event, and sockops putting a configured port on
# datcp. Ends with "N passed, N failed"; cleans up even when a check fails.
set -u
cd "$(dirname "$0")/.."
CTL=build/datcpctl
PIN=/sys/fs/bpf/datcp
pass=0 fail=0
pids=()

ok()   { pass=$((pass + 1)); echo "ok   - $1"; }
bad()  { fail=$((fail + 1)); echo "FAIL - $1"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
cc_listed() { grep -qw datcp /proc/sys/net/ipv4/tcp_available_congestion_control; }

NS_A=datcp-kt-a-$$ NS_B=datcp-kt-b-$$ NS_Q=datcp-kt-q-$$
nss=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del $NS_A 2>/dev/null
	ip netns del $NS_B 2>/dev/null
	ip netns del $NS_Q 2>/dev/null
	for n in "${nss[@]}"; do ip netns del "$n" 2>/dev/null; done
	rm -f /tmp/datcp-kt-ev-*.$$ /tmp/datcp-kt-hold.$$.in /tmp/datcp-kt-hold.$$.out /tmp/datcp-kt-pfdct.$$ /tmp/datcp-kt-q.$$
	$CTL pfdct unload >/dev/null 2>&1
	$CTL unload --force >/dev/null 2>&1
}
trap cleanup EXIT

# Start from nothing, whatever an earlier run left.
$CTL unload --force >/dev/null 2>&1

# --- load / unload round trip ---
out=$($CTL load --port 5201 2>&1)
check "load succeeds ($out)" test $? -eq 0
check "datcp is an available congestion control after load" cc_listed
check "maps and links are pinned under $PIN" test -e $PIN/flows -a -e $PIN/cc_ops -a -e $PIN/sockops_link -a -e $PIN/switch_ports -a -e $PIN/netns_events
out=$($CTL load 2>&1)
check "second load reuses what is pinned" grep -q "reused" <<<"$out"
check "status reports the configured port" grep -q '"ports":\[5201\]' <<<"$($CTL status --json)"

# --- clear errors ---
out=$($CTL flow set --src 10.0.0.1 --dst 10.0.0.2:80 2>&1); rc=$?
check "a malformed endpoint is a usage error naming it (rc $rc)" test $rc -eq 2 -a -n "$(grep -o "source '10.0.0.1'" <<<"$out")"
out=$($CTL flow set --src 10.0.0.1:1 --dst 10.0.0.2:80 --deadline-ms 10 2>&1); rc=$?
check "a deadline without a size is refused" test $rc -eq 2 -a -n "$(grep -o "needs --size" <<<"$out")"
out=$($CTL flow set --src 10.0.0.1:1 --dst 10.0.0.2:80 --mode fast 2>&1); rc=$?
check "an unknown mode lists the accepted ones" test $rc -eq 2 -a -n "$(grep -o "datcp, dctcp, d2tcp, pd2tcp, reno" <<<"$out")"
out=$($CTL flow set --src 10.0.0.1:1 --dst 10.0.0.2:80 --size 1000 --deadline-ms 40000000000 2>&1); rc=$?
check "a deadline more than a year ahead is refused" test $rc -eq 2 -a -n "$(grep -o "deadline-ms: '40000000000' is not an integer in 0..31622400000" <<<"$out")"
out=$($CTL load --param g=2 2>&1); rc=$?
check "a parameter out of range is a usage error naming it" test $rc -eq 2 -a -n "$(grep -o "parameter g: '2' is not a number in \[0, 1\]" <<<"$out")"
out=$($CTL load --profile fast 2>&1); rc=$?
check "an unknown profile lists the known ones" test $rc -eq 2 -a -n "$(grep -o "tuned, paper" <<<"$out")"
check "status shows the loaded parameters (the default profile, yield)" grep -q '"params":"g=0.1 alpha=0.1 u_max=10 .*ewma=new guard_shift=4 .*agnostic_u_min=1 dctcp_g=0.063"' <<<"$($CTL status --json)"
out=$($CTL switch configure --netns no-such-ns-$$ --dev eth0 --rate-mbit 100 --buffer-bytes 200000 2>&1); rc=$?
check "an unknown network namespace is named in the error" test $rc -eq 1 -a -n "$(grep -o "no-such-ns-$$" <<<"$out")"
out=$($CTL switch configure --dev lo --rate-mbit 100 --buffer-bytes 200000 --mark red --red-min 9 --red-max 5 2>&1); rc=$?
check "RED with min >= max is refused" test $rc -eq 1 -a -n "$(grep -o "min < max" <<<"$out")"

# loopback_flow SRC_PORT DST_PORT SIZE EARLY: SIZE bytes from 127.0.0.1:SRC_PORT on datcp to
# an own receiver on DST_PORT that reads to EOF before closing (so every byte is
# acknowledged; iperf3 may reset the connection with data in flight). The flow is
# registered (size, 5 s deadline) before the first byte, or with EARLY > 0 after EARLY
# bytes were sent and acknowledged. Prints the flow's statistics, taken before the close;
# fails unless all bytes arrived.
loopback_flow() {
python3 - "$CTL" "$@" <<'PY'
import socket, subprocess, sys, threading, time
ctl, sport, dport, size, early = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.settimeout(20); srv.bind(("127.0.0.1", dport)); srv.listen(1)
got = []
def receive():
    c, _ = srv.accept(); n = 0
    while True:
        b = c.recv(1 << 20)
        if not b:
            break
        n += len(b)
    got.append(n); c.shutdown(socket.SHUT_WR)
    t_close.wait(20); c.close()
t_close = threading.Event()
t = threading.Thread(target=receive, daemon=True); t.start()
cli = socket.socket(); cli.settimeout(20)
cli.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
cli.bind(("127.0.0.1", sport)); cli.connect(("127.0.0.1", dport))
src, dst = f"127.0.0.1:{sport}", f"127.0.0.1:{dport}"
def register():
    subprocess.run([ctl, "flow", "set", "--src", src, "--dst", dst, "--size", str(size),
                    "--deadline-ms", "5000", "--mode", "datcp"], check=True)
chunk = b"x" * (1 << 20)
def send(n):
    while n:
        n -= cli.send(chunk[:min(n, len(chunk))])
if early:
    send(early)
    time.sleep(0.3)  # the early bytes are acknowledged before the flow is registered
register()
send(size - early)
cli.shutdown(socket.SHUT_WR)
cli.recv(1)  # EOF once the receiver has read everything
# statistics while the socket is open (the kernel drops them at close)
print(subprocess.run([ctl, "flow", "get", "--src", src, "--dst", dst, "--json"],
                     capture_output=True, text=True).stdout)
cli.close(); t_close.set(); t.join(20)
sys.exit(0 if got == [size] else 1)
PY
}

# --- a datcp flow on loopback: statistics, the finished event, and at close
# the closed event with the final numbers, after which nothing is left ---
size=20000000
# other flows on this kernel may report too: keep the first two events of ours
( $CTL events --json --timeout-ms 15000 | grep -m2 '"src":"127.0.0.1:41001"' >/tmp/datcp-kt-events.$$ ) & evpid=$!; pids+=($evpid)
sleep 0.3
loopback_flow 41001 5201 "$size" 0 >/tmp/datcp-kt-stats.$$
check "a $size-byte flow ran on datcp and arrived whole" test $? -eq 0
wait $evpid
ev=$(cat /tmp/datcp-kt-events.$$); st=$(cat /tmp/datcp-kt-stats.$$); rm -f /tmp/datcp-kt-events.$$ /tmp/datcp-kt-stats.$$
check "a finished event with met=true arrives ($(head -1 <<<"$ev"))" grep -q '"event":"finished","src":"127.0.0.1:41001","dst":"127.0.0.1:5201","epoch":1,.*"met":true' <<<"$ev"
acked=$(grep -o '"bytes_acked":[0-9]*' <<<"$st" | cut -d: -f2)
check "statistics count the flow's bytes (acked ${acked:-none} >= $size)" test "${acked:-0}" -ge $size
check "statistics mark it finished and met" grep -q '"finished":true,"fct_ns":[0-9]*,"met":true' <<<"$st"
closed_acked=$(tail -1 <<<"$ev" | grep '"event":"closed","src":"127.0.0.1:41001","dst":"127.0.0.1:5201","epoch":1,' | grep '"finished":true,.*"met":true' | grep -o '"bytes_acked":[0-9]*' | cut -d: -f2)
check "at close a closed event carries the final numbers ($(tail -1 <<<"$ev"))" test "${closed_acked:-0}" -ge $size
out=$($CTL flow get --src 127.0.0.1:41001 --dst 127.0.0.1:5201 2>&1); rc=$?
check "after close the kernel has deleted registration and statistics" test $rc -eq 1 -a -n "$(grep -o "no such flow" <<<"$out")"

# --- a late registration: the plugin's wait for the agent is bounded, so a response may
# start sending before its flow is registered; the flow still counts from its first byte
# and finishes (it once counted from the registration: never reached its size, no event) ---
( $CTL events --json --timeout-ms 15000 | grep -m1 '"event":"finished","src":"127.0.0.1:41002"' >/tmp/datcp-kt-late.$$ ) & evpid=$!; pids+=($evpid)
sleep 0.3
loopback_flow 41002 5202 "$size" $((size / 5)) >/tmp/datcp-kt-late-stats.$$
check "a flow registered after $((size / 5)) of its bytes were acked arrived whole" test $? -eq 0
wait $evpid
ev=$(cat /tmp/datcp-kt-late.$$); st=$(cat /tmp/datcp-kt-late-stats.$$); rm -f /tmp/datcp-kt-late.$$ /tmp/datcp-kt-late-stats.$$
acked=$(grep -o '"bytes_acked":[0-9]*' <<<"$st" | cut -d: -f2)
check "it counts its bytes from its first one (acked ${acked:-none} >= $size)" test "${acked:-0}" -ge $size
check "and its finished event arrives ($ev)" grep -q '"event":"finished","src":"127.0.0.1:41002","dst":"127.0.0.1:5202","epoch":1,' <<<"$ev"
$CTL flow set --src 10.9.9.3:1000 --dst 10.9.9.4:2000 --size 1000
$CTL flow delete --src 10.9.9.3:1000 --dst 10.9.9.4:2000
out=$($CTL flow get --src 10.9.9.3:1000 --dst 10.9.9.4:2000 2>&1); rc=$?
check "a deleted flow is gone" test $rc -eq 1 -a -n "$(grep -o "no such flow" <<<"$out")"

# --- a registration does not outlive its socket: a new connection on the same
# 4-tuple starts unregistered (it used to inherit the old entry) ---
python3 - "$CTL" <<'PY'
import socket, struct, subprocess, sys, time
ctl = sys.argv[1]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 5304)); srv.listen(4)
def connect():
    c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
    c.bind(("127.0.0.1", 43004)); c.connect(("127.0.0.1", 5304))
    a, _ = srv.accept()
    return c, a
def get():
    return subprocess.run([ctl, "flow", "get", "--src", "127.0.0.1:43004", "--dst",
                           "127.0.0.1:5304", "--json"], capture_output=True, text=True)
c, a = connect()
subprocess.run([ctl, "flow", "set", "--src", "127.0.0.1:43004", "--dst", "127.0.0.1:5304",
                "--size", "100000", "--deadline-ms", "2000"], check=True)
c.sendall(b"x" * 50000); a.recv(1 << 20); time.sleep(0.1)
before = get().returncode
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); c.close(); a.close()
c, a = connect()          # same 4-tuple, reused at once (the reset left no TIME_WAIT)
c.sendall(b"y" * 50000); a.recv(1 << 20); time.sleep(0.1)
after = get()
print(f"registered before close: {before == 0}; after reconnect: rc {after.returncode} {after.stderr.strip()}")
c.close(); a.close()
sys.exit(0 if before == 0 and after.returncode == 1 and "no such flow" in after.stderr else 1)
PY
check "a reused 4-tuple does not inherit the closed socket's registration" test $? -eq 0

# --- no leak: many short registered flows, each closed, leave nothing behind
# (kmod/bench/flow_churn; the 10^6-flow run is a benchmark, see kmod/README) ---
out=$(build/flow_churn 3000 2>&1); rc=$?
check "3000 short flows leave no registration or statistics behind ($out)" test $rc -eq 0
check "each of them reported its close (a CLOSED event, finished)" grep -q '"closed_events":3000,"closed_finished":3000,' <<<"$out"

# --- per-namespace event rings: agents in containers (one network namespace
# each) on one kernel read only their own namespace's events; they used to
# share one ring and take each other's (consumption is destructive) ---
ip netns add $NS_A && ip netns add $NS_B && ip -n $NS_A link set lo up && ip -n $NS_B link set lo up
# (nsenter, not ip netns exec: that remounts /sys and so hides bpffs; the
# readers are started by it directly, so that $! is the reader)
in_ns() { local ns=$1; shift; nsenter --net=/var/run/netns/$ns "$@"; }
# inner map id of the ring registered for namespace $1, empty when none
ring_of() {
	bpftool -j map dump pinned $PIN/netns_events 2>/dev/null | python3 -c '
import json, sys
ino, dump = int(sys.argv[1]), sys.stdin.read()
entries = json.loads(dump) if dump.strip() else []
for e in entries if isinstance(entries, list) else []:  # {"error": ...}: not pinned
    le = lambda v: int.from_bytes(bytes(int(b, 16) for b in v), "little") if isinstance(v, list) else v
    if le(e["key"]) == ino:
        print(le(e.get("inner_map_id", e.get("value"))))' "$(stat -c %i /var/run/netns/$1)"
}
wait_ring() {  # NS [ID_NOT]: until a ring (other than ID_NOT) is registered
	local i
	for i in $(seq 50); do
		local r; r=$(ring_of "$1")
		[ -n "$r" ] && [ "$r" != "${2:-}" ] && return 0
		sleep 0.1
	done
	return 1
}
# a sender and a receiver on loopback in namespace NS; the flow registered
# from inside it; SPORT tells the flows of the namespaces apart
ns_flow() {  # NS SPORT
in_ns "$1" python3 - "$CTL" "$2" <<'PY'
import socket, subprocess, sys, threading
ctl, sport, size = sys.argv[1], int(sys.argv[2]), 2000000
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.settimeout(20); srv.bind(("127.0.0.1", 5310)); srv.listen(1)
def receive():
    c, _ = srv.accept()
    while c.recv(1 << 20):
        pass
    c.close()
t = threading.Thread(target=receive, daemon=True); t.start()
cli = socket.socket(); cli.settimeout(20)
cli.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
cli.bind(("127.0.0.1", sport)); cli.connect(("127.0.0.1", 5310))
subprocess.run([ctl, "flow", "set", "--src", f"127.0.0.1:{sport}", "--dst", "127.0.0.1:5310",
                "--size", str(size), "--deadline-ms", "5000"], check=True)
cli.sendall(b"x" * size); cli.close(); t.join(20)
PY
}
# lines of events file $1 that are not the finished and closed events of SPORT $2
only_own() {  # FILE SPORT
	local f=$1 own='"src":"127.0.0.1:'$2'"'
	grep -q "\"event\":\"finished\",$own" "$f" && grep -q "\"event\":\"closed\",$own" "$f" &&
		! grep -q '"src":"127.0.0.1:4110[0-9]"' <(grep -v "$own" "$f") &&
		test "$(grep -c "$own" "$f")" -eq 2
}
ev=/tmp/datcp-kt-ev
$CTL events --json >$ev-g.$$ & gpid=$!; pids+=($gpid)
nsenter --net=/var/run/netns/$NS_A $CTL events --netns-ring --json >$ev-a.$$ & apid=$!; pids+=($apid)
nsenter --net=/var/run/netns/$NS_B $CTL events --netns-ring --json >$ev-b.$$ & bpid=$!; pids+=($bpid)
wait_ring $NS_A && wait_ring $NS_B
check "a reader of its namespace's ring registers it (namespaces $NS_A, $NS_B)" test -n "$(ring_of $NS_A)" -a -n "$(ring_of $NS_B)"
check "status counts the namespaces' rings" grep -q '"netns_event_rings":2,' <<<"$($CTL status --json)"
ns_flow $NS_A 41101 & fa=$!
ns_flow $NS_B 41102; wait $fa
sleep 0.5
kill $apid $bpid; wait $apid $bpid 2>/dev/null
check "namespace A's reader sees exactly A's finished and closed events ($(tr '\n' ' ' <$ev-a.$$))" only_own $ev-a.$$ 41101
check "namespace B's reader sees exactly B's finished and closed events ($(tr '\n' ' ' <$ev-b.$$))" only_own $ev-b.$$ 41102
check "the global reader sees neither namespace's events" bash -c "! grep -q '\"src\":\"127.0.0.1:4110[12]\"' $ev-g.$$"
check "a closed reader's ring is unregistered" test -z "$(ring_of $NS_A)" -a -z "$(ring_of $NS_B)"
# a restarted agent replaces its namespace's ring; the old one's close must not
# remove the new registration
nsenter --net=/var/run/netns/$NS_A $CTL events --netns-ring --json >$ev-a1.$$ & a1pid=$!; pids+=($a1pid)
wait_ring $NS_A; first=$(ring_of $NS_A)
nsenter --net=/var/run/netns/$NS_A $CTL events --netns-ring --json >$ev-a2.$$ & a2pid=$!; pids+=($a2pid)
wait_ring $NS_A "$first"; second=$(ring_of $NS_A)
kill $a1pid; wait $a1pid 2>/dev/null
check "a second reader in a namespace replaces the ring ($first -> $second), the first one's close keeps it" test -n "$first" -a -n "$second" -a "$first" != "$second" -a "$(ring_of $NS_A)" = "$second"
ns_flow $NS_A 41103
sleep 0.5
kill $a2pid; wait $a2pid 2>/dev/null
check "the replacing reader gets the namespace's events ($(tr '\n' ' ' <$ev-a2.$$))" only_own $ev-a2.$$ 41103
check "the replaced reader gets none of them" bash -c "! grep -q 41103 $ev-a1.$$"
check "the last reader's close unregisters the ring" test -z "$(ring_of $NS_A)"
# without a ring of its own, a namespace's events go to the global ring
ns_flow $NS_A 41104
sleep 0.5
kill $gpid; wait $gpid 2>/dev/null
check "the global reader sees the events of a namespace without a ring" only_own $ev-g.$$ 41104
# a namespace ring that nobody reads fills up: its events are dropped as on the
# global ring (the statistics of flows whose CLOSED was lost stay for a scan),
# not spilled into the global ring
nsenter --net=/var/run/netns/$NS_A $CTL events --netns-ring >/dev/null & spid=$!; pids+=($spid)
wait_ring $NS_A; kill -STOP $spid
$CTL events --json >$ev-g2.$$ & g2pid=$!; pids+=($g2pid)
sleep 0.3
out=$(in_ns $NS_A build/flow_churn 8000 --no-events --here 2>&1)  # 16000 events > 1 MB ring
sleep 0.3
kill $g2pid; wait $g2pid 2>/dev/null
left=$(grep -o '"left_stats":[0-9]*' <<<"$out" | cut -d: -f2)
check "a full namespace ring drops events, the flows' statistics stay ($out)" test "${left:-0}" -gt 0
check "nothing of a namespace with a ring spills into the global ring" bash -c "! grep -q ':5400\"' $ev-g2.$$"
kill -CONT $spid; kill $spid; wait $spid 2>/dev/null
ip netns del $NS_A; ip netns del $NS_B

# --- flow entries are per network namespace: containers on one kernel often
# use the same 4-tuple (10.x addresses, the same ports). Namespace X registers
# the 4-tuple; namespace Y, a hostile neighbour with the same 4-tuple at the
# same time, must neither have its connection steered by X's entry nor read,
# change or end X's entry (both used to share one entry) ---
nsx=datcp-kt-x-$$ nsy=datcp-kt-y-$$
ip netns add $nsx && ip netns add $nsy && nss+=($nsx $nsy)
for n in $nsx $nsy; do
	ip -n $n link set lo up && ip -n $n addr add 10.0.0.1/32 dev lo && ip -n $n addr add 10.0.0.2/32 dev lo
done
nsenter --net=/var/run/netns/$nsx $CTL events --netns-ring --json >$ev-x.$$ & xpid=$!; pids+=($xpid)
nsenter --net=/var/run/netns/$nsy $CTL events --netns-ring --json >$ev-y.$$ & ypid=$!; pids+=($ypid)
wait_ring $nsx && wait_ring $nsy
python3 - "$CTL" $nsx $nsy >$ev-nsk.$$ <<'PY'
import ctypes, json, os, socket, subprocess, sys, threading, time
ctl, nsx, nsy = sys.argv[1:4]
SRC, DST, SIZE = ("10.0.0.1", 43020), ("10.0.0.2", 5320), 4000000
KEY = ["--src", "10.0.0.1:43020", "--dst", "10.0.0.2:5320"]
libc = ctypes.CDLL(None, use_errno=True)
home = os.open("/proc/self/ns/net", os.O_RDONLY)
def setns(fd):
    if libc.setns(fd, 0x40000000):  # CLONE_NEWNET
        raise OSError(ctypes.get_errno(), "setns")
def connect(ns):  # a connection on SRC -> DST inside namespace ns (a socket keeps its namespace)
    fd = os.open("/var/run/netns/" + ns, os.O_RDONLY); setns(fd); os.close(fd)
    try:
        srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(DST); srv.listen(1)
        cli = socket.socket(); cli.settimeout(20)
        cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
        cli.bind(SRC); cli.connect(DST)
        acc, _ = srv.accept(); srv.close()
        return cli, acc
    finally:
        setns(home)
def transfer(c):  # SIZE bytes, all received (and so acknowledged)
    cli, acc = c; got = [0]
    def receive():
        while got[0] < SIZE:
            got[0] += len(acc.recv(1 << 20))
    t = threading.Thread(target=receive); t.start(); cli.sendall(b"x" * SIZE); t.join(20)
    return got[0] == SIZE
def ctl_in(ns, *args):
    return subprocess.run(["nsenter", "--net=/var/run/netns/" + ns, ctl, "flow", *args],
                          capture_output=True, text=True)
def get(ns):
    r = ctl_in(ns, "get", *KEY, "--json")
    return json.loads(r.stdout) if r.returncode == 0 else r.stderr.strip()
x, y = connect(nsx), connect(nsy)  # the same 4-tuple in both namespaces at once
facts = {"x_set": ctl_in(nsx, "set", *KEY, "--size", str(SIZE), "--deadline-ms", "10000").returncode}
facts["y_get"] = get(nsy)
facts["y_transfer"] = transfer(y)
time.sleep(0.3)  # an ACK of y's that found x's entry would have published statistics
facts["x_after_y_transfer"] = get(nsx)
facts["y_delete"] = ctl_in(nsy, "delete", *KEY).stderr.strip()
facts["x_after_y_delete"] = get(nsx)
ctl_in(nsy, "set", *KEY, "--size", "1000", "--mode", "reno", "--epoch", "7")
facts["x_after_y_set"] = get(nsx)
ctl_in(nsy, "delete", *KEY)
facts["x_transfer"] = transfer(x)
def finished(v):
    return isinstance(v, dict) and v.get("stats", {}).get("finished")
end = time.time() + 10
while not finished(get(nsx)) and time.time() < end:
    time.sleep(0.05)
facts["x_finished"] = get(nsx)
y[0].close(); y[1].close(); time.sleep(0.2)
facts["x_after_y_close"] = get(nsx)
x[0].close(); x[1].close(); time.sleep(0.2)
facts["x_after_x_close"] = get(nsx)
print(json.dumps(facts))
PY
sleep 0.5
kill $xpid $ypid; wait $xpid $ypid 2>/dev/null
facts=$(cat $ev-nsk.$$); rm -f $ev-nsk.$$
fact() { python3 -c 'import json, sys; f = json.loads(sys.argv[1]); print(eval(sys.argv[2], {}, f))' "$facts" "$1" 2>/dev/null; }
check "namespace X registers its 4-tuple and both namespaces send on it ($facts)" test "$(fact 'x_set == 0 and y_transfer and x_transfer')" = True
check "namespace Y does not see X's entry" test "$(fact '"no such flow" in str(y_get)')" = True
check "Y's connection does not pick up X's entry (X's has no statistics after Y sent 4000000 bytes)" test "$(fact 'x_after_y_transfer.get("size_bytes") == 4000000 and "stats" not in x_after_y_transfer')" = True
check "namespace Y cannot delete X's entry" test "$(fact '"no such flow" in y_delete and x_after_y_delete.get("epoch") == 1')" = True
check "Y's connection sent no event for the 4-tuple ($(tr '\n' ' ' <$ev-y.$$))" bash -c "! grep -q '\"src\":\"10.0.0.1:43020\"' $ev-y.$$"
check "Y registering the same 4-tuple leaves X's entry as it was" test "$(fact 'x_after_y_set.get("epoch") == 1 and x_after_y_set.get("mode") == "datcp" and x_after_y_set.get("size_bytes") == 4000000')" = True
check "X's connection picks up X's entry and finishes its flow" test "$(fact 'x_finished["stats"]["finished"] and x_finished["stats"]["bytes_acked"] >= 4000000')" = True
check "closing Y's connection leaves X's entry" test "$(fact 'isinstance(x_after_y_close, dict) and x_after_y_close["epoch"] == 1')" = True
check "closing X's connection ends X's entry" test "$(fact '"no such flow" in str(x_after_x_close)')" = True
check "X's ring has X's finished and closed events ($(tr '\n' ' ' <$ev-x.$$))" bash -c "grep -q '\"event\":\"finished\",\"src\":\"10.0.0.1:43020\",\"dst\":\"10.0.0.2:5320\",\"epoch\":1,.*\"met\":true' $ev-x.$$ && grep -q '\"event\":\"closed\",\"src\":\"10.0.0.1:43020\",\"dst\":\"10.0.0.2:5320\",\"epoch\":1,.*\"finished\":true' $ev-x.$$"
rm -f $ev-x.$$ $ev-y.$$
ip netns del $nsx; ip netns del $nsy

# --- DSCP from the precedence class, set by the congestion control itself: a
# flow that lags a deadline it can still make rises to the high class (its
# urgency grows); an overdue flow gives up (U_min, PD2TCP's early inversion)
# and drops to the low class instead of taking share from others ---
$CTL line-rate set --rate-mbit 10000000 >/dev/null  # 10 Tbit/s: loopback flows stay feasible
flow_probe() {  # PORT SIZE DEADLINE_MS (0: none) CHUNKS CHUNK_BYTES PAUSE_S [FLOW SET OPTION...]
# a datcp loopback flow, registered, sends CHUNKS chunks PAUSE_S apart; prints
# "DSCP_BEFORE DSCP_AFTER WINDOWS CE_ECHOES ALPHA" (the flow's kernel statistics at the end)
python3 - "$CTL" "$@" <<'PY'
import json, socket, subprocess, sys, threading, time
ctl, port, size, deadline_ms = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
chunks, chunk, pause = int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
extra = (["--deadline-ms", deadline_ms] if deadline_ms != "0" else []) + sys.argv[8:]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port)); srv.listen(1)
srv.settimeout(20)
def drain():
    c, _ = srv.accept()
    while c.recv(1 << 20):
        pass
t = threading.Thread(target=drain, daemon=True); t.start()
cli = socket.socket(); cli.settimeout(20)
cli.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
cli.bind(("127.0.0.1", port + 38000)); cli.connect(("127.0.0.1", port))
before = cli.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) >> 2
key = ["--src", f"127.0.0.1:{port + 38000}", "--dst", f"127.0.0.1:{port}"]
subprocess.run([ctl, "flow", "set", *key, "--size", size, *extra], check=True)
for _ in range(chunks):
    cli.sendall(b"x" * chunk)
    time.sleep(pause)
after = cli.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) >> 2
st = json.loads(subprocess.run([ctl, "flow", "get", *key, "--json"], check=True,
                               capture_output=True, text=True).stdout).get("stats", {})
cli.close(); t.join(20)
print(before, after, st.get("windows", 0), st.get("ece_count", 0), f"{st.get('alpha', -1):.3f}")
PY
}
dscp_after() {  # PORT SIZE DEADLINE_MS (0: none) [FLOW SET OPTION...] -> "before after"
	flow_probe "$1" "$2" "$3" 50 1048576 0 "${@:4}" | cut -d" " -f1,2
}
# 10 TB in 100 s needs 100 GB/s: more than loopback gives, less than the line rate
read -r before after <<<"$(dscp_after 5303 10000000000000 100000)"
check "a flow lagging a deadline it can still make gets the high-precedence DSCP AF41 (DSCP $before -> $after)" test "$before" = 0 -a "$after" = 34
read -r before after <<<"$(dscp_after 5305 1000000000 1)"
check "a flow whose deadline passed gives up: low-precedence DSCP CS1 (DSCP $before -> $after)" test "$before" = 0 -a "$after" = 8
read -r before after <<<"$(dscp_after 5311 1000000000 0)"
check "under the default profile (yield) a deadline-agnostic datcp flow runs at U_min, P 0.5: DSCP CS1 (DSCP $before -> $after)" test "$before" = 0 -a "$after" = 8
# dctcp mode (issue 16's prio baseline): importance alone sets the class, P = phi I + (1 - phi)
read -r before after <<<"$(dscp_after 5307 1000000000 0 --mode dctcp --importance 10 --phi 1)"
check "a dctcp flow of importance 10, phi 1 gets the high-precedence DSCP AF41 (DSCP $before -> $after)" test "$before" = 0 -a "$after" = 34
read -r before after <<<"$(dscp_after 5309 1000000000 0 --mode dctcp --importance 0 --phi 1)"
check "a dctcp flow of importance 0, phi 1 gets the low-precedence DSCP CS1 (DSCP $before -> $after)" test "$before" = 0 -a "$after" = 8

# --- PD2TCP takes the line rate of the socket's network namespace: 100 GB in
# 10 s (80 Gbit/s) is feasible at 10 Tbit/s (priority R_D / R_A, here the top
# 2) but not at 1 Gbit/s (early inversion to 0.5, pd2tcp.txt 2.3.4 (2)) ---
pd2tcp_p() {  # PORT -> precedence after 20 MB
python3 - "$CTL" "$1" <<'PY'
import json, socket, subprocess, sys, threading
ctl, port = sys.argv[1], int(sys.argv[2])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port)); srv.listen(1)
def drain():
    c, _ = srv.accept()
    while c.recv(1 << 20):
        pass
threading.Thread(target=drain, daemon=True).start()
cli = socket.socket(); cli.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
cli.bind(("127.0.0.1", port + 38000)); cli.connect(("127.0.0.1", port))
key = ["--src", f"127.0.0.1:{port + 38000}", "--dst", f"127.0.0.1:{port}"]
subprocess.run([ctl, "flow", "set", *key, "--size", "100000000000", "--deadline-ms", "10000",
                "--mode", "pd2tcp"], check=True)
cli.sendall(b"x" * 20000000)
st = json.loads(subprocess.run([ctl, "flow", "get", *key, "--json"], capture_output=True, text=True).stdout)
print(f'{st["stats"]["precedence"]:.3f}')
cli.close()
PY
}
p_fast=$(pd2tcp_p 5308)
$CTL line-rate set --rate-mbit 1000 >/dev/null
p_slow=$(pd2tcp_p 5309)
$CTL line-rate set --rate-mbit 10000000 >/dev/null
check "PD2TCP's line rate is the namespace's: priority $p_fast at 10 Tbit/s, $p_slow (inverted) at 1 Gbit/s" test "$p_fast" = 2.000 -a "$p_slow" = 0.500

# --- quench and resume: a flow that cannot get the share it needs (loopback
# cannot give 100 GB/s) is quenched; after the agent's resume order it stays
# armed and is quenched again; then, with no resume order, the kernel lifts
# the quench itself once the destination is quiet (no ECN echo for 200 ms;
# loopback never marks) and tells the agent; quenching stays armed ---
quench_cycle() {  # [NS]: in namespace NS, reading its own ring
local run=() ring=()
[ -n "${1:-}" ] && run=(nsenter --net=/var/run/netns/$1) ring=(--netns-ring)
"${run[@]}" python3 - "$CTL" "${ring[@]}" <<'PY'
import json, queue, socket, subprocess, sys, threading, time
ctl, src, dst = sys.argv[1], "127.0.0.1:43006", "127.0.0.1:5306"
evs = subprocess.Popen([ctl, "events", "--json", *sys.argv[2:]], stdout=subprocess.PIPE, text=True)
q = queue.Queue()
def read_events():
    for line in evs.stdout:
        e = json.loads(line)
        if e.get("src") == src:
            q.put(e)
threading.Thread(target=read_events, daemon=True).start()
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 5306)); srv.listen(1)
stop = threading.Event()
def drain():
    c, _ = srv.accept()
    while c.recv(1 << 20):
        pass
threading.Thread(target=drain, daemon=True).start()
cli = socket.socket(); cli.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
cli.bind(("127.0.0.1", 43006)); cli.connect(("127.0.0.1", 5306))
time.sleep(0.3)  # the events reader is attached
subprocess.run([ctl, "flow", "set", "--src", src, "--dst", dst, "--size", "10000000000000",
                "--deadline-ms", "100000", "--quench", "suspend"], check=True)
def send():
    while not stop.is_set():
        cli.sendall(b"x" * 65536)
threading.Thread(target=send, daemon=True).start()
def wait_for(kind, t=20):
    end = time.time() + t
    while time.time() < end:
        try:
            e = q.get(timeout=0.5)
        except queue.Empty:
            continue
        if e["event"] == kind:
            return e
    return None
ok = True
e1 = wait_for("quench")
st = json.loads(subprocess.run([ctl, "flow", "get", "--src", src, "--dst", dst, "--json"],
                               capture_output=True, text=True).stdout or "{}").get("stats", {})
print("quench 1:", e1, "stats:", {k: st.get(k) for k in ("quench", "quench_ms", "cwnd")})
ok &= e1 is not None and st.get("quench") == "suspended" and st.get("quench_ms", 0) > 0
subprocess.run([ctl, "flow", "resume", "--src", src, "--dst", dst], check=True)
e2 = wait_for("quench")
print("quench 2 after the agent's resume:", e2)
r = wait_for("resume")
print("kernel resume:", r)
e3 = wait_for("quench")
print("quench 3 after the kernel's resume:", e3)
ok &= e2 is not None and r is not None and r.get("reason") == "quiet" and e3 is not None
stop.set(); cli.close(); evs.terminate()
sys.exit(0 if ok else 1)
PY
}
quench_cycle
check "quench, agent resume, quench again, kernel resume when quiet, quench again" test $? -eq 0
# the same in a namespace with its own ring: QUENCH and the kernel's RESUME
# (sent from the quench timer, which keeps the socket's namespace) reach it
ip netns add $NS_Q && ip -n $NS_Q link set lo up && $CTL line-rate set --netns $NS_Q --rate-mbit 10000000 >/dev/null
quench_cycle $NS_Q
check "in a namespace with its own ring, its reader gets the quench and resume events" test $? -eq 0
$CTL line-rate del --netns $NS_Q >/dev/null; ip netns del $NS_Q

# --- loaders racing on one kernel (the Docker cluster's agents start together): every one
# succeeds and the result is one whole datcp, not pins torn down by another's clean-up ---
$CTL unload --force >/dev/null 2>&1
fails=0
for round in 1 2 3; do
	$CTL unload --force >/dev/null 2>&1
	lpids=()
	for i in 1 2 3 4 5 6; do
		if [ $i = 1 ]; then $CTL load --no-sockops >/tmp/datcp-kt-load.$$.$i 2>&1 & else
			$CTL load --port 5201 >/tmp/datcp-kt-load.$$.$i 2>&1 & fi
		lpids+=($!)
	done
	for p in "${lpids[@]}"; do wait "$p" || fails=$((fails + 1)); done
	st=$($CTL status --json)
	grep -q '"cc_registered":true,"pinned":true,"sockops_attached":true' <<<"$st" || fails=$((fails + 1))
done
check "six concurrent loads, three times: all succeed, datcp whole ($fails failures; $(cat /tmp/datcp-kt-load.$$.* | grep -v "loaded\|reused" | head -c 300))" test $fails -eq 0
rm -f /tmp/datcp-kt-load.$$.*

# --- a loader that wants sockops attaches it when an earlier loader did without
# (the Docker ToR loads with --no-sockops, then the hosts' agents load with it) ---
$CTL unload --force >/dev/null 2>&1
$CTL load --no-sockops >/dev/null 2>&1
check "load --no-sockops pins no sockops link" test ! -e $PIN/sockops_link
out=$($CTL load --port 5201 2>&1)
check "a later load reuses datcp and attaches sockops ($out)" test -e $PIN/sockops_link -a -n "$(grep -o reused <<<"$out")"
check "status says sockops is attached" grep -q '"sockops_attached":true' <<<"$($CTL status --json)"

# --- sockops: a socket to a configured port is put on datcp without asking ---
python3 - <<'PY'
import socket, subprocess, sys, time
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 5201)); srv.listen(1)
cli = socket.create_connection(("127.0.0.1", 5201))
conn, _ = srv.accept()
cc = cli.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
acc = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
print(f"client cc={cc} accepted cc={acc}")
sys.exit(0 if cc == "datcp" and acc == "datcp" else 1)
PY
check "sockops puts both ends of a port-5201 connection on datcp" test $? -eq 0
python3 - <<'PY'
import socket, sys
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
cli = socket.create_connection(srv.getsockname())
cc = cli.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
sys.exit(0 if cc != "datcp" else 1)
PY
check "other ports keep the default congestion control" test $? -eq 0

# --- a route's congctl (applied by the kernel after sockops' CONNECT_CB) neither keeps a
# shuffle connection off datcp nor off ECN: two namespaces, a veth, routes with congctl cubic ---
ns1=datcp-kt-r1-$$ ns2=datcp-kt-r2-$$
ip netns add $ns1 && ip netns add $ns2 && nss+=($ns1 $ns2)
ip link add kt$$a netns $ns1 type veth peer name kt$$b netns $ns2
ip -n $ns1 addr add 10.199.0.1/24 dev kt$$a && ip -n $ns1 link set kt$$a up
ip -n $ns2 addr add 10.199.0.2/24 dev kt$$b && ip -n $ns2 link set kt$$b up
ip -n $ns1 route replace 10.199.0.0/24 dev kt$$a congctl cubic
ip -n $ns2 route replace 10.199.0.0/24 dev kt$$b congctl cubic
ip netns exec $ns2 python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.199.0.2", 5201)); s.listen(1); c, _ = s.accept(); time.sleep(2)' & pids+=($!)
sleep 0.5
out=$(ip netns exec $ns1 python3 -c '
import socket, time
c = socket.create_connection(("10.199.0.2", 5201)); time.sleep(0.2)
cc = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
ecn = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[5] & 8  # tcpi_options & TCPI_OPT_ECN
print(cc, "ecn" if ecn else "no-ecn")' 2>&1)
check "under a route's congctl cubic the connecting side runs datcp with ECN ($out)" test "$out" = "datcp ecn"

# --- a quench whose event is lost (ring buffer full, nobody reading) neither
# hides nor pins the flow: its statistics show the quench and when it began,
# and the kernel lifts it by itself ---
build/flow_churn 8000 --no-events >/dev/null 2>&1  # 16000 unread events fill the 1 MB ring
python3 - "$CTL" <<'PY'
import json, socket, subprocess, sys, threading, time
ctl, src, dst = sys.argv[1], "127.0.0.1:43007", "127.0.0.1:5307"
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 5307)); srv.listen(1)
stop = threading.Event()
def drain():
    c, _ = srv.accept()
    while c.recv(1 << 20):
        pass
threading.Thread(target=drain, daemon=True).start()
cli = socket.socket(); cli.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
cli.bind(("127.0.0.1", 43007)); cli.connect(("127.0.0.1", 5307))
subprocess.run([ctl, "flow", "set", "--src", src, "--dst", dst, "--size", "10000000000000",
                "--deadline-ms", "100000", "--quench", "suspend"], check=True)
def send():
    while not stop.is_set():
        cli.sendall(b"x" * 65536)
threading.Thread(target=send, daemon=True).start()
seen_quench = seen_resumed = None
end = time.time() + 20
while time.time() < end and not seen_resumed:
    out = subprocess.run([ctl, "flow", "list", "--json"], capture_output=True, text=True).stdout
    st = next((f.get("stats", {}) for f in json.loads(out or "[]") if f["src"] == src), {})
    if st.get("quench") == "suspended" and st.get("quench_ms", 0) > 0 and not seen_quench:
        seen_quench = st
    elif seen_quench and st.get("quench") == "none" and st.get("cwnd", 0) > 2:
        seen_resumed = st
    time.sleep(0.01)
print("found by scanning:", seen_quench and {k: seen_quench[k] for k in ("quench", "quench_ms", "cwnd")},
      "then:", seen_resumed and {k: seen_resumed[k] for k in ("quench", "cwnd")})
stop.set(); cli.close()
sys.exit(0 if seen_quench and seen_resumed else 1)
PY
check "with the ring full, a scan finds the quenched flow (quench, quench_ms) and the kernel lifts it" test $? -eq 0

$CTL line-rate del >/dev/null

# --- libdatcp keeps the flow maps open per process: after another process
# unloads and loads again, a long-lived user (the agent) writes into the new
# maps, not the orphaned old ones (at once for lookups, which re-check the pin
# on ENOENT; within 50 ms for writes) ---
python3 - "$CTL" build/libdatcp.so <<'PY'
import ctypes, struct, subprocess, sys, time
ctl, lib = sys.argv[1], ctypes.CDLL(sys.argv[2])
lib.datcp_last_error.restype = ctypes.c_char_p
lib.datcp_now_ns.restype = ctypes.c_uint64
def key(src, dst):
    k = ctypes.create_string_buffer(48)  # struct datcp_flow_key
    assert lib.datcp_flow_key_parse(k, src.encode(), dst.encode()) == 0
    return k
def meta(size, epoch):  # struct datcp_flow_meta, 40 bytes; mode datcp, size known
    return ctypes.create_string_buffer(struct.pack("<QQQIIIBBBB", size, 0, 0, epoch, 1024, 0,
                                                   1, 0, 1, 0), 40)
def ctl_has(src, dst):
    return subprocess.run([ctl, "flow", "get", "--src", src, "--dst", dst],
                          capture_output=True).returncode == 0
a, b = ("10.9.8.1:1000", "10.9.8.2:2000"), ("10.9.8.3:1000", "10.9.8.4:2000")
ok = lib.datcp_flow_set(key(*a), meta(1000, 1)) == 0 and ctl_has(*a)   # fds cached now
subprocess.run([ctl, "flow", "delete", "--src", a[0], "--dst", a[1]], check=True)
subprocess.run([ctl, "unload"], check=True, capture_output=True)
subprocess.run([ctl, "load", "--port", "5201"], check=True, capture_output=True)
subprocess.run([ctl, "flow", "set", "--src", b[0], "--dst", b[1], "--size", "1000"], check=True)
m = ctypes.create_string_buffer(40); hm = ctypes.c_int(); hs = ctypes.c_int()
got = lib.datcp_flow_get(key(*b), m, ctypes.byref(hm), None, ctypes.byref(hs))
print("lookup right after the reload:", got, hm.value, lib.datcp_last_error())
ok &= got == 0 and hm.value == 1
time.sleep(0.06)
ok &= lib.datcp_flow_set(key(*a), meta(2000, 1)) == 0 and ctl_has(*a)
ok &= lib.datcp_flow_resume(key(*a)) == 0
ok &= lib.datcp_flow_delete(key(*a)) == 0 and not ctl_has(*a)
ok &= lib.datcp_flow_delete(key(*b)) == 0 and not ctl_has(*b)
ok &= lib.datcp_flow_delete(key(*b)) == -2  # missing entry: -ENOENT, nothing else
sys.exit(0 if ok else 1)
PY
check "cached map fds follow an unload and reload by another process" test $? -eq 0

# --- pins of another version or with other parameters: refused while in use,
# replaced when nothing uses them ---
rm -f $PIN/params   # what a loader of ABI version 1 leaves: no parameter pin
$CTL flow set --src 10.9.9.5:1000 --dst 10.9.9.6:2000 --size 1000
out=$($CTL load 2>&1); rc=$?
check "load refuses pins of another version while a flow uses them" test $rc -eq 1 -a -n "$(grep -o "another version of libdatcp, and 1 registered flow" <<<"$out")"
$CTL flow delete --src 10.9.9.5:1000 --dst 10.9.9.6:2000
out=$($CTL load --port 5201 2>&1)
check "load replaces unused pins of another version ($out)" test "$out" = "datcp loaded (pinned under $PIN)" -a -e $PIN/params
$CTL flow set --src 10.9.9.5:1000 --dst 10.9.9.6:2000 --size 1000
out=$($CTL load --profile paper 2>&1); rc=$?
check "load with other parameters refuses while a flow is registered" test $rc -eq 1 -a -n "$(grep -o "runs with other parameters than requested" <<<"$out")"
$CTL flow delete --src 10.9.9.5:1000 --dst 10.9.9.6:2000
$CTL load --profile paper --param theta=5 --port 5201 >/dev/null
check "load --profile paper --param theta=5 replaces the unused datcp" grep -q '"params":"g=0.05 alpha=0.1 u_max=10 theta=5 quench_p_max=10 quench_draws=1 .*ewma=paper guard_shift=0 slow_start_raise_only=0 hopeful_below_u_max=0' <<<"$($CTL status --json)"
out=$($CTL load 2>&1)
check "a load without parameters reuses whatever is loaded" grep -q "reused" <<<"$out"
$CTL load --param theta=5 --port 5201 >/dev/null
check "load --param without --profile sets it on the default profile, yield" grep -q '"params":"g=0.1 alpha=0.1 u_max=10 theta=5 .*guard_shift=4 .*agnostic_u_min=1 dctcp_g=0.063"' <<<"$($CTL status --json)"
$CTL load --profile tuned --port 5201 >/dev/null
check "load --profile tuned: yield without agnostic_u_min" grep -q '"params":"g=0.1 alpha=0.1 u_max=10 theta=3 .*guard_shift=4 .*agnostic_u_min=0 dctcp_g=0.063"' <<<"$($CTL status --json)"
read -r before after <<<"$(dscp_after 5313 1000000000 0)"
check "under tuned a deadline-agnostic datcp flow stays standard TCP, P 1: DSCP 0 (DSCP $before -> $after)" test "$before" = 0 -a "$after" = 0

# --- DCTCP's g is a load parameter the kernel reads (DCUDP V-A runs g = 0.3): a dctcp
# flow on loopback sees no CE, so after w windows alpha = 1024 (1 - g)^w in Q10, step by
# step as dctcp_alpha_update rounds; the kernel's alpha must be g = 0.3's, not 1/16's ---
out=$($CTL load --param dctcp_g=0 2>&1); rc=$?
check "dctcp_g=0 is a usage error naming the parameter and the accepted range" test $rc -eq 2 -a -n "$(grep -o "parameter dctcp_g: '0' rounds to 0; accepted: (0, 1]" <<<"$out")"
$CTL load --param dctcp_g=0.3 --port 5201 >/dev/null
check "load --param dctcp_g=0.3: status shows it" grep -q '"params":"g=0.1 .* dctcp_g=0.3"' <<<"$($CTL status --json)"
# a few windows: alpha of g 0.3 and of g 1/16 still apart
read -r _ _ w ece alpha <<<"$(flow_probe 5315 1000000000 0 3 65536 0.05 --mode dctcp)"
# dctcp_alpha_update with F = 0, w times, as datcpctl prints alpha
read -r a03 a16 <<<"$(python3 -c '
import sys
def alpha(g_q, w):
    a = 1024
    for _ in range(w):
        a -= max(a * g_q // 1024, 1 if a else 0)
    return f"{a / 1024:.3f}"
print(alpha(307, int(sys.argv[1])), alpha(64, int(sys.argv[1])))' "${w:-0}")"
check "a dctcp flow's alpha follows the loaded g = 0.3 (windows $w, CE echoes $ece, alpha $alpha; g 0.3: $a03, g 1/16: $a16)" test "${w:-0}" -ge 1 -a "$ece" = 0 -a "$alpha" = "$a03" -a "$a03" != "$a16"

# --- holders: every load is recorded with what it asked for; a loader that
# leaves (released or killed) takes away the ports and sockops only it held ---
# holder NAME PORT: a process holding datcp (datcp_load_held) with sockops on
# PORT; on "release" from $fifo_h.in it releases, then waits for EOF
fifo_h=/tmp/datcp-kt-hold.$$
read -r -d '' holder_py <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1]); lib.datcp_last_error.restype = ctypes.c_char_p
class Opts(ctypes.Structure):  # struct datcp_load_opts
    _fields_ = [("line_rate_bps", ctypes.c_uint64), ("cgroup_path", ctypes.c_char_p),
                ("no_sockops", ctypes.c_int), ("ports", ctypes.POINTER(ctypes.c_uint16)),
                ("n_ports", ctypes.c_size_t), ("params", ctypes.c_void_p),
                ("holder", ctypes.c_char_p)]
ports = (ctypes.c_uint16 * 1)(int(sys.argv[3]))
o = Opts(holder=sys.argv[2].encode(), ports=ports, n_ports=1)
reused, hold = ctypes.c_int(), ctypes.c_uint32()
if lib.datcp_load_held(ctypes.byref(o), ctypes.byref(reused), ctypes.byref(hold)):
    print("holder:", lib.datcp_last_error().decode(), flush=True); sys.exit(1)
print("holding", hold.value, flush=True)
for line in open(sys.stdin.fileno()):
    if line.strip() == "release":
        print("released", lib.datcp_release(hold.value), flush=True)
PY
holder() { python3 -c "$holder_py" build/libdatcp.so "$1" "$2" <$fifo_h.in >$fifo_h.out 2>&1 & }
mkfifo $fifo_h.in
exec 7<>$fifo_h.in
holder kt-killed 5302
hpid=$!
pids+=("$hpid")
for _ in $(seq 100); do grep -q holding $fifo_h.out 2>/dev/null && break; sleep 0.1; done
st=$($CTL status --json)
check "status lists datcpctl's pinned hold" grep -q '"name":"datcpctl","pid":[0-9]*,"kind":"pinned","live":true,"sockops":true,"ports":\[5201\]' <<<"$st"
check "status lists a running holder and its port" grep -q '"name":"kt-killed","pid":'"$hpid"',"kind":"process","live":true,"sockops":true,"ports":\[5302\]' <<<"$st"
check "the holder's port is on datcp" grep -qE '"ports":\[(5201,5302|5302,5201)\],"params"' <<<"$st"
out=$($CTL unload 2>&1); rc=$?
check "unload refuses while another process holds datcp, naming it" test $rc -eq 1 -a -n "$(grep -o "kt-killed, pid $hpid" <<<"$out")"
kill -9 "$hpid"; wait "$hpid" 2>/dev/null
check "a killed holder shows as exited" grep -q "kt-killed (pid $hpid, exited; 'datcpctl prune' releases it): sockops yes, ports 5302" <<<"$($CTL status)"
$CTL prune
st=$($CTL status --json)
check "prune releases the killed holder's port" bash -c '! grep -q "5302" <<<"$1"' _ "$st"
check "prune keeps what datcpctl holds (sockops, port 5201)" grep -q '"sockops_attached":true,.*"ports":\[5201\],"params"' <<<"$st"
: >$fifo_h.out
holder kt-clean 5303
hpid=$!
pids+=("$hpid")
for _ in $(seq 100); do grep -q holding $fifo_h.out 2>/dev/null && break; sleep 0.1; done
echo release >&7
for _ in $(seq 100); do grep -q released $fifo_h.out 2>/dev/null && break; sleep 0.1; done
check "a clean release returns 0" grep -q "released 0" $fifo_h.out
st=$($CTL status --json)
check "a released hold's port leaves datcp, datcpctl's stays" grep -q '"ports":\[5201\],"params"' <<<"$st"
check "a released hold is no longer listed" bash -c '! grep -q kt-clean <<<"$1"' _ "$st"
exec 7>&-
kill "$hpid" 2>/dev/null; wait "$hpid" 2>/dev/null
rm -f $fifo_h.in $fifo_h.out

# --- PFDCT's ideal threshold from the port's rate and RTT (Eq. 15) ---
nsp=datcp-kt-pfdct-$$
ip netns add $nsp && nss+=($nsp)
ip -n $nsp link add v0 type veth peer name v1 && ip -n $nsp link set v0 up && ip -n $nsp link set v1 up
out=$($CTL switch configure --netns $nsp --dev v0 --rate-mbit 100 --buffer-bytes 100000 --mark pfdct --rtt-us 1000 --preset pfdct 2>&1)
check "pfdct with --rtt-us configures K_i from Eq. 15 (100 Mbit/s, 1 ms: 1769 B)" grep -q "K_i = 1769 bytes" <<<"$out"
out=$($CTL switch counters --netns $nsp --dev v0 --json)
check "the port's counters show K_i and K_t starting at it" grep -q '"mark":"pfdct","k_bytes":1769,"pfdct_k_t":1769' <<<"$out"
out=$($CTL switch configure --netns $nsp --dev v0 --rate-mbit 100 --buffer-bytes 100000 --mark pfdct --rtt-us 100 2>&1); rc=$?
check "a K_i of 0 (C*RTT <= 2 packets) is refused, pointing at --k-bytes" test $rc -eq 2 -a -n "$(grep -o "give --k-bytes" <<<"$out")"
out=$($CTL switch configure --netns $nsp --dev v0 --rate-mbit 100 --buffer-bytes 100000 --mark step --rtt-us 1000 2>&1); rc=$?
check "--rtt-us without --mark pfdct is refused" test $rc -eq 2 -a -n "$(grep -o "needs --mark pfdct" <<<"$out")"
$CTL switch reset --netns $nsp --dev v0 >/dev/null 2>&1
ip netns del $nsp

# --- PFDCT: the pfdct congestion control and its senders' egress program ---
# Sender namespace S sends to R over a veth whose S end is both a PFDCT sender's
# interface (egress program) and an emulated PFDCT switch port (its HTB root runs
# after clsact egress, so the port sees the packets as the program left them).
NS_PS=datcp-kt-ps-$$ NS_PR=datcp-kt-pr-$$
ip netns add $NS_PS && nss+=($NS_PS)
ip netns add $NS_PR && nss+=($NS_PR)
ip link add v0 netns $NS_PS type veth peer name v1 netns $NS_PR
ip -n $NS_PS addr add 10.77.0.1/24 dev v0 && ip -n $NS_PS link set v0 up
ip -n $NS_PR addr add 10.77.0.2/24 dev v1 && ip -n $NS_PR link set v1 up
for n in $NS_PS $NS_PR; do
	ip netns exec $n sh -c 'ethtool -K v0 tso off gso off gro off; ethtool -K v1 tso off gso off gro off' >/dev/null 2>&1
done
out=$($CTL pfdct load --long-bytes 0 2>&1); rc=$?
check "pfdct load refuses --long-bytes 0, naming the option" test $rc -eq 2 -a -n "$(grep -o "long-bytes must be" <<<"$out")"
out=$($CTL pfdct attach --netns $NS_PS --dev v0 2>&1); rc=$?
check "attaching the egress program before load says to load pfdct" test $rc -eq 1 -a -n "$(grep -o "datcpctl pfdct load" <<<"$out")"
out=$($CTL pfdct load --long-bytes 100000 2>&1)
check "pfdct load registers the congestion control ($out)" grep -qw pfdct /proc/sys/net/ipv4/tcp_available_congestion_control
out=$($CTL pfdct load --long-bytes 200000 2>&1); rc=$?
check "loading again with other options is refused" test $rc -eq 1 -a -n "$(grep -o "unload it first" <<<"$out")"
$CTL pfdct attach --netns $NS_PS --dev v0
check "the egress program attaches to the sender's interface" test $? -eq 0
# one transfer of $1 bytes from S to R on pfdct; prints the bytes R received
pfdct_transfer() {
	ip netns exec $NS_PR timeout 60 python3 -c '
import socket, sys
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"pfdct")
ls.bind(("10.77.0.2", 5999)); ls.listen(1); print("ready", flush=True)
c, _ = ls.accept(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b: break
    n += len(b)
print(n, flush=True)' >/tmp/datcp-kt-pfdct.$$ &
	local srv=$!
	for _ in $(seq 50); do grep -q ready /tmp/datcp-kt-pfdct.$$ && break; sleep 0.1; done
	ip netns exec $NS_PS timeout 60 python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"pfdct")
s.bind(("10.77.0.1", int(sys.argv[2]))); s.connect(("10.77.0.2", 5999))
s.sendall(bytes(int(sys.argv[1]))); s.shutdown(socket.SHUT_WR); s.recv(1); s.close()' "$1" "$2"
	wait $srv
	tail -1 /tmp/datcp-kt-pfdct.$$
}
pfdct_port() {  # BUFFER_BYTES: a PFDCT switch port at 100 Mbit/s on v0, K_i 3000 B
	$CTL switch configure --netns $NS_PS --dev v0 --rate-mbit 100 --buffer-bytes "$1" --mark pfdct --k-bytes 3000 --preset pfdct >/dev/null
}
band() {  # JSON BAND FIELD
	python3 -c 'import json, sys; print(json.loads(sys.argv[1])["bands"][int(sys.argv[2])][sys.argv[3]])' "$@" 2>/dev/null
}
# a 10-packet buffer drops the first slow-start burst: the flow retransmits; it
# sends less than --long-bytes, so it stays short
pfdct_port 15000
got=$(pfdct_transfer 90000 41501)
check "a pfdct flow through a 10-packet port arrives whole ($got of 90000 bytes)" test "$got" = 90000
sw=$($CTL switch counters --netns $NS_PS --dev v0 --json)
st=$($CTL pfdct stats --json)
tx_short=$(python3 -c 'import json, sys; t = json.loads(sys.argv[1])["tx"]["short"]; print(t["packets"], t["retransmits"], t["ect_cleared"])' "$st")
read -r sp sr sc <<<"$tx_short"
check "the port dropped packets ($(band "$sw" 2 drops) in the long band, $(band "$sw" 1 drops) in the short band)" test "$(( $(band "$sw" 1 drops) + $(band "$sw" 2 drops) ))" -gt 0
b0=$(( $(band "$sw" 0 packets) + $(band "$sw" 0 drops) ))
check "its retransmissions left with DSCP EF ($sr of $sp short-flow segments) and all reached band 0 ($b0 packets, drops included)" test "${sr:-0}" -gt 0 -a "$b0" -eq "${sr:-0}"
check "every short-flow segment left Not-ECT ($sc of $sp)" test "${sc:-0}" -eq "${sp:-1}"
check "a flow of less than 100 KB stays short ($(grep -o '"src":"10.77.0.1:41501"[^}]*' <<<"$st"))" grep -q '"src":"10.77.0.1:41501","dst":"10.77.0.2:5999","class":"short"' <<<"$st"
check "the short band is never marked" test "$(band "$sw" 1 marks)" = 0
$CTL switch reset --netns $NS_PS --dev v0 >/dev/null
# a deep buffer: the window passes 20, the flow passes 100 KB and turns long
pfdct_port 200000
got=$(pfdct_transfer 3000000 41502)
check "a 3 MB pfdct flow arrives whole ($got bytes)" test "$got" = 3000000
sw=$($CTL switch counters --netns $NS_PS --dev v0 --json)
st=$($CTL pfdct stats --json)
fl=$(grep -o '"src":"10.77.0.1:41502"[^}]*' <<<"$st")
check "it is classified long ($fl)" grep -q '"class":"long"' <<<"$fl"
check "its long-flow segments are marked in the long band ($(band "$sw" 2 marks) marks of $(band "$sw" 2 packets) packets)" test "$(band "$sw" 2 marks)" -gt 0
check "it saw ECN echoes and cut its window below its peak (Eq. 3)" python3 -c 'import json, sys; f = json.loads("{" + sys.argv[1] + "}"); sys.exit(not (f["ece_bytes"] > 0 and f["windows"] > 0 and f["max_cwnd"] >= 20 and f["cwnd"] < f["max_cwnd"]))' "$fl"
kt=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["pfdct_k_t"])' "$sw" 2>/dev/null)
check "the port's K_t moved from K_i (3000 B to ${kt:-none})" test -n "$kt" -a "$kt" != 3000
$CTL switch reset --netns $NS_PS --dev v0 >/dev/null
$CTL pfdct detach --netns $NS_PS --dev v0
check "the egress program detaches" test $? -eq 0
$CTL pfdct unload
check "pfdct unload unregisters it and removes its pins" bash -c '! grep -qw pfdct /proc/sys/net/ipv4/tcp_available_congestion_control && test ! -e /sys/fs/bpf/pfdct'
ip netns del $NS_PS; ip netns del $NS_PR
rm -f /tmp/datcp-kt-pfdct.$$
# --- the port's queue over time (switch queue): a burst of 50 datagrams of 1400 B
# into a 10 Mbit/s port builds ~70 KB that drains in ~60 ms; the samples must see it
# rise and fall back to 0 ---
nsp=datcp-kt-qs-$$ nsr=datcp-kt-qr-$$
ip netns add $nsp && nss+=($nsp) && ip netns add $nsr && nss+=($nsr)
ip -n $nsp link add v0 type veth peer name v1 netns $nsr
ip -n $nsp addr add 10.77.0.1/24 dev v0 && ip -n $nsp link set v0 up
ip -n $nsr addr add 10.77.0.2/24 dev v1 && ip -n $nsr link set v1 up
$CTL switch configure --netns $nsp --dev v0 --rate-mbit 10 --buffer-bytes 100000 --mark none >/dev/null
out=$($CTL switch queue --netns $nsp --dev v0 --duration-ms 200 --interval-us 1000 --badopt 2>&1); rc=$?
check "switch queue refuses an unknown option" test $rc -eq 2
out=$($CTL switch queue --netns $nsp --dev v0 2>&1); rc=$?
check "switch queue needs --duration-ms" test $rc -eq 2 -a -n "$(grep -o "needs --duration-ms" <<<"$out")"
# one process starts the sampler and sends the burst 30 ms later (a second python
# started from here could take longer than the samples last on a loaded machine;
# nsenter, not ip netns exec, which hides bpffs from datcpctl)
nsenter --net=/var/run/netns/$nsp python3 - "$CTL" $nsp /tmp/datcp-kt-q.$$ <<'PY'
import socket, subprocess, sys, time
ctl, ns, out = sys.argv[1:]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(bytes(1400), ("10.77.0.2", 9))   # ARP resolved before the burst
time.sleep(0.05)
with open(out, "w") as fh:
    q = subprocess.Popen([ctl, "switch", "queue", "--netns", ns, "--dev", "v0", "--duration-ms", "200",
                          "--interval-us", "1000"], stdout=fh)
    time.sleep(0.03)
    for _ in range(50):
        s.sendto(bytes(1400), ("10.77.0.2", 9))
    q.wait(timeout=20)
PY
read -r n peak last <<<"$(awk -F, 'NR > 1 { n++; if ($2 > p) p = $2; l = $2 } END { print n, p + 0, l }' /tmp/datcp-kt-q.$$)"
check "switch queue: 201 samples of 1 ms, the burst's queue seen and drained (peak $peak B, last $last B)" test "$(head -1 /tmp/datcp-kt-q.$$)" = "t_ns,queue_bytes" -a "$n" = 201 -a "$peak" -ge 20000 -a "$peak" -le 100000 -a "$last" = 0
rm -f /tmp/datcp-kt-q.$$
$CTL switch reset --netns $nsp --dev v0 >/dev/null 2>&1
ip netns del $nsp; ip netns del $nsr

# --- unload ---
$CTL flow set --src 10.9.9.1:1000 --dst 10.9.9.2:2000 --size 1000
out=$($CTL unload 2>&1); rc=$?
check "unload refuses while a flow is registered, pointing at --force" test $rc -eq 1 -a -n "$(grep -o "1 registered flow(s).*--force" <<<"$out")"
check "the refused unload left datcp registered" cc_listed
$CTL flow delete --src 10.9.9.1:1000 --dst 10.9.9.2:2000
$CTL unload >/dev/null
check "unload succeeds" test $? -eq 0
check "datcp is gone from the available congestion controls" bash -c '! grep -qw datcp /proc/sys/net/ipv4/tcp_available_congestion_control'
check "nothing stays pinned" test ! -e $PIN
$CTL unload --force >/dev/null
check "unload is idempotent" test $? -eq 0
out=$($CTL flow list 2>&1); rc=$?
check "using an unloaded datcp says to load it" test $rc -eq 1 -a -n "$(grep -o "datcpctl load" <<<"$out")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
