"""``bench/run diagnose --out DIR``: why deadline flows miss, per flow and per run, from
the run files of ``bench/run SCENARIO --runs N --kernel-trace SEC`` (issue 22 item 2).

Per deadline flow: the rate it needed at its start (size / D) and over time (bytes
left / time left), the rate it got, what the other deadline flows and the background
(endless) flows got while it ran, the kernel's urgency, precedence and b for it and
for the background flows (from ``kernel_trace``), quench orders, and whether its batch
was feasible at all: preemptive EDF on the link (flows of one batch start together, so
flow i can meet iff the bytes of the batch's flows with deadline <= D_i fit in
C * D_i), with C the whole link's goodput and with 70 % of it (background keeping the
30 % issue 22 asks for). Writes DIR/diagnosis/<run>.json, DIR/diagnosis/<run>.png and
DIR/DIAGNOSIS.md (misses per class and cause, per label)."""
from __future__ import annotations

import json
import os
import statistics

from .runner import series
from .stats import GOODPUT_FRACTION, flow_active_span, load_runs, run_file

BIN = 0.1
# share of the link goodput the background keeps in the feasibility test (issue 22 §4)
BG_KEEP = 0.3
CAUSES = ("infeasible", "quenched", "infeasible_bg30", "bg_not_yielding",
          "late_start", "other")
CAUSE_TEXT = {
    "infeasible": "batch infeasible: EDF on the whole link misses it",
    "quenched": "quenched (suspended or killed) by the kernel",
    "infeasible_bg30": "feasible only if background gets < 30 % of the link",
    "bg_not_yielding": "background took more than the batch's slack while it ran",
    "late_start": "first second below half the needed rate, then not recovered",
    "other": "none of the above",
}


def edf_feasible(batch, fid, capacity_bps):
    """Preemptive EDF on one link, all flows released together: flow fid meets iff the
    bits of the flows with deadline <= its own fit in capacity * D."""
    f = next(x for x in batch if x["id"] == fid)
    bits = sum(8 * x["size_bytes"] for x in batch if x["deadline_s"] <= f["deadline_s"])
    return bits <= capacity_bps * f["deadline_s"]


def _bins(a, b):
    return range(max(0, int(a / BIN + 1e-9)), max(0, int(b / BIN - 1e-9)) + 1)


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def need_series(f, T):
    """Rate needed (Mbit/s) per 100 ms bin from the flow's start to its deadline: bits
    left at the bin's start over the time left to the deadline."""
    s = series(f, T)
    t_dl = f["start_s"] + f["deadline_s"]
    got = 0.0
    out = []
    for i in _bins(f["start_s"], min(t_dl, T)):
        t = i * BIN
        left = max(0.0, 8 * f["size_bytes"] - got * 1e6 * BIN)
        if t < t_dl and left > 0:
            out.append((round(t, 2), round(left / (t_dl - t) / 1e6, 2)))
        if i < len(s):
            got += s[i]
    return out


def kernel_track(r, fid):
    """[(t_s, urgency, precedence, b, quench)] of one flow from the run's kernel trace."""
    return [(e["t_s"], e.get("urgency"), e.get("precedence"), e.get("b"), e.get("quench"))
            for e in r.get("kernel_trace", []) if e["id"] == fid]


def quench_times(r):
    """{flow id: [t_s of each quench order]} from the run's kernel events."""
    by_addr = {f.get("addr"): f["id"] for f in r["flows"] if f.get("addr")}
    out = {}
    for e in r.get("events", []):
        if e.get("event") == "quench" and e.get("src") in by_addr:
            out.setdefault(by_addr[e["src"]], []).append(e.get("t_s"))
    return out


def ratio(a, b):
    """a / b rounded, None when b is 0 (the background would have to stop)."""
    return round(a / b, 2) if b > 0 else None


