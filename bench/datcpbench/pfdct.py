"""bench/run pfdct-incast and pfdct-threshold: PFDCT's headline experiments (pfdct.txt),
scaled from the paper's 1 Gbit/s to 100 Mbit/s: sizes / 10, delays and RTO_min x 10, the
switch buffer kept in packets.

The paper (ns-3): ports of 1 Gbit/s with 100-packet buffers (150 KB), link delay 10 us,
RTO_min 200 us, g = 1/16, DCTCP's K = 20 packets. Here: 100 Mbit/s ports, 150 KB buffers,
RTO_min 2 ms, the long-flow rule's 1 MB scaled to 100 KB (a window of 20 segments as in the
paper). The veth path has no propagation delay, so K_i (Eq. 15) is computed for the RTT the
scaled paper path would have: §4's fat tree crosses up to 6 links each way, 12 x 10 us =
120 us at 1 Gbit/s, 1.2 ms at 100 Mbit/s, where C*RTT is the paper's 10 packets and K_i is
1.4 packets (2.1 KB).

pfdct-incast (§5.2, Fig. 6a / 7a, Table 2): N senders each send one flow of 150 KB (the
paper's 1.5 MB flows / 10) to one receiver, all at once (preconnected); throughput is all
bytes over the time to the last byte, FCT the mean over the N flows. PFDCT (pfdct senders,
PFDCT port: three strict-priority bands, dynamic K_t on the long band) against DCTCP (the
datcp module's DCTCP mode, one band, step marking at K = 20 packets).

pfdct-threshold (§4, Fig. 3-5): PFDCT against PFDCT-ST, the same senders and bands with a
static threshold K = 20 packets (DCTCP's, the paper's initial threshold) instead of K_t.
Many-to-one sessions of 100 KB and 400 KB (the paper's 1 MB and 4 MB / 10), alternating,
from 8 senders to one receiver, Poisson arrivals at 80% of the port; loss rate is the
port's drops over the packets offered to it, delay the mean round trip of a UDP probe
through the port every 10 ms for the whole run (DSCP 0: the long band, where K_t acts).
"""
from __future__ import annotations

import random
import statistics

from . import kernel, runner

PKT = 1500
BUFFER = 100 * PKT           # the paper's 100-packet port buffers
K_STATIC = 20 * PKT          # DCTCP's K and PFDCT-ST's threshold (20 packets)
RTT_US = 1200                # §4's fat-tree round trip (120 us) x 10: K_i by Eq. 15
RTO_MIN_MS = 2               # the paper's 200 us x 10
LONG_BYTES = 100_000         # 3.2.3's 1 MB / 10
INCAST_SIZE = 150_000        # §5.2's 1.5 MB flows / 10
INCAST_COUNTS = [10, 20, 40, 60, 80, 100]
INCAST_COUNTS_SHORT = [10, 20]
THRESHOLD_SIZES = (100_000, 400_000)
THRESHOLD_SENDERS = 8
THRESHOLD_LOAD = 0.8
THRESHOLD_FLOWS = 120
THRESHOLD_FLOWS_SHORT = 30

# (label, bench cc, switch port)
PFDCT_PORT = {"buffer_bytes": BUFFER, "mark": "pfdct", "rtt_us": RTT_US, "preset": "pfdct"}
ST_PORT = {"buffer_bytes": BUFFER, "mark": "step", "k": K_STATIC, "preset": "pfdct"}
DCTCP_PORT = {"buffer_bytes": BUFFER, "mark": "step", "k": K_STATIC}
INCAST_MODES = (("pfdct", "pfdct", PFDCT_PORT), ("dctcp", "dctcp", DCTCP_PORT))
THRESHOLD_MODES = (("pfdct", "pfdct", PFDCT_PORT), ("pfdct-st", "pfdct", ST_PORT))

# The paper's numbers, for the tables. Table 2: mean FCT (s) against the number of flows
# (15 KB flows in its caption, 1500 KB in Fig. 7a's); Fig. 6a gives throughput only as a
# plot ("around 5 MB above DCTCP"). §4 gives its figures in words.
PAPER_TABLE2_FCT_S = {10: (4.166, 4.267), 20: (3.774, 3.810), 30: (3.243, 3.185),
                      40: (2.724, 2.658), 50: (2.433, 2.367), 60: (2.346, 2.295),
                      70: (2.412, 2.300), 80: (2.441, 2.324), 90: (2.364, 2.300),
                      100: (2.440, 2.305)}   # N: (DCTCP, PFDCT)
