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

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	$CTL unload --force >/dev/null 2>&1
}
trap cleanup EXIT

# Start from nothing, whatever an earlier run left.
$CTL unload --force >/dev/null 2>&1

# --- load / unload round trip ---
out=$($CTL load --port 5201 2>&1)
check "load succeeds ($out)" test $? -eq 0
check "datcp is an available congestion control after load" cc_listed
check "maps and links are pinned under $PIN" test -e $PIN/flows -a -e $PIN/cc_ops -a -e $PIN/sockops_link -a -e $PIN/switch_ports
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
out=$($CTL switch configure --netns no-such-ns-$$ --dev eth0 --rate-mbit 100 --buffer-bytes 200000 2>&1); rc=$?
check "an unknown network namespace is named in the error" test $rc -eq 1 -a -n "$(grep -o "no-such-ns-$$" <<<"$out")"
out=$($CTL switch configure --dev lo --rate-mbit 100 --buffer-bytes 200000 --mark red --red-min 9 --red-max 5 2>&1); rc=$?
check "RED with min >= max is refused" test $rc -eq 1 -a -n "$(grep -o "min < max" <<<"$out")"

# --- a datcp flow on loopback: statistics and the finished event ---
# Own sender and receiver: the receiver reads to EOF before closing, so every
# byte is acknowledged (iperf3 may reset the connection with data in flight).
size=20000000
# other flows on this kernel may report too: keep the first event of ours
( $CTL events --json --timeout-ms 15000 | grep -m1 '"src":"127.0.0.1:41001"' >/tmp/datcp-kt-events.$$ ) & evpid=$!; pids+=($evpid)
sleep 0.3
python3 - "$CTL" "$size" <<'PY'
import socket, subprocess, sys, threading
ctl, size = sys.argv[1], int(sys.argv[2])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.settimeout(20); srv.bind(("127.0.0.1", 5201)); srv.listen(1)
got = []
def receive():
    c, _ = srv.accept(); n = 0
    while True:
        b = c.recv(1 << 20)
        if not b:
            break
        n += len(b)
    got.append(n); c.close()
t = threading.Thread(target=receive, daemon=True); t.start()
cli = socket.socket(); cli.settimeout(20)
cli.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
cli.bind(("127.0.0.1", 41001)); cli.connect(("127.0.0.1", 5201))
subprocess.run([ctl, "flow", "set", "--src", "127.0.0.1:41001", "--dst", "127.0.0.1:5201",
                "--size", str(size), "--deadline-ms", "5000", "--mode", "datcp"], check=True)
chunk = b"x" * (1 << 20)
left = size
while left:
    left -= cli.send(chunk[:min(left, len(chunk))])
cli.shutdown(socket.SHUT_WR)
cli.recv(1)  # EOF once the receiver has read everything and closed
t.join(20)
sys.exit(0 if got == [size] else 1)
PY
check "a $size-byte flow ran on datcp and arrived whole" test $? -eq 0
wait $evpid
ev=$(cat /tmp/datcp-kt-events.$$); rm -f /tmp/datcp-kt-events.$$
check "a finished event with met=true arrives ($ev)" grep -q '"event":"finished","src":"127.0.0.1:41001","dst":"127.0.0.1:5201","epoch":1,.*"met":true' <<<"$ev"
st=$($CTL flow get --src 127.0.0.1:41001 --dst 127.0.0.1:5201 --json)
acked=$(grep -o '"bytes_acked":[0-9]*' <<<"$st" | cut -d: -f2)
check "statistics count the flow's bytes (acked ${acked:-none} >= $size)" test "${acked:-0}" -ge $size
check "statistics mark it finished and met" grep -q '"finished":true,"fct_ns":[0-9]*,"met":true' <<<"$st"
$CTL flow delete --src 127.0.0.1:41001 --dst 127.0.0.1:5201
out=$($CTL flow get --src 127.0.0.1:41001 --dst 127.0.0.1:5201 2>&1); rc=$?
check "a deleted flow is gone" test $rc -eq 1 -a -n "$(grep -o "no such flow" <<<"$out")"

# --- DSCP from the precedence class: a flow far behind its deadline rises to
# the high class (urgency grows), set by the congestion control itself ---
python3 - "$CTL" <<'PY'
import socket, subprocess, sys, threading
ctl = sys.argv[1]
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 5303)); srv.listen(1)
srv.settimeout(20)
def drain():
    c, _ = srv.accept()
    while c.recv(1 << 20):
        pass
t = threading.Thread(target=drain, daemon=True); t.start()
cli = socket.socket(); cli.settimeout(20)
cli.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"datcp")
cli.bind(("127.0.0.1", 43003)); cli.connect(("127.0.0.1", 5303))
before = cli.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) >> 2
subprocess.run([ctl, "flow", "set", "--src", "127.0.0.1:43003", "--dst", "127.0.0.1:5303",
                "--size", "1000000000", "--deadline-ms", "1"], check=True)
for _ in range(50):
    cli.sendall(b"x" * (1 << 20))
after = cli.getsockopt(socket.IPPROTO_IP, socket.IP_TOS) >> 2
cli.close(); t.join(20)
subprocess.run([ctl, "flow", "delete", "--src", "127.0.0.1:43003", "--dst", "127.0.0.1:5303"])
print(f"DSCP before {before}, after {after}")
sys.exit(0 if before == 0 and after == 34 else 1)
PY
check "a registered flow behind its deadline is marked with the high-precedence DSCP (AF41)" test $? -eq 0

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
