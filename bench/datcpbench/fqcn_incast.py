"""bench/run fqcn-incast: FQCN §IV-B (fqcn.txt, Fig. 5), TCP incast under synchronized reads,
TCP alone against TCP over QCN and over FQCN, scaled from the paper's 1 Gbit/s to the link.

The paper (ns-2): N servers each answer a client's synchronized read with one server request
unit (SRU) of 256 KB; the client asks again once all N are in (a barrier). 1 Gbit/s links,
RTT 100 us, RTO_min 200 ms, TCP NewReno with 1000-byte packets, a 64 KB bottleneck buffer (64
packets), Q_eq 22 packets for QCN and FQCN. Goodput against N: QCN falls to about 400 Mbit/s
at 16 servers, FQCN keeps about 900.

Here at 100 Mbit/s (scale s = link / 1 Gbit/s): the SRU is 256 KB x s, so a block lasts as
long as the paper's and RTO_min stays 200 ms; packets, buffer (64 KB) and Q_eq (22 KB) are
kept; the reaction point's bytes (BC_LIMIT) and rates (R_AI, R_HAI, minimum, taken as 802.1Qau's
for the paper's 1 Gbit/s runs) and the congestion point's sampling base scale by s, its times
(T) stay. TCP is NewReno as in ns-2: Linux reno without SACK, RACK and tail loss probes, MSS 1000. The veth path has no propagation delay
(this kernel has no netem): the round trip is tens of microseconds, not the paper's 100 us
scaled to 1 ms, so a window of one or two packets fills the link. Layer 2 is emulated
(fqcn/README.md): the congestion point is fqcn-cp beside the port, each server's reaction
point caps its TCP socket's pacing rate (SO_MAX_PACING_RATE) at CR.
"""
from __future__ import annotations

import os
import statistics
import subprocess

from .fqcn_fairness import FQCN_BUILD, _fields, _kv
from .netns import Cleanup, install_signal_handlers, kill_procs, log, reap_stale, sh
from .topo import Testbed

BUFFER = 64 * 1024         # §IV-B: 64 KB, 64 packets
Q_EQ = 22 * 1024           # §IV-B: 22 packets
MSS = 1000                 # §IV-B: NewReno's 1000-byte packets
PAPER_LINK_MBPS = 1000
PAPER_SRU = 256 * 1024     # §IV-B: SRU 256 KB
RTO_MIN_MS = 200           # §IV-B: the default RTO_min, kept (a block lasts as in the paper)
# the paper's ns-2 NewReno on the servers: reno without SACK, and without Linux's RACK loss
# detection and tail loss probes, which ns-2's NewReno does not have
NEWRENO = ["net.ipv4.tcp_congestion_control=reno", "net.ipv4.tcp_sack=0",
           "net.ipv4.tcp_recovery=0", "net.ipv4.tcp_early_retrans=0"]
PORT = 5001
MODES = ("tcp", "qcn", "fqcn")
SERVERS = [1, 4, 8, 16, 32]
SERVERS_SHORT = [16]
BLOCKS = 40
BLOCKS_SHORT = 10
# Fig. 5 in the paper's words (Mbit/s at 1 Gbit/s): QCN about 400 at 16 servers, FQCN about 900
PAPER_FIG5 = "QCN ~400 Mbit/s at 16 servers, FQCN ~900 (of 1000)"


def scale(link_mbps):
    return link_mbps / PAPER_LINK_MBPS


def rp_args(link_mbps):
    """802.1Qau's reaction point (fqcn_core.h) with its bytes and rates scaled by s."""
    s = scale(link_mbps)
    return ["--rp", "--line-rate-mbit", str(link_mbps),
            "--bc-limit-bytes", str(round(150_000 * s)),
            "--r-ai-kbit", str(max(1, round(5_000 * s))),
            "--r-hai-kbit", str(max(1, round(50_000 * s))),
            "--min-rate-kbit", str(max(1, round(5_000 * s)))]


