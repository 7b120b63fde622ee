#!/usr/bin/env python3
"""Per-packet cost of the datcp congestion control against the kernel's reno.

Two network namespaces joined by an unshaped veth pair (no qdisc shaping, so
the CPU is the bottleneck); iperf3 runs the same bulk transfer with reno and
with datcp (a registered flow, so every ACK runs the whole DATCP path:
registration lookup, window step, statistics), alternating, several rounds.
Prints throughput and CPU time per packet of each, and datcp/reno ratios.

    sudo kmod/bench/cc_cost.py [--seconds 8] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CTL = os.path.join(HERE, "..", "build", "datcpctl")
NS_A, NS_B = f"ccc-a-{os.getpid()}", f"ccc-b-{os.getpid()}"
IP_A, IP_B, PORT, CPORT = "10.199.0.1", "10.199.0.2", 5399, 42399


def sh(*args, check=True, **kw):
    return subprocess.run(args, check=check, text=True, capture_output=True, **kw)


def cpu_busy_seconds():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def setup():
    sh("ip", "netns", "add", NS_A)
    sh("ip", "netns", "add", NS_B)
    sh("ip", "link", "add", "ccc-a", "netns", NS_A, "type", "veth", "peer", "name", "ccc-b", "netns", NS_B)
    for ns, dev, ip in ((NS_A, "ccc-a", IP_A), (NS_B, "ccc-b", IP_B)):
        sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
        sh("ip", "-n", ns, "link", "set", dev, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_ecn=1")


def teardown():
    for ns in (NS_A, NS_B):
        sh("ip", "netns", "del", ns, check=False)


def run_once(cc, seconds):
    server = subprocess.Popen(["ip", "netns", "exec", NS_B, "iperf3", "-s", "-1", "-p", str(PORT)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    if cc == "datcp":
        # in the sender's namespace: flow entries are per network namespace (nsenter, not
        # ip netns exec, which hides bpffs)
        sh("nsenter", f"--net=/var/run/netns/{NS_A}", CTL, "flow", "set",
           "--src", f"{IP_A}:{CPORT}", "--dst", f"{IP_B}:{PORT}",
           "--size", str(1 << 45), "--deadline-ms", str(3600 * 1000), "--mode", "datcp")
    busy0 = cpu_busy_seconds()
    out = sh("ip", "netns", "exec", NS_A, "iperf3", "-c", IP_B, "-p", str(PORT), "--cport", str(CPORT),
             "-t", str(seconds), "-C", cc, "-J").stdout
    busy = cpu_busy_seconds() - busy0
    server.wait(timeout=10)
    if cc == "datcp":
        sh("nsenter", f"--net=/var/run/netns/{NS_A}", CTL, "flow", "delete",
           "--src", f"{IP_A}:{CPORT}", "--dst", f"{IP_B}:{PORT}", check=False)
    res = json.loads(out)
    if res["start"].get("congestion_used", cc) != cc:
        raise RuntimeError(f"iperf3 ran {res['start'].get('congestion_used')} instead of {cc}")
    sent = res["end"]["sum_sent"]
    mss = res["start"].get("tcp_mss_default") or 1448
    packets = sent["bytes"] / mss
    return {"gbps": sent["bits_per_second"] / 1e9, "cpu_ns_per_packet": busy * 1e9 / packets}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("cc_cost: needs root")
    was_loaded = "datcp" in open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    sh(CTL, "load")
    results = {"reno": [], "datcp": []}
    try:
        setup()
        for r in range(args.rounds):
            for cc in ("reno", "datcp") if r % 2 == 0 else ("datcp", "reno"):
                res = run_once(cc, args.seconds)
                results[cc].append(res)
                print(f"round {r + 1} {cc:5s}: {res['gbps']:6.2f} Gbit/s, "
                      f"{res['cpu_ns_per_packet']:6.1f} ns CPU per packet", file=sys.stderr)
    finally:
        teardown()
        if not was_loaded:
            sh(CTL, "unload", check=False)
    med = {cc: {k: statistics.median(x[k] for x in rs) for k in ("gbps", "cpu_ns_per_packet")}
           for cc, rs in results.items()}
    print(f"{'cc':6s} {'Gbit/s':>8s} {'ns CPU/packet':>14s}   (median of {args.rounds} x {args.seconds} s)")
    for cc in ("reno", "datcp"):
        print(f"{cc:6s} {med[cc]['gbps']:8.2f} {med[cc]['cpu_ns_per_packet']:14.1f}")
    print(f"datcp/reno throughput ratio: {med['datcp']['gbps'] / med['reno']['gbps']:.3f}")
    print(f"datcp/reno CPU-per-packet ratio: {med['datcp']['cpu_ns_per_packet'] / med['reno']['cpu_ns_per_packet']:.3f}")


if __name__ == "__main__":
    main()
