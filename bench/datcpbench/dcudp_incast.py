"""bench/run dcudp-incast: DCUDP §V-A (dcudp.txt), N senders of constant bit rate into
one receiver, DCUDP against DCTCP and TCP Reno on drop-tail, scaled to 100 Mbit/s.

The paper: senders on 10 Gbit/s links, a receiver behind 1 Gbit/s, a 4 MB switch buffer,
RTT_idle 100 us; each sender sends CBR at 1.6 Gbit/s for 1 s ("normal") or 10 ms
("short"); DCUDP on RED from 1 packet to th_max = 15 packets (marking, not dropping,
above), DCTCP (g = 0.3) on RED with one threshold K = 10 packets, Reno on drop-tail. Scaled here
by 1/10 in rate with times kept: receiver port 100 Mbit/s, buffer 400 KB (4 MB at 10x
the rate holds the same time), each sender offers 160 Mbit/s for D, i.e. 20 MB (D = 1 s)
or 200 KB (D = 10 ms). Senders are bounded by the host's veth, not by a 1 Gbit/s link.

Each (protocol, D, N) runs on a fresh testbed (topo.Testbed: a star of namespaces, the
receiver's switch port emulated by kmod's datcpctl); all N senders start together and
the goodput is all bytes over the common start to the last byte received (DCUDP's
senders hand-shake first and send from one CLOCK_MONOTONIC time, as the generator's
preconnected TCP sockets). TCP runs through the
bench's generator (runner.run_spec, sized flows with preconnected sockets, as the
``incast`` scenario); DCUDP through dcudp-send / dcudp-recv (dcudp/), C = 100 Mbit/s
(the bottleneck: Rate_data on entering Congestion Mode and the rates' ceiling), UDP Mode
at the CBR offer, 160 Mbit/s; pacing by sleeping only (--spin-us 0: N spinning
senders on 2 CPUs would starve each other). DCTCP is kmod's dctcp mode loaded with
dctcp_g = 0.3 (307/1024 = 0.2998 in the core's Q10). The receiver port's queue is sampled
every 1 ms (datcpctl switch queue) from the start to D + 0.5 s: Fig. 7.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time

from . import kernel, runner
from .netns import Cleanup, install_signal_handlers, kill_procs, log, reap_stale
from .topo import Testbed

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DCUDP_BUILD = os.path.join(REPO, "dcudp", "build")
PKT = 1500
BUFFER = 400_000
OFFER = 1.6            # each sender's CBR as a multiple of the receiver's link
TH_MAX_PKTS = 15       # DCUDP's th_max in V-A
DCTCP_K_PKTS = 10      # DCTCP's K in V-A
DCTCP_G = 0.3          # DCTCP's g in V-A (kmod's default is 1/16)
QUEUE_TAIL_S = 0.5     # the queue is sampled from the start to D + this
PROTOCOLS = ("dcudp", "dctcp", "reno")
COUNTS = [1, 2, 4, 8, 16, 20]
COUNTS_SHORT = [1, 2, 4, 8]
DURATIONS = (1.0, 0.01)
BASE_PORT = 9100
START_AHEAD_NS = 1_000_000_000   # time to start N sender processes and hand-shake


def switch_for(proto):
    if proto == "dcudp":
        return {"buffer_bytes": BUFFER, "mark": "red", "red_min": PKT,
                "red_max": TH_MAX_PKTS * PKT, "red_maxp": 1.0}
    if proto == "dctcp":
        return {"buffer_bytes": BUFFER, "mark": "step", "k": DCTCP_K_PKTS * PKT}
    return {"buffer_bytes": BUFFER, "mark": "none"}


def sender_bytes(link_mbps, dur):
    return int(OFFER * link_mbps * 1e6 * dur / 8)


def load_args(dctcp_g):
    """datcpctl load arguments that set DCTCP's g on top of the bench's own."""
    return (kernel.LOAD_ARGS or ["--profile", "tuned"]) + ["--param", f"dctcp_g={dctcp_g:g}"]


def _tcp_group(proto, n, dur, link_mbps, boost=False):
    """One group of n sized TCP flows through the generator; goodput in Mbit/s."""
    size = sender_bytes(link_mbps, dur)
    spec = {"scenario": "incast:dcudp", "link_mbps": link_mbps, "switch": switch_for(proto),
            "queue_series_s": dur + QUEUE_TAIL_S,
            "flows": [{"id": f"n={n}/s{i}", "src": i, "size_bytes": size, "deadline_s": None,
                       "importance": 1.0, "phi": 0.0, "start_s": 0.0, "preconnect": True,
                       "group": f"n={n}", "senders": n} for i in range(n)],
            "duration_s": 2.0 * n * size * 8 / (link_mbps * 1e6) + 5, "tail_s": 0.2}
    # the softirq boost is held for the whole scenario by run(), not per group
    r = runner.run_spec(spec, "dctcp" if proto == "dctcp" else "reno-ecn", boost=False)
    return {"goodput_mbps": r["summary"]["goodput_mbps"].get(str(n), 0.0),
            "peak_queue_bytes": r["switch"].get("peak_queue_bytes"),
            "marks": r["switch"].get("marks"), "drops": r["switch"].get("drops"),
            "kmod_params": r.get("kmod_params"), "queue": r.get("queue", [])}


def _stats(text):
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition("=")
        if v:
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def _dcudp_group(n, dur, link_mbps):
    """One group of n DCUDP senders on a fresh testbed; goodput in Mbit/s."""
    size = sender_bytes(link_mbps, dur)
    runner.boost_priority()   # the tools inherit the generator's nice, as TCP's generator runs
    install_signal_handlers()
    reap_stale()
    cleanup = Cleanup()
    tmp = tempfile.mkdtemp(prefix="dcudp-incast.")
    cleanup.push(subprocess.run, ["rm", "-rf", tmp])
    procs = []
    try:
        loaded = kernel.Loaded().__enter__()
        cleanup.push(loaded.__exit__, None, None, None)
        tb = Testbed(n, 1, link_mbps, switch_for("dcudp"), cleanup).up()
        cleanup.push(kill_procs, procs)
        src = os.path.join(tmp, "data")
        with open(src, "wb") as fh:
            fh.write(os.urandom(size))
        rx = tb.receivers[0]
        recvs = [subprocess.Popen(["ip", "netns", "exec", rx, f"{DCUDP_BUILD}/dcudp-recv",
                                   "--port", str(BASE_PORT + i), "--link-mbit", str(link_mbps)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(n)]
        procs += recvs
        time.sleep(0.3)
        # connect now, first byte together: the senders' processes start tens of ms apart
        start = time.monotonic_ns() + START_AHEAD_NS
        queue = kernel.QueueSampler(*tb.switch_ports[0], start / 1e9 + dur + QUEUE_TAIL_S)
        procs.append(queue.proc)
        sends = [subprocess.Popen(["ip", "netns", "exec", ns, f"{DCUDP_BUILD}/dcudp-send",
                                   "--host", tb.receiver_ip(0), "--port", str(BASE_PORT + i),
                                   "--link-mbit", str(link_mbps),
                                   "--udp-mbit", str(int(OFFER * link_mbps)), "--file", src,
                                   "--spin-us", "0", "--start-at-ns", str(start)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i, ns in enumerate(tb.senders)]
        procs += sends
        limit = 60 + 4 * n * size * 8 / (link_mbps * 1e6)
        s_out = [p.communicate(timeout=limit) for p in sends]
        r_out = [p.communicate(timeout=30) for p in recvs]
        q = queue.series(start / 1e9)
        sw = tb.counters()
    finally:
        cleanup.run()
    ss, rs = [_stats(o) for o, _ in s_out], [_stats(o) for o, _ in r_out]
    failed = [i for i, (p, r) in enumerate(zip(sends + recvs, ss + rs)) if p.returncode != 0]
    if failed or any(r.get("bytes_delivered") != size for r in rs):
        errs = "; ".join(e.strip() for _, e in s_out + r_out if e.strip())
        log(f"dcudp n={n} D={dur}: a transfer failed: {errs}")
        return {"goodput_mbps": 0.0, "failed": True}
    end = max(r["last_byte_ns"] for r in rs)
    return {"goodput_mbps": round(n * size * 8 / ((end - start) / 1e9) / 1e6, 2),
            "peak_queue_bytes": sw.get("peak_queue_bytes"), "marks": sw.get("marks"),
            "drops": sw.get("drops"),
            "congestion_entries": sum(s.get("congestion_entries", 0) for s in ss),
            "retransmitted": sum(s.get("data_retransmitted", 0) for s in ss), "queue": q}


def prepare(scenario, dctcp_g, boost):
    """What the DCUDP scenarios need first: kmod and dcudp's tools, DCTCP's g in every
    datcp load, and the optional softirq boost; the returned Cleanup undoes the boost."""
    if not kernel.available():
        raise SystemExit(f"{scenario} needs {kernel.DATCPCTL} (make -C kmod)")
    for b in ("dcudp-send", "dcudp-recv"):
        if not os.access(os.path.join(DCUDP_BUILD, b), os.X_OK):
            raise SystemExit(f"{scenario} needs {DCUDP_BUILD}/{b} (make -C dcudp)")
    kernel.LOAD_ARGS[:] = load_args(dctcp_g)
    cleanup = Cleanup()
    if boost:
        runner.boost_softirq(cleanup)
        runner.boost_autogroup(cleanup)
    return cleanup


def run(link_mbps=100, short=False, protocols=PROTOCOLS, rounds=1, counts=None, durations=None,
        boost=False, dctcp_g=DCTCP_G):
    """counts / durations override the scenario's sender counts and D values."""
    boost_cleanup = prepare("dcudp-incast", dctcp_g, boost)
    counts = counts or (COUNTS_SHORT if short else COUNTS)
    durations = durations or DURATIONS
    res = {"scenario": "dcudp-incast", "link_mbps": link_mbps, "buffer_bytes": BUFFER,
           "offer_per_sender_mbps": OFFER * link_mbps, "counts": counts,
           "protocols": list(protocols),
           "durations_s": list(durations), "rounds": rounds, "dctcp_g": dctcp_g, "runs": []}
    try:
        _run_all(res, link_mbps, protocols, boost)
    finally:
        boost_cleanup.run()
    return res