def sru_bytes(link_mbps):
    return round(PAPER_SRU * scale(link_mbps))


def sample_base(link_mbps):
    return round(153_600 * scale(link_mbps))


def _one(mode, n, link_mbps, blocks):
    """One run: n servers, the client, in `mode` (tcp: no congestion point, no reaction point)."""
    install_signal_handlers()
    reap_stale()
    cleanup = Cleanup()
    procs = []
    try:
        tb = Testbed(n, 1, link_mbps, {"buffer_bytes": BUFFER, "plain_tc": True}, cleanup,
                     rto_min_ms=RTO_MIN_MS).up()
        cleanup.push(kill_procs, procs)
        for ns in tb.senders:
            sh(["ip", "netns", "exec", ns, "sysctl", "-qw", *NEWRENO])
        servers = []
        for ns in tb.senders:
            p = subprocess.Popen(["ip", "netns", "exec", ns, f"{FQCN_BUILD}/fqcn-incast", "server",
                                  "--port", str(PORT), "--mss", str(MSS),
                                  *(rp_args(link_mbps) if mode != "tcp" else [])],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(p)
            servers.append(p)
            if not p.stdout.readline().startswith("listening"):
                raise RuntimeError(f"fqcn-incast server in {ns} did not start: "
                                   f"{p.stderr.read().strip()}")
        cp = None
        if mode != "tcp":
            cp = subprocess.Popen(["ip", "netns", "exec", tb.sw, f"{FQCN_BUILD}/fqcn-cp",
                                   "--port", "r0", "--in", ",".join(f"s{i}" for i in range(n)),
                                   "--q-eq-bytes", str(Q_EQ), "--mode", mode,
                                   "--sample-base-bytes", str(sample_base(link_mbps))],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(cp)
            if not cp.stdout.readline().startswith("cp "):
                raise RuntimeError(f"fqcn-cp did not start: {cp.stderr.read().strip()}")
        sw0 = tb.counters()
        client = subprocess.run(["ip", "netns", "exec", tb.receivers[0],
                                 f"{FQCN_BUILD}/fqcn-incast", "client",
                                 "--servers", ",".join(f"{tb.sender_ip(i)}:{PORT}" for i in range(n)),
                                 "--sru-bytes", str(sru_bytes(link_mbps)),
                                 "--blocks", str(blocks), "--log"],
                                capture_output=True, text=True, timeout=blocks * 5 + 30)
        sw1 = tb.counters()
        s_out = [p.communicate(timeout=30) for p in servers]
        c_out = ("", "")
        if cp:
            cp.terminate()
            c_out = cp.communicate(timeout=30)
    finally:
        cleanup.run()
    bad = [p.args[-1] for p in procs if p.returncode != 0] + \
        (["client"] if client.returncode != 0 else [])
    if bad:
        errs = "; ".join(e.strip() for _, e in s_out + [c_out, ("", client.stderr)] if e.strip())
        raise RuntimeError(f"fqcn-incast {mode} n={n}: a tool failed: {errs}")
    cl = _kv(client.stdout)
    srv = [_kv(o) for o, _ in s_out]
    cps = _kv(c_out[0])
    return {"mode": mode, "servers": n, "blocks": int(cl["blocks"]),
            "goodput_mbps": round(float(cl["goodput_mbit"]), 2),
            "seconds": float(cl["seconds"]),
            "block_ms": [float(_fields(x)["ms"]) for x in client.stdout.splitlines()
                         if x.startswith("block ")],
            "rtos": sum(int(s["rtos"]) for s in srv),
            "retrans": sum(int(s["retrans"]) for s in srv),
            "port_drops": (sw1["drops"] or 0) - (sw0["drops"] or 0),
            "cnms": int(cps.get("cnms", 0)),
            "cnms_per_server": [int(s["cnms"]) for s in srv],
            "cnms_foreign": sum(int(s["cnms_foreign"]) for s in srv),
            "cr_min_mbps": [float(s["cr_min_mbit"]) for s in srv],
            "requests_per_server": [int(s["requests"]) for s in srv]}


def run(link_mbps=100, servers=None, rounds=1, blocks=BLOCKS, modes=MODES):
    for b in ("fqcn-cp", "fqcn-incast"):
        if not os.access(os.path.join(FQCN_BUILD, b), os.X_OK):
            raise SystemExit(f"fqcn-incast needs {FQCN_BUILD}/{b} (make -C fqcn)")
    servers = servers or SERVERS
    res = {"scenario": "fqcn-incast", "link_mbps": link_mbps, "buffer_bytes": BUFFER,
           "q_eq_bytes": Q_EQ, "mss": MSS, "sru_bytes": sru_bytes(link_mbps),
           "rto_min_ms": RTO_MIN_MS, "blocks": blocks, "rounds": rounds, "servers": servers,
           "modes": list(modes), "rp_args": rp_args(link_mbps),
           "sample_base_bytes": sample_base(link_mbps), "runs": []}
    for n in servers:
        for rnd in range(rounds):
            for mode in modes:
                log(f"fqcn-incast: {mode} n={n} round {rnd}")
                res["runs"].append(dict(_one(mode, n, link_mbps, blocks), round=rnd))
    return res


def _med(rs, key):
    return statistics.median(r[key] for r in rs) if rs else None


def table(res):
    lines = [f"fqcn-incast (FQCN §IV-B, Fig. 5): N servers x SRU {res['sru_bytes']} B per block, "
             f"{res['blocks']} blocks, into one {res['link_mbps']} Mbit/s port, buffer "
             f"{res['buffer_bytes']} B, Q_eq {res['q_eq_bytes']} B, RTO_min {res['rto_min_ms']} ms, "
             f"NewReno MSS {res['mss']}; medians of {res['rounds']} round(s); paper (1 Gbit/s): "
             f"{PAPER_FIG5}",
             f"{'N':>4} " + " ".join(f"{m + ' Mbit/s':>12}" for m in res["modes"]) + " " +
             " ".join(f"{m + ' RTOs':>10}" for m in res["modes"]) + " " +
             " ".join(f"{m + ' drops':>11}" for m in res["modes"]) + " " +
             " ".join(f"{m + ' CNMs':>10}" for m in res["modes"] if m != "tcp")]
    for n in res["servers"]:
        by = {m: [r for r in res["runs"] if r["servers"] == n and r["mode"] == m]
              for m in res["modes"]}
        lines.append(f"{n:>4} " +
                     " ".join(f"{_med(by[m], 'goodput_mbps'):>12.1f}" for m in res["modes"]) + " " +
                     " ".join(f"{_med(by[m], 'rtos'):>10g}" for m in res["modes"]) + " " +
                     " ".join(f"{_med(by[m], 'port_drops'):>11g}" for m in res["modes"]) + " " +
                     " ".join(f"{_med(by[m], 'cnms'):>10g}" for m in res["modes"] if m != "tcp"))
    return "\n".join(lines)


def plot(res, path):
    """Goodput against servers per mode (Fig. 5), medians over rounds."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in res["modes"]:
        ys = [_med([r for r in res["runs"] if r["servers"] == n and r["mode"] == m],
                   "goodput_mbps") for n in res["servers"]]
        ax.plot(res["servers"], ys, marker="o", label={"tcp": "TCP alone"}.get(m, m.upper()))
    ax.set_xlabel("servers")
    ax.set_ylabel("goodput Mbit/s")
    ax.set_ylim(0, res["link_mbps"] * 1.05)
    ax.set_title(f"synchronized reads, SRU {res['sru_bytes'] // 1024} KB, "
                 f"{res['link_mbps']} Mbit/s")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
