"""bench/run dcudp-reclaim: DCUDP §V-B (dcudp.txt, Fig. 8), bandwidth reclaimed when a
competing flow stops, scaled to 100 Mbit/s.

The paper: V-A's topology with two senders; one sends CBR at 1 Gbit/s (the receiver's
link), the other FTP; both start at 0 s, the FTP traffic finishes at 0.5 s and the CBR at
1 s; does the CBR flow take the freed bandwidth at once? TCP, DCTCP with K = 10 and
K = 50, DCUDP with th_max = 15. Here: the receiver's port 100 Mbit/s with V-A's 400 KB
buffer and marking per protocol (dcudp_incast.switch_for; K = 50 packets for dctcp-k50),
DCTCP with g = 0.3 as in V-A. Each flow carries the protocol under test:

- TCP (the generator): the CBR flow is a backlogged socket capped at the link rate by
  SO_MAX_PACING_RATE whose application stops writing at 1 s; the FTP flow is backlogged,
  uncapped, and stops writing at 0.5 s (both then shut down; what is in flight drains).
- DCUDP (dcudp-send --stop-at-ns, --notsent-pkts 64, as TCP_NOTSENT_LOWAT bounds what an
  application has queued): the CBR flow in UDP Mode at the link rate, 100 Mbit/s, stops at
  1 s; the FTP flow at 160 Mbit/s in UDP Mode (V-A's 1.6x offer: the paper's FTP sender
  has a 10 Gbit/s NIC, which two shared CPUs cannot pace), stops at 0.5 s.

Per run, the CBR flow's goodput in 10 ms bins at the receiver, and from them: its mean
before (0.1-0.5 s) and after (0.5-1.0 s) the FTP stops, and the reclaim time, from 0.5 s
to the first of three bins in a row at >= 90% of the payload ceiling (the paper's
question "can [it] quickly take advantage").
"""
from __future__ import annotations

import subprocess
import time

from . import kernel, runner
from .dcudp_incast import (BUFFER, DCTCP_G, DCUDP_BUILD, OFFER, PKT, _stats, prepare,
                           switch_for)
from .netns import Cleanup, install_signal_handlers, kill_procs, log, reap_stale
from .topo import Testbed

PROTOCOLS = ("dcudp", "dctcp-k10", "dctcp-k50", "reno")
BIN_S = 0.01
FTP_STOP_S = 0.5
CBR_STOP_S = 1.0
RUN_S = 1.3             # the run: both stops, then what is in flight drains
NOTSENT_PKTS = 64       # DCUDP: queued, never-sent packets an application may have
MSG_BYTES = 10 * 1456   # DCUDP: ten payloads a message, so a stop lands within ~1 ms
PORT = 9300
START_AHEAD_NS = 1_000_000_000
RECLAIM_FRAC = 0.9
PAYLOAD = {"dcudp": 1456 / 1500, "tcp": 1448 / 1500}   # goodput ceiling per link bit


def port_switch(proto):
    if proto == "dctcp-k50":
        return dict(switch_for("dctcp"), k=50 * PKT)
    return switch_for(proto.split("-")[0])


def reclaim_metrics(series, link_mbps, ceiling):
    """series: Mbit/s per BIN_S bin from 0. Means before / after the FTP stops, and the
    reclaim time (s after FTP_STOP_S; None if the CBR flow never got there by 1 s)."""
    def mean(a, b):
        w = series[int(round(a / BIN_S)):int(round(b / BIN_S))]
        return round(sum(w) / len(w), 2) if w else None
    full = RECLAIM_FRAC * ceiling * link_mbps
    first = int(round(FTP_STOP_S / BIN_S))
    reclaim = None
    for i in range(first, int(round(CBR_STOP_S / BIN_S)) - 2):
        if all(x >= full for x in series[i:i + 3]):
            reclaim = round(i * BIN_S - FTP_STOP_S, 3)
            break
    return {"cbr_before_mbps": mean(0.1, FTP_STOP_S), "cbr_after_mbps": mean(FTP_STOP_S, CBR_STOP_S),
            "reclaim_s": reclaim}