PAPER_SEC4 = ("PFDCT loss 0 in steady transfer (at most 0.002%), PFDCT-ST more, below 0.01%; "
              "PFDCT's mean delay 50% below PFDCT-ST's")


def _check_kmod():
    if not kernel.available():
        raise SystemExit(f"pfdct scenarios need {kernel.DATCPCTL} (make -C kmod)")


def _base(scenario, switch, link_mbps):
    return {"scenario": scenario, "link_mbps": link_mbps, "switch": dict(switch),
            "rto_min_ms": RTO_MIN_MS, "pfdct_long_bytes": LONG_BYTES, "flows": []}


def _classes(r):
    """How PFDCT's senders classified the run's flows, and what the egress program did
    (its counters run from the load: per run, unless pfdct was loaded before the run)."""
    st = r.get("pfdct") or {}
    addrs = {f["addr"] for f in r["flows"]}
    flows = [f for f in st.get("flows") or [] if f["src"] in addrs]
    return {"long_flows": sum(f["class"] == "long" for f in flows),
            "short_flows": sum(f["class"] == "short" for f in flows if f["bytes_acked"] > 0),
            "tx": st.get("tx")}


def _port(r):
    sw = r["switch"]
    offered = (sw.get("packets") or 0) + (sw.get("drops") or 0)
    return {"drops": sw.get("drops"), "marks": sw.get("marks"), "packets": sw.get("packets"),
            "loss_pct": round(100.0 * (sw.get("drops") or 0) / offered, 4) if offered else None,
            "peak_queue_bytes": sw.get("peak_queue_bytes")}


# ---------------------------------------------------------------- §5.2 incast

def incast_spec(n, switch, link_mbps=100):
    s = _base("incast:pfdct", switch, link_mbps)
    s["flows"] = [{"id": f"n={n}/s{i}", "src": i, "size_bytes": INCAST_SIZE, "preconnect": True,
                   "group": f"n={n}", "start_s": 0.0} for i in range(n)]
    s.update(duration_s=4.0 * n * INCAST_SIZE * 8 / (link_mbps * 1e6) + 10, tail_s=0.2)
    return s


def run_incast(link_mbps=100, short=False, rounds=1, counts=None):
    _check_kmod()
    counts = counts or (INCAST_COUNTS_SHORT if short else INCAST_COUNTS)
    res = {"scenario": "pfdct-incast", "link_mbps": link_mbps, "buffer_bytes": BUFFER,
           "flow_bytes": INCAST_SIZE, "rto_min_ms": RTO_MIN_MS, "counts": counts,
           "rounds": rounds, "modes": [m for m, _, _ in INCAST_MODES], "runs": []}
    for n in counts:
        for label, cc, port in INCAST_MODES:
            for rnd in range(rounds):
                r = runner.run_spec(incast_spec(n, port, link_mbps), cc)
                fcts = [f["fct_s"] for f in r["flows"]]
                done = [x for x in fcts if x is not None]
                res["runs"].append(dict(
                    mode=label, n=n, round=rnd, finished=len(done),
                    throughput_mbps=r["summary"]["goodput_mbps"].get(str(n), 0.0),
                    mean_fct_s=round(statistics.mean(done), 4) if done else None,
                    max_fct_s=round(max(done), 4) if done else None,
                    **_port(r), **({"pfdct": _classes(r)} if cc == "pfdct" else {})))
    return res


# ---------------------------------------------------------------- §4 static vs dynamic

def threshold_spec(switch, n_flows, seed, link_mbps=100):
    """Poisson arrivals at THRESHOLD_LOAD of the port; sizes alternate 100 KB / 400 KB;
    each session from a random one of the senders."""
    rng = random.Random(seed)
    mean_bits = 8 * sum(THRESHOLD_SIZES) / len(THRESHOLD_SIZES)
    rate = THRESHOLD_LOAD * link_mbps * 1e6 / mean_bits   # sessions per second
    s = _base("pfdct-threshold", switch, link_mbps)
    t = 0.0
    for i in range(n_flows):
        t += rng.expovariate(rate)
        s["flows"].append({"id": f"f{i}", "src": rng.randrange(THRESHOLD_SENDERS),
                           "size_bytes": THRESHOLD_SIZES[i % len(THRESHOLD_SIZES)],
                           "start_s": round(t, 4), "class": str(THRESHOLD_SIZES[i % 2])})
    s.update(duration_s=t + 20, tail_s=0.2, delay_probe_s=0.01)
    return s