def _run_all(res, link_mbps, protocols, boost):
    counts, rounds = res["counts"], res["rounds"]
    for dur in res["durations_s"]:
        for n in counts:
            for proto in protocols:
                for rnd in range(rounds):
                    log(f"dcudp-incast: {proto} D={dur}s n={n} round {rnd}")
                    r = _dcudp_group(n, dur, link_mbps) if proto == "dcudp" else \
                        _tcp_group(proto, n, dur, link_mbps, boost)
                    res["runs"].append(dict(r, protocol=proto, duration_s=dur, n=n, round=rnd))


def queue_window(run, dur):
    """Queue samples (bytes) after the onset, 0.2 s to D: the "stable" part of Fig. 7;
    empty for D under 0.5 s."""
    return [q for t, q in run.get("queue", []) if 0.2 <= t <= dur] if dur >= 0.5 else []


def _pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else None


def table(res):
    protos = [p for p in PROTOCOLS if any(r["protocol"] == p for r in res["runs"])]
    lines = [f"dcudp-incast: N senders x {res['offer_per_sender_mbps']:.0f} Mbit/s CBR into "
             f"{res['link_mbps']} Mbit/s, buffer {res['buffer_bytes']} B; goodput Mbit/s "
             f"(median of {res['rounds']} round(s)), peak queue KB in brackets"]
    for dur in res["durations_s"]:
        lines.append(f"D = {dur:g} s")
        lines.append(f"{'N':>4} " + " ".join(f"{p:>20}" for p in protos))
        for n in res["counts"]:
            cells = []
            for p in protos:
                rs = [r for r in res["runs"] if r["protocol"] == p and r["n"] == n
                      and r["duration_s"] == dur]
                if not rs:
                    cells.append(f"{'-':>20}")
                    continue
                g = statistics.median(r["goodput_mbps"] for r in rs)
                q = max((r.get("peak_queue_bytes") or 0) for r in rs) / 1000
                cells.append(f"{g:>11.1f} [{q:>5.0f} KB]")
            lines.append(f"{n:>4} " + " ".join(cells))
    long = [d for d in res["durations_s"] if d >= 0.5]
    for dur in long:
        lines.append(f"queue KB from 0.2 s to D = {dur:g} s (Fig. 7): median / 95th percentile "
                     f"of 1 ms samples, pooled over rounds")
        lines.append(f"{'N':>4} " + " ".join(f"{p:>20}" for p in protos))
        for n in res["counts"]:
            cells = []
            for p in protos:
                qs = [q for r in res["runs"] if r["protocol"] == p and r["n"] == n
                      and r["duration_s"] == dur for q in queue_window(r, dur)]
                cells.append(f"{_pct(qs, 0.5) / 1000:>9.1f} / {_pct(qs, 0.95) / 1000:>6.1f}"
                             if qs else f"{'-':>20}")
            lines.append(f"{n:>4} " + " ".join(cells))
    return "\n".join(lines)


