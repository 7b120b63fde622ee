"""``bench/run all``: every named scenario against every peer, JSON per run, a
Markdown report with comparison tables, throughput-over-time plots (per flow, like
DATCP figs 8-11) and deadline-met bar charts."""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import time

from . import kernel, scenarios
from .runner import series
from .netns import log

ALL_CCS = ["datcp", "datcp-noquench", "dctcp", "d2tcp", "pd2tcp", "reno-ecn", "cubic", "bbr"]
TIMESERIES = ["fig8-4s", "fig8-3s", "fig9", "fig10", "fig11", "eq5"]


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            mem = f"{int(fh.readline().split()[1]) / 1048576:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return (f"{platform.node()}: Linux {platform.release()}, {os.cpu_count()} cores ({cpu}), "
            f"{mem} RAM, Python {platform.python_version()}")


def _git_rev():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=os.path.dirname(__file__)).stdout.strip()
    except OSError:
        return "?"


def run_all(out, ccs=None, names=None, profile=scenarios.DEFAULT_PROFILE, link_mbps=100,
            short=False, seed=1, boost=None):
    from . import runner
    os.makedirs(out, exist_ok=True)
    ccs = ccs or ALL_CCS
    names = names or scenarios.NAMES
    skipped = []
    if not kernel.available():
        skipped = [c for c in ccs if kernel.needs_kmod(c)]
        ccs = [c for c in ccs if not kernel.needs_kmod(c)]
        log(f"kmod/build/datcpctl missing: skipping {', '.join(skipped)}")
    jobs = [(n, c) for n in names for c in ccs]
    loaded = kernel.Loaded().__enter__() if kernel.available() else None
    try:
        results, elapsed = _run_jobs(jobs, runner, link_mbps, profile, short, seed, out, boost)
    finally:
        if loaded:
            loaded.__exit__(None, None, None)
    write_report(out, results, names, ccs, skipped, profile, link_mbps, elapsed, short)
    return 0


def _run_jobs(jobs, runner, link_mbps, profile, short, seed, out, boost=None):
    results = {}
    t_start = time.monotonic()
    for k, (name, cc) in enumerate(jobs, 1):
        el = time.monotonic() - t_start
        log(f"[{k}/{len(jobs)}] {name} / {cc}   (elapsed {el / 60:.1f} min)")
        spec = scenarios.build(name, link_mbps, profile, short, seed)
        for attempt in (1, 2):
            try:
                r = runner.run_spec(spec, cc, boost=boost)
                if r.get("cpu_starved") and attempt == 1:
                    log(f"   link utilisation {r['link_util']}: CPU-starved run, retrying")
                    continue
                break
            except KeyboardInterrupt:
                raise
            except Exception as e:  # one broken run must not lose the others
                log(f"   FAILED (attempt {attempt}): {e}")
                r = {"scenario": name, "cc": cc, "error": str(e)}
        results[(name, cc)] = r
        with open(os.path.join(out, f"{name}__{cc}.json"), "w") as fh:
            json.dump(r, fh)
        if "summary" in r:
            log(f"   met {r['deadline_met_ratio']}  {json.dumps({x: y for x, y in r['summary'].items() if x not in ('fct_s', 'goodput_mbps')})}")
    return results, time.monotonic() - t_start


def load_dir(out):
    results = {}
    for fn in sorted(os.listdir(out)):
        if fn.endswith(".json") and "__" in fn:
            with open(os.path.join(out, fn)) as fh:
                r = json.load(fh)
            results[(r["scenario"], r["cc"])] = r
    return results


# ---------------------------------------------------------------- plots