def _tcp_run(proto, link_mbps):
    cc = "reno-ecn" if proto == "reno" else "dctcp"
    spec = {"scenario": "reclaim:dcudp", "link_mbps": link_mbps, "switch": port_switch(proto),
            "bin_s": BIN_S, "queue_series_s": RUN_S, "duration_s": RUN_S,
            "flows": [{"id": "cbr", "src": 0, "size_bytes": None, "deadline_s": None,
                       "importance": 1.0, "phi": 0.0, "start_s": 0.0, "preconnect": True,
                       "max_pacing_mbps": link_mbps, "stop_s": CBR_STOP_S},
                      {"id": "ftp", "src": 1, "size_bytes": None, "deadline_s": None,
                       "importance": 1.0, "phi": 0.0, "start_s": 0.0, "preconnect": True,
                       "stop_s": FTP_STOP_S}]}
    r = runner.run_spec(spec, cc, boost=False)
    n = int(round(RUN_S / BIN_S))
    by = {f["id"]: runner.series(f, RUN_S)[:n] for f in r["flows"]}
    return {"series_mbps": {k: [round(x, 2) for x in v] for k, v in by.items()},
            "queue": r.get("queue", []), "drops": r["switch"].get("drops"),
            "marks": r["switch"].get("marks"), "kmod_params": r.get("kmod_params"),
            **reclaim_metrics(by["cbr"], link_mbps, PAYLOAD["tcp"])}


