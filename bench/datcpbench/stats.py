"""Repeated runs of one scenario (``bench/run SCENARIO --runs N``, ``bench/run stats``):
the scalar metrics of each run and their median and range (min-max) per CC.

A run directory holds one gzip'd JSON per run, ``<scenario>__<label>__seed<k>.json.gz``
(the result of ``bench/run`` with ``seed``, ``label`` added; a kernel trace makes a mixed
run's JSON over 1 MB); ``summarize_dir`` groups them
by (scenario, label) and writes ``summary.json`` and ``SUMMARY.md``."""
from __future__ import annotations

import glob
import gzip
import json
import math
import os
import re
import statistics

from .runner import series

RUN_FILE = re.compile(r"(?P<scenario>[^_]+)__(?P<label>.+)__seed(?P<seed>-?\d+)\.json\.gz$")
# goodput of a 100 % busy link (payload / wire bytes at MTU 1500), as runner.link_util
GOODPUT_FRACTION = 0.956


def run_file(scenario, label, seed):
    return f"{scenario}__{label}__seed{seed}.json.gz"


def write_run(path, r):
    with gzip.open(path, "wt") as fh:
        json.dump(r, fh)


def read_run(path):
    with gzip.open(path, "rt") as fh:
        return json.load(fh)


def flow_active_span(f):
    """(start, end) in scenario seconds of a sized flow: from its start to its last byte
    (its FCT when it completed, else the end of its last non-empty 100 ms bin)."""
    start = f["start_s"]
    if f.get("fct_s") is not None:
        return start, start + f["fct_s"]
    return start, f.get("tput_from_s", start) + 0.1 * len(f.get("tput_mbps", []))


def bg_share_during_deadline_flows(r):
    """Background (endless) flows' aggregate goodput as a fraction of the link's goodput,
    over the 100 ms bins in which at least one deadline flow was sending (issue 22 §4:
    deadlines must not be met by starving everyone else). None without such bins."""
    T = r.get("duration_s") or 0.0
    dl = [f for f in r["flows"] if f["deadline_s"] is not None and f.get("bytes")]
    bg = [f for f in r["flows"] if f["size_bytes"] is None]
    if not dl or not bg:
        return None
    n = int(T / 0.1) + 1
    active = [False] * n
    for f in dl:
        a, b = flow_active_span(f)
        # bins [i * 0.1, (i + 1) * 0.1) that overlap [a, b)
        for i in range(max(0, math.floor(a / 0.1 + 1e-9)), min(n, math.ceil(b / 0.1 - 1e-9))):
            active[i] = True
    bg_sum = [sum(x) for x in zip(*(series(f, T) for f in bg))]
    w = [bg_sum[i] for i in range(n) if active[i]]
    if not w:
        return None
    return round(sum(w) / len(w) / (GOODPUT_FRACTION * r["link_mbps"]), 3)


def metrics(r):
    """The scalar metrics of one run: deadlines met (total and, for mixed, per class),
    the scenario's scalar headline numbers, link utilisation; for mixed also the
    background flows' share of the link while deadline flows run."""
    s = r.get("summary", {})
    out = {}
    if s.get("deadline_flows"):
        out["met"] = s["met"]
    dl = [f for f in r["flows"] if f["deadline_s"] is not None]
    classes = []
    for f in dl:
        if "class" in f and f["class"] not in classes:
            classes.append(f["class"])
    for c in classes:
        out[f"met_{c}"] = sum(1 for f in dl if f.get("class") == c and f["met"])
    for k, v in s.items():
        if k not in ("met", "deadline_flows") and isinstance(v, (int, float)) \
                and not isinstance(v, bool):
            out[k] = v
    if r["scenario"] == "mixed":
        out["bg_share"] = bg_share_during_deadline_flows(r)
    if r.get("link_util") is not None:
        out["link_util"] = r["link_util"]
    return out