def run_threshold(link_mbps=100, short=False, rounds=1, seed=1):
    _check_kmod()
    n_flows = THRESHOLD_FLOWS_SHORT if short else THRESHOLD_FLOWS
    res = {"scenario": "pfdct-threshold", "link_mbps": link_mbps, "buffer_bytes": BUFFER,
           "k_static_bytes": K_STATIC, "rtt_us_for_k_i": RTT_US, "flows": n_flows,
           "load": THRESHOLD_LOAD, "rounds": rounds,
           "modes": [m for m, _, _ in THRESHOLD_MODES], "runs": []}
    for rnd in range(rounds):
        for label, cc, port in THRESHOLD_MODES:
            r = runner.run_spec(threshold_spec(port, n_flows, seed + rnd, link_mbps), cc)
            done = [f for f in r["flows"] if f["fct_s"] is not None]
            by_size = {str(sz): [f["fct_s"] for f in done if f["size_bytes"] == sz]
                       for sz in THRESHOLD_SIZES}
            probe = r.get("delay_probe") or {}
            res["runs"].append(dict(
                mode=label, round=rnd, seed=seed + rnd, finished=len(done),
                mean_fct_s=round(statistics.mean(f["fct_s"] for f in done), 4) if done else None,
                mean_fct_by_size_s={k: round(statistics.mean(v), 4) if v else None
                                    for k, v in by_size.items()},
                delay_mean_ms=probe.get("mean_ms"), delay_p99_ms=probe.get("p99_ms"),
                probe_lost=probe.get("lost"), probe_sent=probe.get("sent"),
                k_t_end_bytes=(r["switch"].get("ports") or {}).get("r0", {}).get("pfdct_k_t")
                if port["mark"] == "pfdct" else None,
                **_port(r), pfdct=_classes(r)))
    return res


# ---------------------------------------------------------------- output

def _med(rs, key):
    xs = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def _f(x, fmt):
    return format(x, fmt) if x is not None else "-"