def flow_diag(r, f, quenches):
    T = r.get("duration_s") or 0.0
    C = GOODPUT_FRACTION * r["link_mbps"] * 1e6
    batch = [x for x in r["flows"] if x["deadline_s"] is not None
             and x["start_s"] == f["start_s"]]
    a, end = flow_active_span(f)
    t_dl = f["start_s"] + f["deadline_s"]
    w_end = min(end, t_dl)   # while it could still meet
    bins = [i for i in _bins(a, w_end) if i * BIN < w_end]
    bg = [x for x in r["flows"] if x["size_bytes"] is None]
    others = [x for x in r["flows"] if x["deadline_s"] is not None and x is not f]
    own = series(f, T)
    bg_sum = [sum(v) for v in zip(*(series(x, T) for x in bg))] if bg else [0.0] * len(own)
    oth_sum = [sum(v) for v in zip(*(series(x, T) for x in others))] if others else \
        [0.0] * len(own)
    sel = [i for i in bins if i < len(own)]
    need0 = 8 * f["size_bytes"] / f["deadline_s"] / 1e6
    got_by_dl = sum(own[i] for i in sel) * 1e6 * BIN / 8
    first_s = [own[i] for i in sel[:10]]
    d = {"id": f["id"], "class": f.get("class"), "start_s": f["start_s"],
         "size_mb": round(f["size_bytes"] / 1e6, 3), "deadline_s": f["deadline_s"],
         "k": round(f["deadline_s"] * r["link_mbps"] * 1e6 / (8 * f["size_bytes"]), 2),
         "met": f["met"], "fct_s": f["fct_s"],
         "late_s": round(f["fct_s"] - f["deadline_s"], 3) if f["fct_s"] is not None else None,
         "need_mbps": round(need0, 2),
         "got_mbps_to_deadline": round(_mean([own[i] for i in sel]) or 0.0, 2),
         "got_mbps_first_s": round(_mean(first_s) or 0.0, 2),
         "bytes_by_deadline_frac": round(min(1.0, got_by_dl / f["size_bytes"]), 3),
         "bg_mbps_during": round(_mean([bg_sum[i] for i in sel]) or 0.0, 2),
         "other_deadline_mbps_during": round(_mean([oth_sum[i] for i in sel]) or 0.0, 2),
         "batch_need_mbps": round(sum(8 * x["size_bytes"] / x["deadline_s"] / 1e6
                                      for x in batch), 2),
         # what the background could take with every flow of the batch at its need
         "slack_mbps": round(C / 1e6 - sum(8 * x["size_bytes"] / x["deadline_s"] / 1e6
                                           for x in batch), 2),
         "edf_feasible": edf_feasible(batch, f["id"], C),
         # Eq. 5 shares: the flow's rate over one background flow's, needed when the
         # background gets exactly the batch's slack, and got
         "ratio_needed": ratio(need0, max(0.0, C / 1e6 - sum(
             8 * x["size_bytes"] / x["deadline_s"] / 1e6 for x in batch)) / len(bg))
         if bg else None,
         "ratio_got": ratio(_mean([own[i] for i in sel]) or 0.0,
                            (_mean([bg_sum[i] for i in sel]) or 0.0) / len(bg)) if bg else None,
         "edf_feasible_bg30": edf_feasible(batch, f["id"], (1 - BG_KEEP) * C),
         "suspended": f.get("suspended", 0), "killed": f.get("killed", False),
         "quench_t_s": quenches.get(f["id"], [])}
    d["batch_met"] = sum(1 for x in batch if x["met"])
    if d["quench_t_s"]:
        # the batch's flows still sending at the first quench, by the rate they then
        # needed (bits left / time left; None once past their deadline): which one
        # Algorithm 2 picked among them
        tq = d["quench_t_s"][0]
        at = {}
        for x in batch:
            xa, xb = flow_active_span(x)
            if xa <= tq < xb:
                ns = [v for t_, v in need_series(x, T) if t_ <= tq]
                at[x["id"]] = ns[-1] if ns and x["start_s"] + x["deadline_s"] > tq else None
        d["need_mbps_at_quench"] = at
    track = [e for e in kernel_track(r, f["id"]) if a <= e[0] < w_end]
    if track:
        us = [e[1] for e in track if e[1] is not None]
        d["urgency_max"] = max(us) if us else None
        d["urgency_mean"] = round(_mean(us), 3) if us else None
        d["t_urgency_2_s"] = next((round(e[0] - a, 2) for e in track
                                   if e[1] is not None and e[1] >= 2), None)
        d["b_mean"] = round(_mean([e[3] for e in track]) or 0, 3)
        bg_tracks = [e for x in bg for e in kernel_track(r, x["id"]) if a <= e[0] < w_end]
        d["bg_b_mean"] = round(_mean([e[3] for e in bg_tracks]) or 0, 3) if bg_tracks else None
    if not f["met"]:
        d["cause"] = cause(d)
    return d