def _dcudp_run(link_mbps):
    runner.boost_priority()
    install_signal_handlers()
    reap_stale()
    cleanup = Cleanup()
    procs = []
    try:
        loaded = kernel.Loaded().__enter__()
        cleanup.push(loaded.__exit__, None, None, None)
        tb = Testbed(2, 1, link_mbps, port_switch("dcudp"), cleanup).up()
        cleanup.push(kill_procs, procs)
        rx = tb.receivers[0]
        start = time.monotonic_ns() + START_AHEAD_NS
        recvs = [subprocess.Popen(["ip", "netns", "exec", rx, f"{DCUDP_BUILD}/dcudp-recv",
                                   "--port", str(PORT + i), "--link-mbit", str(link_mbps),
                                   "--bin-ms", str(int(BIN_S * 1000)), "--bin-from-ns", str(start)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(2)]
        procs += recvs
        time.sleep(0.3)
        queue = kernel.QueueSampler(*tb.switch_ports[0], start / 1e9 + RUN_S)
        procs.append(queue.proc)
        flows = [("cbr", link_mbps, CBR_STOP_S), ("ftp", int(OFFER * link_mbps), FTP_STOP_S)]
        sends = [subprocess.Popen(["ip", "netns", "exec", tb.senders[i], f"{DCUDP_BUILD}/dcudp-send",
                                   "--host", tb.receiver_ip(0), "--port", str(PORT + i),
                                   "--link-mbit", str(link_mbps), "--udp-mbit", str(udp),
                                   "--spin-us", "0", "--start-at-ns", str(start),
                                   "--stop-at-ns", str(start + int(stop * 1e9)),
                                   "--notsent-pkts", str(NOTSENT_PKTS),
                                   "--message-bytes", str(MSG_BYTES)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i, (_, udp, stop) in enumerate(flows)]
        procs += sends
        s_out = [p.communicate(timeout=60) for p in sends]
        r_out = [p.communicate(timeout=30) for p in recvs]
        q = queue.series(start / 1e9)
        sw = tb.counters()
    finally:
        cleanup.run()
    if any(p.returncode for p in sends + recvs):
        errs = "; ".join(e.strip() for _, e in s_out + r_out if e.strip())
        raise RuntimeError(f"dcudp-reclaim: a transfer failed: {errs}")
    series = {}
    for (name, _, _), (out, _) in zip(flows, r_out):
        line = next((x for x in out.splitlines() if x.startswith("bins_bytes=")), "bins_bytes=")
        bins = [int(b) for b in line.partition("=")[2].split(",") if b]
        n = int(round(RUN_S / BIN_S))
        series[name] = [round((bins[i] if i < len(bins) else 0) * 8 / BIN_S / 1e6, 2)
                        for i in range(n)]
    ss = [_stats(o) for o, _ in s_out]
    return {"series_mbps": series, "queue": q, "drops": sw.get("drops"), "marks": sw.get("marks"),
            "congestion_entries": [s.get("congestion_entries", 0) for s in ss],
            "congestion_exits": [s.get("congestion_exits", 0) for s in ss],
            "retransmitted": [s.get("data_retransmitted", 0) for s in ss],
            **reclaim_metrics(series["cbr"], link_mbps, PAYLOAD["dcudp"])}


def run(link_mbps=100, protocols=PROTOCOLS, rounds=1, dctcp_g=DCTCP_G, boost=False):
    boost_cleanup = prepare("dcudp-reclaim", dctcp_g, boost)
    res = {"scenario": "dcudp-reclaim", "link_mbps": link_mbps, "buffer_bytes": BUFFER,
           "bin_s": BIN_S, "ftp_stop_s": FTP_STOP_S, "cbr_stop_s": CBR_STOP_S,
           "dctcp_g": dctcp_g, "rounds": rounds, "protocols": list(protocols), "runs": []}
    try:
        for rnd in range(rounds):
            for proto in protocols:
                log(f"dcudp-reclaim: {proto} round {rnd}")
                r = _dcudp_run(link_mbps) if proto == "dcudp" else _tcp_run(proto, link_mbps)
                res["runs"].append(dict(r, protocol=proto, round=rnd))
    finally:
        boost_cleanup.run()
    return res


def _median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def table(res):
    lines = [f"dcudp-reclaim: CBR at the link rate and FTP into {res['link_mbps']} Mbit/s, "
             f"buffer {res['buffer_bytes']} B; FTP stops at {res['ftp_stop_s']} s, CBR at "
             f"{res['cbr_stop_s']} s; CBR goodput Mbit/s, reclaim time to 3 x {BIN_S * 1000:.0f} ms "
             f"at >= {RECLAIM_FRAC:.0%} of the payload ceiling (median over {res['rounds']} "
             f"round(s); each round in brackets)",
             f"{'protocol':<10} {'CBR before':>12} {'CBR after':>12} {'reclaim s':>10}  rounds"]
    for p in res["protocols"]:
        rs = [r for r in res["runs"] if r["protocol"] == p]
        if not rs:
            continue
        b, a = _median(r["cbr_before_mbps"] for r in rs), _median(r["cbr_after_mbps"] for r in rs)
        never = sum(r["reclaim_s"] is None for r in rs)
        rec = _median(r["reclaim_s"] for r in rs) if never <= len(rs) // 2 else None
        each = ", ".join("never" if r["reclaim_s"] is None else f"{r['reclaim_s']:.2f}" for r in rs)
        fb, fa = (f"{x:.1f}" if x is not None else "-" for x in (b, a))
        lines.append(f"{p:<10} {fb:>12} {fa:>12} {'never' if rec is None else f'{rec:.2f}':>10}  [{each}]")
    return "\n".join(lines)


def plot(res, path):
    """Fig. 8: the CBR flow's goodput over time per protocol (round 0), the FTP's dashed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = [r for r in res["runs"] if r["round"] == 0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    a, b = axes
    for i, r in enumerate(runs):
        t = [k * res["bin_s"] for k in range(len(r["series_mbps"]["cbr"]))]
        a.plot(t, r["series_mbps"]["cbr"], lw=0.9, color=f"C{i}", label=f"{r['protocol']} CBR")
        a.plot(t, r["series_mbps"]["ftp"], lw=0.6, ls="--", color=f"C{i}", alpha=0.6)
        q = r.get("queue", [])
        b.plot([x for x, _ in q], [y / 1000 for _, y in q], lw=0.6, color=f"C{i}", label=r["protocol"])
    for ax in axes:
        ax.axvline(res["ftp_stop_s"], color="grey", ls=":", lw=0.8)
        ax.set_xlabel("time s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    a.set_title(f"CBR goodput ({res['bin_s'] * 1000:.0f} ms bins; FTP dashed), round 0")
    a.set_ylabel("Mbit/s")
    a.set_ylim(0, res["link_mbps"] * 1.3)
    b.set_title("receiver port queue (1 ms samples)")
    b.set_ylabel("queue KB")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
