"""bench/run fqcn-fairness: FQCN §IV-A (fqcn.txt, Fig. 2 against Fig. 3), four simultaneous
CBR sources into one drop-tail port, QCN against FQCN; with --staggered the section's second
experiment (Fig. 4): eight sources started one after another, four of them ending early.

The paper: four UDP CBR sources on 10 Gbit/s links through edge switches to one core switch,
drop-tail, a 150000 B buffer, Q_eq 16 packets, 0.5 s; QCN leaves the four at very
different rates (Fig. 2), FQCN gives near-equal shares and the queue converges to Q_eq in
about 10 ms (Fig. 3). Here: the bench's star (topo.Testbed, 4 senders, 1 receiver) with the
receiver's switch port a plain drop-tail port (HTB at the link rate + bfifo of 150000 B),
fqcn-cp on it (fqcn/), Q_eq 24000 B (16 frames), each source fqcn-cbr at the link rate with
its reaction point. The rates of 802.1Qau's reaction point (R_AI 5 Mbit/s, R_HAI 50 Mbit/s,
min 5 Mbit/s) are scaled by link / 10 Gbit/s; its bytes and times are not, so the byte
counter's cycles last 100x the paper's and the run lasts seconds, not 0.5 s. Shares are
measured over the second half of each run; Jain's index J = (sum x)^2 / (n sum x^2) is 1
for equal shares and 1/n when one source has all; "Jain/bin" is its mean over the 100 ms
bins of that half, which also catches sources that are equal on average but swap places.

Staggered (§IV-A: eight sources start 0.1 s apart, four end at 0.8 s and four at 1 s, over a
1 s run): the same schedule in tenths of the run, D = 20 s here (10 s with --short), since
the reaction point's byte counter keeps its standard bytes and converges about 100x slower
than in the paper. The paper does not say which four end first; here the four that started
first. Shares and Jain's index are taken in two phases: all eight sending (the last tenth
before 0.8 D, after the last start) and the four late ones alone (the last tenth of the run).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time

from .netns import Cleanup, install_signal_handlers, kill_procs, log, reap_stale
from .topo import Testbed

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FQCN_BUILD = os.path.join(REPO, "fqcn", "build")
BUFFER = 150_000           # §IV-A: 100 packets of 1500 B
Q_EQ = 24_000              # §IV-A: 16 packets
SOURCES = 4
STAGGERED_SOURCES = 8
MODES = ("qcn", "fqcn")
PORT = 9000
BIN_MS = 100               # goodput bins of the sink


def _rp_args(link_mbps):
    """802.1Qau's reaction point rates scaled from 10 Gbit/s to the link (kbit/s)."""
    scale = link_mbps / 10_000
    return ["--rp", "--r-ai-kbit", str(max(1, round(5_000 * scale))),
            "--r-hai-kbit", str(max(1, round(50_000 * scale))),
            "--min-rate-kbit", str(max(1, round(5_000 * scale)))]


def jain(xs):
    s, s2 = sum(xs), sum(x * x for x in xs)
    return round(s * s / (len(xs) * s2), 4) if s2 else 0.0


def binned_jain(series, lo_ms, hi_ms):
    """Mean over the 100 ms bins in [lo, hi) of Jain's index across the sources: rates that
    are equal on average but wander apart (sources swapping places) score below 1 here."""
    bins = {}
    for pts in series.values():
        for t, v in pts:
            if lo_ms <= t < hi_ms:
                bins.setdefault(round(t / BIN_MS), []).append(v)
    js = [jain(v) for v in bins.values() if len(v) == len(series)]
    return round(statistics.mean(js), 4) if js else 0.0


def _kv(text):
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition("=")
        if v and " " not in k:
            out[k] = v
    return out


def _fields(line):
    return dict(p.split("=", 1) for p in line.split()[1:] if "=" in p)


def spawn(cmd):
    """Start a tool with its stdout in a file, read when it ends (collect): a pipe nobody reads
    during the run holds 64 KB, which a long run's lines (one per sample) fill, and the tool
    then stalls in write."""
    out = tempfile.TemporaryFile("w+")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, text=True)
    p.out_file = out
    return p


def collect(p, timeout):
    """(stdout, stderr) of a tool started by spawn, once it ends."""
    _, err = p.communicate(timeout=timeout)
    p.out_file.seek(0)
    text = p.out_file.read()
    p.out_file.close()
    return text, err