def cause(d):
    """The first that applies, in the order of CAUSES (see CAUSE_TEXT)."""
    if not d["edf_feasible"]:
        return "infeasible"
    if d["suspended"] or d["killed"]:
        return "quenched"
    if not d["edf_feasible_bg30"]:
        return "infeasible_bg30"
    if d["bg_mbps_during"] > max(0.0, d["slack_mbps"]):
        return "bg_not_yielding"
    if d["got_mbps_first_s"] < 0.5 * d["need_mbps"]:
        return "late_start"
    return "other"


def run_diag(r):
    q = quench_times(r)
    return {"scenario": r["scenario"], "label": r.get("label", r["cc"]), "seed": r.get("seed"),
            "flows": [flow_diag(r, f, q) for f in r["flows"] if f["deadline_s"] is not None
                      and f.get("size_bytes")]}


def kernel_mode(r):
    """The datcp mode a run's cc ran in (None for cubic, bbr, reno)."""
    from .kernel import CCS
    return CCS.get(r["cc"], (None, None, None))[1]


CLASS_COLOR = {"lax": "tab:green", "moderate": "tab:orange", "tight": "tab:red"}


def plot_run(r, diag, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    T = r.get("duration_s") or 0.0
    t = [i * BIN for i in range(int(T / BIN) + 1)]
    bg = [x for x in r["flows"] if x["size_bytes"] is None]
    dl = [x for x in r["flows"] if x["deadline_s"] is not None and x.get("size_bytes")]
    has_k = bool(r.get("kernel_trace"))
    fig, axes = plt.subplots(3 if has_k else 1, 1, figsize=(18, 10 if has_k else 4.5),
                             sharex=True, squeeze=False)
    ax = axes[0][0]
    if bg:
        ax.fill_between(t, [sum(v) for v in zip(*(series(x, T) for x in bg))], color="0.8",
                        label="background (sum)")
    by_id = {d["id"]: d for d in diag["flows"]}
    for f in dl:
        c = CLASS_COLOR.get(f.get("class"), "tab:blue")
        s = series(f, T)
        a, b = flow_active_span(f)
        idx = list(_bins(a, b))
        ax.plot([i * BIN for i in idx if i < len(s)], [s[i] for i in idx if i < len(s)],
                color=c, lw=0.9)
        ns = need_series(f, T)
        ax.plot([x[0] for x in ns], [min(x[1], 100) for x in ns], color=c, lw=0.8, ls="--")
        t_dl = f["start_s"] + f["deadline_s"]
        ax.plot([t_dl], [2], marker="o" if f["met"] else "x", color=c, ms=7, mew=2)
        for tq in by_id[f["id"]]["quench_t_s"]:
            for row in axes:
                row[0].axvline(tq, color=c, ls=":", lw=1)
    ax.set_ylabel("Mbit/s (solid got, dashed needed)")
    ax.set_ylim(0, r["link_mbps"] * 1.05)
    met = sum(1 for f in dl if f["met"])
    ax.set_title(f"{r['scenario']} {r.get('label', r['cc'])} seed {r.get('seed')}: "
                 f"{met}/{len(dl)} met (o met, x missed at the deadline; dotted: quench)")
    handles = [plt.Line2D([], [], color=c, label=k) for k, c in CLASS_COLOR.items()]
    ax.legend(handles=handles + [plt.Rectangle((0, 0), 1, 1, color="0.8", label="background")],
              loc="upper right", ncol=4, fontsize=8)
    if has_k:
        # datcp: P = U at phi 0 (Algorithm 1); pd2tcp: the penalty exponent p, b = alpha^p / 2
        for row, key, lab in ((1, 2, "precedence P"), (2, 3, "b")):
            axk = axes[row][0]
            for f in dl:
                a, b = flow_active_span(f)   # the entry outlives the flow until its socket closes
                tr = [e for e in kernel_track(r, f["id"]) if e[key] is not None and a <= e[0] <= b]
                axk.plot([e[0] for e in tr], [e[key] for e in tr], lw=0.9,
                         color=CLASS_COLOR.get(f.get("class"), "tab:blue"))
            for x in bg:
                tr = [e for e in kernel_track(r, x["id"]) if e[key] is not None]
                axk.plot([e[0] for e in tr], [e[key] for e in tr], lw=0.7, color="0.5")
            axk.set_ylabel(lab + " (grey: background)")
    axes[-1][0].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


P_BUCKETS = ((0.5, 1.5), (1.5, 3), (3, 5), (5, 8), (8, 10.01))


def share_by_precedence(r):
    """Eq. 5 check: per kernel sample, a running deadline flow's R_avg over the mean R_avg
    of the background flows (P = 1; P = 0.5 under profile yield), with the flow's
    precedence P then. Eq. 5 makes the shares stand as the precedences: ratio = P / P_bg.
    {bucket: [ratios]}"""
    bg = {f["id"] for f in r["flows"] if f["size_bytes"] is None}
    spans = {f["id"]: (f["start_s"], min(flow_active_span(f)[1], f["start_s"] + f["deadline_s"]))
             for f in r["flows"] if f["deadline_s"] is not None and f.get("size_bytes")}
    by_t = {}
    for e in r.get("kernel_trace", []):
        by_t.setdefault(e["t_s"], []).append(e)
    out = {b: [] for b in P_BUCKETS}
    for t, es in by_t.items():
        bgr = [e["r_avg_bps"] for e in es if e["id"] in bg and e.get("r_avg_bps")]
        if len(bgr) != len(bg):
            continue
        ref = sum(bgr) / len(bgr)
        for e in es:
            sp = spans.get(e["id"])
            # from 0.5 s after its start: R_avg is an EWMA that starts from slow start
            # quenched flows send nothing on purpose: not Eq. 5's business
            if sp and sp[0] + 0.5 <= t < sp[1] and e.get("precedence") and e.get("r_avg_bps") \
                    and e.get("quench") in (None, "none"):
                for b in P_BUCKETS:
                    if b[0] <= e["precedence"] < b[1]:
                        out[b].append(e["r_avg_bps"] / ref)
    return out


def table(diags, runs=()):
    """Markdown: per label the misses per class and cause, summed over runs, and the
    medians of the numbers behind the causes."""
    lines = []
    labels = sorted({d["label"] for d in diags})
    classes = ["lax", "moderate", "tight"]
    lines.append("| cc | runs | misses | " + " | ".join(CAUSES) + " |")
    lines.append("|---|---|---|" + "---|" * len(CAUSES))
    for lab in labels:
        ds = [d for d in diags if d["label"] == lab]
        miss = [f for d in ds for f in d["flows"] if not f["met"]]
        cnt = {c: sum(1 for f in miss if f["cause"] == c) for c in CAUSES}
        lines.append(f"| {lab} | {len(ds)} | {len(miss)} | " +
                     " | ".join(str(cnt[c]) for c in CAUSES) + " |")
    lines.append("")
    lines.append("Per class, medians over all runs' flows of the class (missed flows / met "
                 "flows): needed rate, rate got up to the deadline, background's aggregate "
                 "rate meanwhile, the flow's rate over one background flow's needed (background "
                 "at the batch's slack) and got, kernel urgency mean and max and b mean of "
                 "the flow, b mean of the background.")
    lines.append("")
    cols = ("need_mbps", "got_mbps_to_deadline", "got_mbps_first_s", "bg_mbps_during",
            "ratio_needed", "ratio_got", "urgency_mean", "urgency_max", "b_mean", "bg_b_mean")
    lines.append("| cc | class | missed/all | " + " | ".join(cols) + " |")
    lines.append("|---|---|---|" + "---|" * len(cols))
    for lab in labels:
        fl = [f for d in diags if d["label"] == lab for f in d["flows"]]
        for c in classes:
            cf = [f for f in fl if f["class"] == c]
            if not cf:
                continue
            miss = [f for f in cf if not f["met"]]
            ok = [f for f in cf if f["met"]]
            cells = []
            for k in cols:
                def med(fs):
                    v = [f[k] for f in fs if f.get(k) is not None]
                    return f"{statistics.median(v):.3g}" if v else "-"
                cells.append(f"{med(miss)} / {med(ok)}")
            lines.append(f"| {lab} | {c} | {len(miss)}/{len(cf)} | " + " | ".join(cells) + " |")
    lines.append("")
    eq5, bg_p = {}, {}
    for r in runs:
        if r.get("kernel_trace") and kernel_mode(r) == "datcp":
            lab = r.get("label", r["cc"])
            acc = eq5.setdefault(lab, {b: [] for b in P_BUCKETS})
            for b, v in share_by_precedence(r).items():
                acc[b] += v
            bg = {f["id"] for f in r["flows"] if f["size_bytes"] is None}
            bg_p.setdefault(lab, []).extend(e["precedence"] for e in r["kernel_trace"]
                                            if e["id"] in bg and e.get("precedence"))
    if eq5:
        lines.append("Eq. 5 check (datcp mode, kernel samples of running deadline flows from "
                     "0.5 s after their start): R_avg of the flow over the background flows' "
                     "mean R_avg, median [p25-p75] (samples), by the flow's precedence P, "
                     "quenched flows left out; `bg P`: the background's median precedence "
                     "(kernel samples). Eq. 2 and 5 make the ratio P / bg P.")
        lines.append("")
        lines.append("| cc | bg P | " + " | ".join(f"P {lo:g}-{min(hi, 10):g}"
                                                   for lo, hi in P_BUCKETS) + " |")
        lines.append("|---|---|" + "---|" * len(P_BUCKETS))
        for lab, acc in sorted(eq5.items()):
            ps = bg_p.get(lab)
            cells = [f"{statistics.median(ps):.2f}" if ps else "-"]
            for b in P_BUCKETS:
                v = sorted(acc[b])
                cells.append(f"{statistics.median(v):.2f} [{v[len(v) // 4]:.2f}-"
                             f"{v[3 * len(v) // 4]:.2f}] ({len(v)})" if v else "-")
            lines.append(f"| {lab} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.append("Causes (the first that applies): " +
                 "; ".join(f"`{c}`: {CAUSE_TEXT[c]}" for c in CAUSES) + ".")
    return "\n".join(lines)


def write_dir(out, plots=True):
    groups = load_runs(out)
    if not groups:
        raise SystemExit(f"{out}: no run files (<scenario>__<label>__seed<k>.json.gz)")
    os.makedirs(os.path.join(out, "diagnosis"), exist_ok=True)
    diags = []
    for (scen, label), rs in sorted(groups.items()):
        for r in rs:
            r.setdefault("label", label)
            d = run_diag(r)
            diags.append(d)
            base = os.path.join(out, "diagnosis", run_file(scen, label, r["seed"])[:-8])
            with open(base + ".json", "w") as fh:
                json.dump(d, fh, indent=1)
            if plots:
                plot_run(r, d, base + ".png")
    txt = table(diags, [r for rs in groups.values() for r in rs])
    with open(os.path.join(out, "DIAGNOSIS.md"), "w") as fh:
        fh.write(txt + "\n")
    return txt