def table(res):
    if res["scenario"] == "pfdct-incast":
        lines = [f"pfdct-incast (PFDCT §5.2): N x {res['flow_bytes'] // 1000} KB into "
                 f"{res['link_mbps']} Mbit/s, buffer {res['buffer_bytes'] // 1000} KB, RTO_min "
                 f"{res['rto_min_ms']} ms; medians of {res['rounds']} round(s); paper: Table 2 "
                 f"mean FCT in s (1 Gbit/s, ns-3)",
                 f"{'N':>4} {'thr pfdct':>10} {'thr dctcp':>10} {'FCT pfdct':>10} {'FCT dctcp':>10}"
                 f" {'loss% pfdct':>11} {'loss% dctcp':>11} {'long':>5} {'paper FCT dctcp/pfdct':>22}"]
        for n in res["counts"]:
            p = [r for r in res["runs"] if r["n"] == n and r["mode"] == "pfdct"]
            d = [r for r in res["runs"] if r["n"] == n and r["mode"] == "dctcp"]
            paper = PAPER_TABLE2_FCT_S.get(n)
            longs = max((r["pfdct"]["long_flows"] for r in p), default=None)
            lines.append(f"{n:>4} {_f(_med(p, 'throughput_mbps'), '10.1f')} "
                         f"{_f(_med(d, 'throughput_mbps'), '10.1f')} "
                         f"{_f(_med(p, 'mean_fct_s'), '10.3f')} {_f(_med(d, 'mean_fct_s'), '10.3f')} "
                         f"{_f(_med(p, 'loss_pct'), '11.3f')} {_f(_med(d, 'loss_pct'), '11.3f')} "
                         f"{_f(longs, '5d')} "
                         f"{(f'{paper[0]:.3f} / {paper[1]:.3f}' if paper else '-'):>22}")
        lines.append("throughput Mbit/s, FCT s; long: flows PFDCT's senders classified long")
        return "\n".join(lines)
    lines = [f"pfdct-threshold (PFDCT §4): {res['flows']} sessions of 100/400 KB from 8 senders at "
             f"{int(100 * res['load'])}% of {res['link_mbps']} Mbit/s, buffer "
             f"{res['buffer_bytes'] // 1000} KB; K_i from RTT {res['rtt_us_for_k_i']} us; "
             f"PFDCT-ST K = {res['k_static_bytes']} B; medians of {res['rounds']} round(s)",
             f"{'mode':>9} {'loss %':>8} {'delay ms':>9} {'p99 ms':>7} {'FCT s':>7} "
             f"{'FCT 100K':>9} {'FCT 400K':>9} {'marks':>7} {'long':>5}"]
    for m in res["modes"]:
        rs = [r for r in res["runs"] if r["mode"] == m]
        f100 = statistics.median([r["mean_fct_by_size_s"]["100000"] for r in rs
                                  if r["mean_fct_by_size_s"]["100000"] is not None] or [0])
        f400 = statistics.median([r["mean_fct_by_size_s"]["400000"] for r in rs
                                  if r["mean_fct_by_size_s"]["400000"] is not None] or [0])
        longs = _med([dict(x=r["pfdct"]["long_flows"]) for r in rs], "x")
        lines.append(f"{m:>9} {_f(_med(rs, 'loss_pct'), '8.3f')} "
                     f"{_f(_med(rs, 'delay_mean_ms'), '9.3f')} {_f(_med(rs, 'delay_p99_ms'), '7.2f')} "
                     f"{_f(_med(rs, 'mean_fct_s'), '7.3f')} {f100:>9.3f} {f400:>9.3f} "
                     f"{_f(_med(rs, 'marks'), '7.0f')} {_f(longs, '5.0f')}")
    lines.append(f"paper (1 Gbit/s, ns-3): {PAPER_SEC4}")
    return "\n".join(lines)


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if res["scenario"] == "pfdct-incast":
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
        for m in res["modes"]:
            ns = [n for n in res["counts"] if any(r["n"] == n and r["mode"] == m for r in res["runs"])]
            rs = lambda n: [r for r in res["runs"] if r["n"] == n and r["mode"] == m]  # noqa: E731
            axes[0].plot(ns, [_med(rs(n), "throughput_mbps") for n in ns], marker="o", label=m)
            axes[1].plot(ns, [_med(rs(n), "mean_fct_s") for n in ns], marker="o", label=m)
        pn = sorted(PAPER_TABLE2_FCT_S)
        ax2 = axes[1].twinx()
        ax2.plot(pn, [PAPER_TABLE2_FCT_S[n][0] for n in pn], ls="--", color="gray",
                 label="paper DCTCP (right axis)")
        ax2.plot(pn, [PAPER_TABLE2_FCT_S[n][1] for n in pn], ls=":", color="black",
                 label="paper PFDCT (right axis)")
        ax2.set_ylabel("paper's FCT s (Table 2)")
        ax2.legend(loc="upper right", fontsize=7)
        axes[0].set_title(f"§5.2 incast: N x {res['flow_bytes'] // 1000} KB")
        axes[0].set_xlabel("senders N")
        axes[0].set_ylabel("throughput Mbit/s")
        axes[0].set_ylim(0, res["link_mbps"] * 1.05)
        axes[1].set_title("mean FCT")
        axes[1].set_xlabel("senders N")
        axes[1].set_ylabel("FCT s (here)")
        for ax in axes:
            ax.grid(alpha=0.3)
            ax.legend(loc="upper left", fontsize=8)
    else:
        fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
        for ax, key, title in zip(axes, ("loss_pct", "delay_mean_ms", "mean_fct_s"),
                                  ("loss %", "mean delay ms (UDP probe)", "mean FCT s")):
            vals = [_med([r for r in res["runs"] if r["mode"] == m], key) or 0 for m in res["modes"]]
            ax.bar(res["modes"], vals, color=["tab:blue", "tab:orange"])
            ax.set_title(title)
            ax.grid(alpha=0.3, axis="y")
        fig.suptitle("§4: PFDCT (dynamic K_t) vs PFDCT-ST (static K)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