def schedule(sources, staggered, duration_s):
    """Each source's (start, end) in s from the first start: all over the whole run, or
    §IV-A's staggered starts a tenth of the run apart with the first half ending at 0.8 of it."""
    if not staggered:
        return [(0.0, duration_s)] * sources
    step = duration_s / 10
    return [(i * step, duration_s * (0.8 if i < sources // 2 else 1.0)) for i in range(sources)]


def phases(sources, staggered, duration_s):
    """(name, from s, to s, sources sending) over which shares are measured."""
    if not staggered:
        return [("all", duration_s / 2, duration_s, list(range(sources)))]
    step = duration_s / 10
    return [(f"all {sources}", 0.8 * duration_s - step, 0.8 * duration_s, list(range(sources))),
            (f"last {sources - sources // 2}", duration_s - step, duration_s,
             list(range(sources // 2, sources)))]


def _one(mode, link_mbps, duration_s, staggered=False):
    """One run: the sources, the congestion point in `mode`; per-source goodput series."""
    sources = STAGGERED_SOURCES if staggered else SOURCES
    times = schedule(sources, staggered, duration_s)
    install_signal_handlers()
    reap_stale()
    cleanup = Cleanup()
    procs = []
    ms = int(duration_s * 1000)
    try:
        tb = Testbed(sources, 1, link_mbps, {"buffer_bytes": BUFFER, "plain_tc": True}, cleanup).up()
        cleanup.push(kill_procs, procs)
        rx = tb.receivers[0]
        t_sink = time.monotonic()
        sink = spawn(["ip", "netns", "exec", rx, f"{FQCN_BUILD}/fqcn-sink",
                      "--port", str(PORT), "--duration-ms", str(ms + 1500),
                      "--interval-ms", str(BIN_MS)])
        t_cp = time.monotonic()
        cp = spawn(["ip", "netns", "exec", tb.sw, f"{FQCN_BUILD}/fqcn-cp",
                    "--port", "r0", "--in", ",".join(f"s{i}" for i in range(sources)),
                    "--q-eq-bytes", str(Q_EQ), "--mode", mode,
                    "--duration-ms", str(ms + 1000), "--log"])
        procs += [sink, cp]
        time.sleep(0.3)
        t0 = time.monotonic()
        srcs = []
        for i, ns in enumerate(tb.senders):
            start, end = times[i]
            time.sleep(max(0.0, t0 + start - time.monotonic()))
            srcs.append(spawn(
                ["nice", "-n", "-15", "ip", "netns", "exec", ns, f"{FQCN_BUILD}/fqcn-cbr",
                 "--dst", tb.receiver_ip(0), "--dst-port", str(PORT),
                 "--src-port", str(5001 + i), "--rate-mbit", str(link_mbps),
                 "--duration-ms", str(int((end - start) * 1000)), "--log-ms", str(BIN_MS),
                 *_rp_args(link_mbps)]))
            procs.append(srcs[-1])
        s_out = [collect(p, duration_s + 30) for p in srcs]
        c_out = collect(cp, 30)
        k_out = collect(sink, 30)
    finally:
        cleanup.run()
    bad = [p.args[-1] for p in procs if p.returncode != 0]
    if bad:
        errs = "; ".join(e.strip() for _, e in s_out + [c_out, k_out] if e.strip())
        raise RuntimeError(f"fqcn-fairness {mode}: a tool failed: {errs}")
    series = {}
    for line in k_out[0].splitlines():
        if line.startswith("rx "):
            f = _fields(line)
            # times from the sources' start
            series.setdefault(f["src"], []).append((int(f["t_ms"]) - (t0 - t_sink) * 1000,
                                                    float(f["mbit"])))
    queue = [(float(f["t_ms"]) - (t0 - t_cp) * 1000, int(f["q"]))
             for f in (_fields(x) for x in c_out[0].splitlines() if x.startswith("sample "))]
    cps = _kv(c_out[0])
    measured = []
    for name, lo_s, hi_s, active in phases(sources, staggered, duration_s):
        lo, hi = lo_s * 1000, hi_s * 1000
        # the sink names a source by its port (5001 + i)
        shares = {src: round(statistics.mean(v for t, v in pts if lo <= t < hi), 2)
                  for src, pts in sorted(series.items())
                  if int(src.rsplit(":", 1)[-1]) - 5001 in active
                  and any(lo <= t < hi for t, _ in pts)}
        q = [x for t, x in queue if lo <= t < hi]
        measured.append({"phase": name, "from_s": lo_s, "to_s": hi_s, "shares_mbps": shares,
                         "jain": jain(list(shares.values())) if len(shares) == len(active)
                         else 0.0,
                         "total_mbps": round(sum(shares.values()), 2),
                         "q_mean_late_bytes": round(statistics.mean(q)) if q else None,
                         "q_median_late_bytes": round(statistics.median(q)) if q else None})
    return dict(mode=mode, phases=measured, schedule_s=times,
                cnms=int(cps.get("cnms", 0)), port_drops=int(cps.get("port_drops", 0)),
                cnms_per_source=[int(_kv(o).get("cnms", 0)) for o, _ in s_out],
                series=series, queue=queue)


def run(link_mbps=100, rounds=1, duration_s=10.0, modes=MODES, staggered=False):
    for b in ("fqcn-cp", "fqcn-cbr", "fqcn-sink"):
        if not os.access(os.path.join(FQCN_BUILD, b), os.X_OK):
            raise SystemExit(f"fqcn-fairness needs {FQCN_BUILD}/{b} (make -C fqcn)")
    res = {"scenario": "fqcn-fairness", "link_mbps": link_mbps, "buffer_bytes": BUFFER,
           "q_eq_bytes": Q_EQ, "staggered": staggered,
           "sources": STAGGERED_SOURCES if staggered else SOURCES, "duration_s": duration_s,
           "rounds": rounds, "rp_args": _rp_args(link_mbps), "runs": []}
    for rnd in range(rounds):
        for mode in modes:
            log(f"fqcn-fairness: {mode} round {rnd}")
            res["runs"].append(dict(_one(mode, link_mbps, duration_s, staggered), round=rnd))
    return res


def table(res):
    how = ("staggered as in §IV-A's Fig. 4 (starts a tenth of the run apart, the first half "
           "ending at 0.8 of it)" if res["staggered"] else "all for the whole run")
    lines = [f"fqcn-fairness: {res['sources']} CBR sources at {res['link_mbps']} Mbit/s into one "
             f"{res['link_mbps']} Mbit/s drop-tail port, buffer {res['buffer_bytes']} B, "
             f"Q_eq {res['q_eq_bytes']} B; sources {how}; {res['duration_s']:g} s runs",
             f"{'mode':>5} {'round':>5} {'phase':>7} {'window s':>11} "
             f"{'shares Mbit/s (per source)':>34} {'Jain':>6} {'Jain/bin':>8} {'total':>6} "
             f"{'queue KB (median)':>18} {'CNMs':>6} {'drops':>6}"]
    for r in res["runs"]:
        for ph in r["phases"]:
            sh = " ".join(f"{v:6.1f}" for v in ph["shares_mbps"].values())
            q = ph["q_median_late_bytes"]
            active = {s: pts for s, pts in r["series"].items() if s in ph["shares_mbps"]}
            jb = binned_jain(active, ph["from_s"] * 1000, ph["to_s"] * 1000)
            window = f"{ph['from_s']:g}-{ph['to_s']:g}"
            lines.append(f"{r['mode']:>5} {r['round']:>5} {ph['phase']:>7} {window:>11} "
                         f"{sh:>34} {ph['jain']:>6.3f} {jb:>8.3f} {ph['total_mbps']:>6.1f} "
                         f"{(q or 0) / 1000:>18.1f} {r['cnms']:>6} {r['port_drops']:>6}")
    for mode in dict.fromkeys(r["mode"] for r in res["runs"]):
        for i, ph in enumerate(res["runs"][0]["phases"]):
            js = [r["phases"][i]["jain"] for r in res["runs"] if r["mode"] == mode]
            lines.append(f"{mode}: Jain's index ({ph['phase']}) median "
                         f"{statistics.median(js):.3f} (min {min(js):.3f}, max {max(js):.3f}) "
                         f"over {len(js)} run(s)")
    return "\n".join(lines)


def plot(res, path):
    """Per mode (first round): each source's goodput and the queue against Q_eq (Fig. 2, 3)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = [r for r in res["runs"] if r["round"] == 0]
    fig, axes = plt.subplots(2, len(runs), figsize=(5.5 * len(runs), 6), squeeze=False)
    for col, r in enumerate(runs):
        ax = axes[0][col]
        for src, pts in sorted(r["series"].items()):
            ax.plot([t / 1000 for t, _ in pts], [v for _, v in pts], label=src, lw=1)
        jains = ", ".join(f"{ph['phase']} {ph['jain']:.3f}" for ph in r["phases"])
        ax.set_title(f"{r['mode'].upper()}: goodput per source (Jain {jains})")
        ax.set_xlabel("time s")
        ax.set_ylabel("Mbit/s")
        ax.set_xlim(0, res["duration_s"])
        ax.set_ylim(0, res["link_mbps"] * 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax = axes[1][col]
        ax.plot([t / 1000 for t, _ in r["queue"]], [q / 1000 for _, q in r["queue"]], lw=0.6)
        ax.axhline(res["q_eq_bytes"] / 1000, color="red", ls="--", label="Q_eq")
        ax.set_title(f"{r['mode'].upper()}: queue at the congestion point's samples")
        ax.set_xlabel("time s")
        ax.set_ylabel("KB")
        ax.set_xlim(0, res["duration_s"])
        ax.set_ylim(0, res["buffer_bytes"] / 1000)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