def plot(res, path):
    """Goodput against N, one panel per D, a line per protocol (the shape of Fig. 6)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    durs = res["durations_s"]
    fig, axes = plt.subplots(1, len(durs), figsize=(5 * len(durs), 3.6), squeeze=False)
    for ax, dur in zip(axes[0], durs):
        for p in PROTOCOLS:
            pts = []
            for n in res["counts"]:
                rs = [r["goodput_mbps"] for r in res["runs"]
                      if r["protocol"] == p and r["n"] == n and r["duration_s"] == dur]
                if rs:
                    pts.append((n, statistics.median(rs)))
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=p)
        ax.set_title(f"D = {dur:g} s: N x {res['offer_per_sender_mbps']:.0f} Mbit/s CBR")
        ax.set_xlabel("senders N")
        ax.set_ylabel("goodput Mbit/s")
        ax.set_ylim(0, res["link_mbps"] * 1.05)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    plot_queue(res, path.replace(".png", "-queue.png"))


def plot_queue(res, path):
    """Fig. 7: the port's queue over time for the largest N with the longest D (round 0),
    (a) the three protocols, (b) DCUDP alone on its own scale."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    dur = max(res["durations_s"])
    n = max(res["counts"])
    runs = {r["protocol"]: r for r in res["runs"] if r["n"] == n and r["duration_s"] == dur
            and r["round"] == 0 and r.get("queue")}
    if not runs:
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.6))
    for p in PROTOCOLS:
        if p in runs:
            q = runs[p]["queue"]
            a.plot([t for t, _ in q], [x / 1000 for _, x in q], lw=0.7, label=p)
    a.axhline(res["buffer_bytes"] / 1000, color="grey", ls=":", lw=0.8, label="buffer")
    a.set_title(f"(a) queue, N = {n}, D = {dur:g} s (1 ms samples)")
    a.set_xlabel("time s")
    a.set_ylabel("queue KB")
    a.legend()
    a.grid(alpha=0.3)
    if "dcudp" in runs:
        q = runs["dcudp"]["queue"]
        b.plot([t for t, _ in q], [x / 1000 for _, x in q], lw=0.7, color="C0")
        late = [x for t, x in q if 0.2 <= t <= dur]
        if late:
            b.set_ylim(0, max(1.0, 1.5 * _pct(late, 0.95) / 1000))
        b.set_title("(b) DCUDP's queue, 0 to 1.5x its 95th percentile after 0.2 s")
        b.set_xlabel("time s")
        b.set_ylabel("queue KB")
        b.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