def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_timeseries(out, name, results, ccs):
    plt = _plt()
    runs = [(cc, results[(name, cc)]) for cc in ccs if "flows" in results.get((name, cc), {})]
    if not runs:
        return None
    cols = min(4, len(runs))
    rows = (len(runs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False,
                             sharey=True)
    for ax in axes.flat[len(runs):]:
        ax.axis("off")
    for ax, (cc, r) in zip(axes.flat, runs):
        for f in r["flows"]:
            if name == "fig10" and not (f["id"].endswith("/bg0") or f["id"].startswith("I1/")):
                continue   # the varied flow of each run + the whole first run
            dur = r.get("variants", {}).get(f.get("variant"), {}).get("duration_s") or r.get("duration_s") or 0.0
            s = series(f, dur)
            t = [0.1 * (i + 0.5) for i in range(len(s))]
            lab = f["id"]
            if f["deadline_s"] is not None:
                lab += f" D={f['deadline_s']:g}s " + ("met" if f["met"] else "missed")
            elif f["importance"] != 1.0 or name in ("eq5", "fig10"):
                lab += f" I={f['importance']:g}"
            ls = "-" if f["deadline_s"] is not None else "--"
            ax.plot(t, s, ls, lw=1.0, label=lab)
        for f in r["flows"]:
            if f["deadline_s"] is not None:
                ax.axvline(f["start_s"] + f["deadline_s"], color="grey", lw=0.6, ls=":")
        ax.set_title(f"{name} — {cc} (met {r['summary']['met']}/{r['summary']['deadline_flows']})"
                     if r["summary"]["deadline_flows"] else f"{name} — {cc}", fontsize=9)
        ax.set_xlabel("time (s)", fontsize=8)
        ax.set_ylabel("Mbit/s (100 ms bins)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6, loc="upper right")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fn = f"{name}.png"
    fig.savefig(os.path.join(out, fn), dpi=90)
    plt.close(fig)
    return fn


def _met_bars(out, fn, groups, series, title=None, width=6.0, height=3.6):
    """Grouped bar chart of deadline-met ratios: one group per x label, one bar per
    (label, {group: ratio}) series."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(width, height))
    w = 0.8 / max(1, len(series))
    for k, (label, vals) in enumerate(series):
        ax.bar([i + k * w for i in range(len(groups))], [vals.get(g) or 0.0 for g in groups], w,
               label=label)
    ax.set_xticks([i + 0.4 - w / 2 for i in range(len(groups))])
    ax.set_xticklabels(groups, fontsize=8)
    ax.set_ylabel("deadline-met ratio")
    ax.set_ylim(0, 1.05)
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=4)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, fn), dpi=90)
    plt.close(fig)
    return fn


def plot_met_bars(out, results, names, ccs):
    names = [n for n in names if n not in ("incast", "eq5")]
    series = [(cc, {n: results.get((n, cc), {}).get("deadline_met_ratio") for n in names})
              for cc in ccs]
    return _met_bars(out, "deadline_met.png", names, series,
                     width=max(6, 1.3 * len(names) * len(ccs) / 4))


def plot_mixed(out, results, ccs):
    classes = list(scenarios.MIXED_CLASSES)
    series = [(cc, results[("mixed", cc)]["summary"].get("met_ratio_by_class", {}))
              for cc in ccs if "summary" in results.get(("mixed", cc), {})]
    if not series:
        return None
    return _met_bars(out, "mixed.png", classes, series,
                     title="mixed (DATCP §4.3 generated traffic)", width=7, height=3.4)


def plot_incast(out, results, ccs):
    plt = _plt()
    runs = [(cc, results[("incast", cc)]) for cc in ccs if "summary" in results.get(("incast", cc), {})]
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for cc, r in runs:
        g = r["summary"]["goodput_mbps"]
        xs = [int(n) for n in g]
        ax.plot(xs, [g[str(n)] for n in xs], "o-", ms=3, label=cc)
    link = runs[0][1]["link_mbps"]
    ax.axhline(0.9 * link, color="grey", ls=":", lw=0.8, label="90% of link")
    ax.set_xlabel("synchronized senders (256 KB each)")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.set_ylim(0, link * 1.05)
    ax.legend(fontsize=7, ncol=3)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "incast.png"), dpi=90)
    plt.close(fig)
    return "incast.png"


# ---------------------------------------------------------------- report

def _fmt(x, nd=2):
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def checks(results):
    """The issue's 'what must show' items, evaluated on the results."""
    c = []

    def get(n, cc):
        return results.get((n, cc), {}).get("summary")

    for n in ("fig8-4s", "fig8-3s"):
        d, cu, re_ = get(n, "datcp"), get(n, "cubic"), get(n, "reno-ecn")
        if d and cu and re_:
            ok = d["met"] == 3 and cu["met"] < 3 and re_["met"] < 3
            c.append((n, f"datcp meets {d['met']}/3; cubic {cu['met']}/3; reno-ecn {re_['met']}/3", ok))
    d = get("fig10", "datcp")
    if d:
        cu = get("fig10", "cubic")
        c.append(("fig10", f"datcp: Mbit/s of the background flow by its importance "
                  f"{d['bg_mbps_by_importance']}" +
                  (f" (cubic: {cu['bg_mbps_by_importance']})" if cu else ""),
                  d["share_grows_with_importance"]))
    d, nq, cu = get("fig11", "datcp"), get("fig11", "datcp-noquench"), get("fig11", "cubic")
    if d and nq and cu:
        c.append(("fig11", f"datcp (quench) {d['met']}/4; no quench {nq['met']}/4; cubic {cu['met']}/4",
                  d["met"] == 3 and nq["met"] == 0 and cu["met"] == 0))
    d = get("eq5", "datcp")
    if d and d.get("ratio") is not None:
        c.append(("eq5", f"precedence 2 : 1 throughput ratio {d['ratio']:.2f} "
                  f"({d['p2_mbps']:.1f} / {d['p1_mbps']:.1f} Mbit/s)", abs(d["ratio"] - 2) <= 0.4))
    for cc in ("datcp", "dctcp"):
        d = get("incast", cc)
        if d:
            c.append(("incast", f"{cc}: min goodput {100 * d['goodput_frac_min']:.1f}% of link",
                      d["goodput_frac_min"] >= 0.9))
    cu = get("incast", "cubic")
    if cu:
        c.append(("incast", f"cubic: min goodput {100 * cu['goodput_frac_min']:.1f}% of link "
                  f"({'collapse' if cu['goodput_frac_min'] < 0.9 else 'no collapse'} with this buffer)", None))
    d, cu = get("mixed", "datcp"), get("mixed", "cubic")
    if d and cu:
        a, b = d["met_ratio_by_class"], cu["met_ratio_by_class"]
        ok = all(a.get(k, 0) > b.get(k, 0) for k in scenarios.MIXED_CLASSES)
        c.append(("mixed", "datcp vs cubic met ratio: " + ", ".join(
            f"{k} {a.get(k, 0):.2f} vs {b.get(k, 0):.2f}" for k in scenarios.MIXED_CLASSES), ok))
        for cc in ("d2tcp", "pd2tcp", "dctcp"):
            x = get("mixed", cc)
            if x:
                c.append(("mixed", f"{cc}: " + ", ".join(
                    f"{k} {x['met_ratio_by_class'].get(k, 0):.2f}" for k in scenarios.MIXED_CLASSES), None))
    return c


def _kmod_params(results):
    ps = sorted({r.get("kmod_params") for r in results.values() if r.get("kmod_params")})
    return "; ".join(f"`{p}`" for p in ps) or "not recorded"


def write_report(out, results, names, ccs, skipped, profile, link_mbps, elapsed, short=False):
    figs = {}
    for n in names:
        if n in TIMESERIES:
            figs[n] = plot_timeseries(out, n, results, ccs)
    bars = plot_met_bars(out, results, names, ccs)
    mixed = plot_mixed(out, results, ccs) if "mixed" in names else None
    incast = plot_incast(out, results, ccs) if "incast" in names else None
    sw = scenarios.SWITCH_PROFILES[profile]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = [f"# DATCP bench report — {now}", "",
         f"- machine: {machine()}",
         f"- commit: {_git_rev()}" + (f"; run time {elapsed / 60:.1f} min" if elapsed else "") +
         (" (short versions)" if short else ""),
         f"- link {link_mbps} Mbit/s; switch ports: HTB + bfifo {sw['buffer_bytes']} B + AQM "
         f"RED on the instantaneous queue {sw['red_min']}/{sw['red_max']} B, max_p {sw['red_maxp']} "
         f"(profile `{profile}`); {', '.join(scenarios.STEP_MARKING_CCS)} run on step marking at "
         f"K = {sw['step_k']} B instead (as their papers); TSO/GSO/GRO off; rto_min 10 ms; ECN on",
         f"- congestion controls: {', '.join(ccs)}" +
         (f"; skipped (no kmod build): {', '.join(skipped)}" if skipped else ""),
         f"- datcp parameters: {_kmod_params(results)}",
         "- the machine is shared with other builds, so single runs are noisy; read met/missed "
         "and ratios, not the last decimal.", ""]
    cs = checks(results)
    if cs:
        L += ["## What must show", "", "| scenario | result | ok |", "|---|---|---|"]
        L += [f"| {n} | {t} | {'info' if ok is None else 'PASS' if ok else 'FAIL'} |" for n, t, ok in cs]
        L.append("")
    L += ["FCTs marked (s) were suspended by DATCP quenching at least once, (k) killed. "
          "Link util = aggregate goodput / (0.956 × link) while backlogged; below 0.85 the "
          "host CPU (shared with builds), not the emulated link, limited the run.", "",
          "## Deadline-met ratio", "", f"![deadline met]({bars})", "",
          "| scenario | " + " | ".join(ccs) + " |", "|---|" + "---|" * len(ccs)]
    for n in names:
        if n in ("incast", "eq5"):
            continue
        row = [_fmt(results.get((n, cc), {}).get("deadline_met_ratio")) for cc in ccs]
        L.append(f"| {n} | " + " | ".join(row) + " |")
    L.append("")
    for n in names:
        L += [f"## {n}", ""]
        runs = [(cc, results.get((n, cc), {})) for cc in ccs]
        if n in TIMESERIES:
            L += ["| cc | met | deadline-flow FCTs (s) | background / other Mbit/s | marks | drops | peak queue B | link util |",
                  "|---|---|---|---|---|---|---|---|"]
            for cc, r in runs:
                if "summary" not in r:
                    L.append(f"| {cc} | error: {r.get('error', 'not run')} | | | | | | |")
                    continue
                s = r["summary"]
                fcts = ", ".join(_fmt(f["fct_s"]) + ("(k)" if f.get("killed") else "(s)" if f.get("suspended") else "")
                                 for f in r["flows"] if f["deadline_s"] is not None)
                other = ", ".join(f"{f['id']} {f['mean_mbps']:.1f}" for f in r["flows"]
                                  if f["size_bytes"] is None)
                if n == "eq5":
                    other += f"; ratio {_fmt(s.get('ratio'))}"
                if n == "fig10":
                    other = "bg0 by its importance " + ", ".join(f"I={k}: {v}" for k, v in s["bg_mbps_by_importance"].items())
                sw_ = r["switch"]
                L.append(f"| {cc} | {s['met']}/{s['deadline_flows']} | {fcts} | {other} | "
                         f"{_fmt(sw_.get('marks'))} | {_fmt(sw_.get('drops'))} | {_fmt(sw_.get('peak_queue_bytes'))} | "
                         f"{_fmt(r.get('link_util'))}{' (CPU-starved)' if r.get('cpu_starved') else ''} |")
            if figs.get(n):
                L += ["", f"![{n}]({figs[n]})"]
        elif n == "incast":
            counts = None
            for cc, r in runs:
                if "summary" in r:
                    counts = list(r["summary"]["goodput_mbps"])
                    break
            if counts:
                L += ["Goodput (Mbit/s, median of 3 rounds) against synchronized senders of 256 KB:", "",
                      "| cc | " + " | ".join(counts) + " | drops |", "|---|" + "---|" * (len(counts) + 1)]
                for cc, r in runs:
                    if "summary" in r:
                        g = r["summary"]["goodput_mbps"]
                        L.append(f"| {cc} | " + " | ".join(_fmt(g.get(k), 1) for k in counts) +
                                 f" | {_fmt(r['switch'].get('drops'))} |")
            if incast:
                L += ["", f"![incast]({incast})"]
        elif n == "mixed":
            cl = list(scenarios.MIXED_CLASSES)
            L += ["Deadline = size / link × k, k uniform in " + ", ".join(
                f"{c} [{a}, {b}]" for c, (a, b) in scenarios.MIXED_CLASSES.items()) +
                "; sizes uniform 1–10 MB; 3 endless background flows; 3 deadline flows every 10 s.", "",
                "| cc | " + " | ".join(cl) + " | all |", "|---|" + "---|" * (len(cl) + 1)]
            for cc, r in runs:
                if "summary" in r:
                    m = r["summary"]["met_ratio_by_class"]
                    L.append(f"| {cc} | " + " | ".join(_fmt(m.get(c)) for c in cl) +
                             f" | {_fmt(r.get('deadline_met_ratio'))} |")
            if mixed:
                L += ["", f"![mixed]({mixed})"]
        L.append("")
    with open(os.path.join(out, "REPORT.md"), "w") as fh:
        fh.write("\n".join(L) + "\n")
    log(f"report: {os.path.join(out, 'REPORT.md')}")
    for n, t, ok in cs:
        print(f"{'INFO' if ok is None else 'PASS' if ok else 'FAIL'}  {n}: {t}")