def aggregate(per_run):
    """per_run: list of metric dicts (one per run). Per metric the median, min, max and
    the values in run order; runs without a metric (None) do not count for it."""
    names = []
    for m in per_run:
        names += [k for k in m if k not in names]
    out = {}
    for k in names:
        vals = [m.get(k) for m in per_run]
        have = [v for v in vals if v is not None]
        out[k] = {"median": statistics.median(have) if have else None,
                  "min": min(have) if have else None, "max": max(have) if have else None,
                  "n": len(have), "values": vals}
    return out


def load_runs(out_dir):
    """{(scenario, label): [result, ...]} from the run files in out_dir, by seed."""
    groups = {}
    for p in sorted(glob.glob(os.path.join(out_dir, "*__seed*.json.gz"))):
        m = RUN_FILE.match(os.path.basename(p))
        if not m:
            continue
        r = read_run(p)
        r.setdefault("seed", int(m["seed"]))
        groups.setdefault((m["scenario"], m["label"]), []).append(r)
    for rs in groups.values():
        rs.sort(key=lambda r: r["seed"])
    return groups


def summarize_runs(groups):
    """{scenario: {label: {"runs", "seeds", "kmod_params", "cpu_starved_runs",
    "deadline_flows", "metrics"}}}"""
    out = {}
    for (scen, label), rs in sorted(groups.items()):
        per_run = [metrics(r) for r in rs]
        dfl = sorted({r["summary"].get("deadline_flows") for r in rs
                      if r.get("summary", {}).get("deadline_flows")})
        out.setdefault(scen, {})[label] = {
            "cc": rs[0]["cc"], "runs": len(rs), "seeds": [r["seed"] for r in rs],
            "kmod_params": rs[0].get("kmod_params"),
            "cpu_starved_runs": [r["seed"] for r in rs if r.get("cpu_starved")],
            "deadline_flows": dfl[0] if len(dfl) == 1 else dfl,
            "metrics": aggregate(per_run)}
    return out


def _fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    return f"{v:g}"


def table(summary):
    """Markdown: per scenario one row per label, one column per metric,
    "median [min-max]"."""
    lines = []
    for scen, labels in summary.items():
        cols = []
        for e in labels.values():
            cols += [k for k in e["metrics"] if k not in cols]
        lines.append(f"### {scen} (median [min-max] over runs)")
        lines.append("")
        lines.append("| cc | runs | " + " | ".join(cols) + " |")
        lines.append("|---|---|" + "---|" * len(cols))
        for label, e in labels.items():
            cells = []
            for k in cols:
                m = e["metrics"].get(k)
                if not m or m["median"] is None:
                    cells.append("-")
                else:
                    cells.append(f"{_fmt(m['median'])} [{_fmt(m['min'])}-{_fmt(m['max'])}]")
            runs = f"{e['runs']}" + (f" ({len(e['cpu_starved_runs'])} cpu-starved)"
                                     if e["cpu_starved_runs"] else "")
            lines.append(f"| {label} | {runs} | " + " | ".join(cells) + " |")
        lines.append("")
        dfl = {e["deadline_flows"] for e in labels.values() if isinstance(e["deadline_flows"], int)}
        if dfl:
            lines.append(f"deadline flows per run: {', '.join(map(str, sorted(dfl)))}")
            lines.append("")
    return "\n".join(lines)


def summarize_dir(out_dir):
    """Write out_dir/summary.json and out_dir/SUMMARY.md; return the table."""
    groups = load_runs(out_dir)
    if not groups:
        raise SystemExit(f"{out_dir}: no run files (<scenario>__<label>__seed<k>.json.gz)")
    summ = summarize_runs(groups)
    with open(os.path.join(out_dir, "summary.json"), "w") as fh:
        json.dump(summ, fh, indent=1)
    txt = table(summ)
    with open(os.path.join(out_dir, "SUMMARY.md"), "w") as fh:
        fh.write(txt + "\n")
    return txt
