"""Workload specs and results of issue 16: the spec a workload runner executes (Docker
cluster or trace replay), the results.json both write, and the report that compares the
modes (TABLE.md, cdf.png, slowdown.png). Formats: /work's plan, bench/README.md
"Workloads"."""
from __future__ import annotations

import json
import math
import os
import re
import statistics

from datcpbench import dockerrun

MODES = ("off", "dctcp", "prio", "on")
BASELINES = ("off", "dctcp", "prio")
# issue 16 §5: on against off and against the best baseline
TARGET_MEAN = 0.67
TARGET_P95 = 0.77
TARGET_SLOWDOWN = 1.25

NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")
TOP_KEYS = ("name", "jobs", "barrier", "hosts", "cluster", "link_mbit")
CLUSTERS = ("shared", "ab")
JOB_REQUIRED = ("name", "submit_s", "maps", "reduces", "partition_bytes")
JOB_OPTIONAL = ("map_seconds", "slow_maps", "deadline_s", "queue", "user",
                "map_hosts", "reduce_hosts", "reduce_bytes")
PLACEMENT = ("map_hosts", "reduce_hosts", "reduce_bytes")


class WorkloadError(ValueError):
    """Bad spec or results; the message starts with the offending field."""


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v))


def _keys(obj, where, required, optional):
    for k in obj:
        if k not in required and k not in optional:
            raise WorkloadError(f"{where}{k}: unknown key (accepted: "
                                f"{', '.join(required + optional)})")
    for k in required:
        if k not in obj:
            raise WorkloadError(f"{where}{k}: missing (required)")


def _int_list(v, field, length, lo, hi=None):
    what = f"a list of {length} integers >= {lo}" + ("" if hi is None else f" and < {hi}")
    if not isinstance(v, list) or len(v) != length:
        raise WorkloadError(f"{field}: must be {what}")
    for i, x in enumerate(v):
        if not _is_int(x) or x < lo or (hi is not None and x >= hi):
            raise WorkloadError(f"{field}[{i}]: must be an integer >= {lo}" +
                                ("" if hi is None else f" and < {hi} (hosts)"))


def _job(j, i, hosts):
    f = f"jobs[{i}]."
    if not isinstance(j, dict):
        raise WorkloadError(f"jobs[{i}]: must be an object")
    _keys(j, f, JOB_REQUIRED, JOB_OPTIONAL)
    if not isinstance(j["name"], str) or not NAME_RE.fullmatch(j["name"]):
        raise WorkloadError(f"{f}name: must be a string of [A-Za-z0-9_.-]+")
    if not _is_num(j["submit_s"]) or j["submit_s"] < 0:
        raise WorkloadError(f"{f}submit_s: must be a number >= 0")
    for k in ("maps", "reduces", "partition_bytes"):
        if not _is_int(j[k]) or j[k] < 1:
            raise WorkloadError(f"{f}{k}: must be an integer >= 1")
    out = dict(j)
    out.setdefault("map_seconds", 0)
    if not _is_num(out["map_seconds"]) or out["map_seconds"] < 0:
        raise WorkloadError(f"{f}map_seconds: must be a number >= 0")
    out.setdefault("slow_maps", j["maps"])
    if not _is_int(out["slow_maps"]) or not 0 <= out["slow_maps"] <= j["maps"]:
        raise WorkloadError(f"{f}slow_maps: must be an integer in [0, maps={j['maps']}]")
    out.setdefault("deadline_s", None)
    d = out["deadline_s"]
    if d is not None and (not _is_num(d) or d <= 0):
        raise WorkloadError(f"{f}deadline_s: must be null or a number > 0")
    out.setdefault("queue", "default")
    for k in ("queue", "user"):
        if k in out and (not isinstance(out[k], str) or not out[k]):
            raise WorkloadError(f"{f}{k}: must be a non-empty string")
    for k in PLACEMENT:
        if k in j and hosts is None:
            raise WorkloadError(f"{f}{k}: needs the top-level hosts (the host count it "
                                f"indexes)")
    if "map_hosts" in j:
        _int_list(j["map_hosts"], f + "map_hosts", j["maps"], 0, hosts)
    if "reduce_hosts" in j:
        _int_list(j["reduce_hosts"], f + "reduce_hosts", j["reduces"], 0, hosts)
    if "reduce_bytes" in j:
        _int_list(j["reduce_bytes"], f + "reduce_bytes", j["reduces"], 0)
    return out


def validate_spec(obj):
    """Checks a spec (parsed JSON); returns a copy with the optional fields' defaults
    filled in. Raises WorkloadError naming the field."""
    if not isinstance(obj, dict):
        raise WorkloadError("spec: must be a JSON object")
    _keys(obj, "", TOP_KEYS[:2], TOP_KEYS[2:])
    if not isinstance(obj["name"], str) or not obj["name"]:
        raise WorkloadError("name: must be a non-empty string")
    out = dict(obj)
    out.setdefault("barrier", False)
    if not isinstance(out["barrier"], bool):
        raise WorkloadError("barrier: must be true or false")
    out.setdefault("cluster", "shared")
    if out["cluster"] not in CLUSTERS:
        raise WorkloadError("cluster: must be one of " + ", ".join(CLUSTERS))
    hosts = obj.get("hosts")
    if "hosts" in obj and (not _is_int(hosts) or hosts < 1):
        raise WorkloadError("hosts: must be an integer >= 1")
    if "link_mbit" in obj and (not _is_num(obj["link_mbit"]) or obj["link_mbit"] <= 0):
        raise WorkloadError("link_mbit: must be a number > 0 (Mbit/s)")
    if not isinstance(obj["jobs"], list) or not obj["jobs"]:
        raise WorkloadError("jobs: must be a non-empty list")
    seen = {}
    jobs = []
    for i, j in enumerate(obj["jobs"]):
        jobs.append(_job(j, i, hosts))
        n = j["name"]
        if n in seen:
            raise WorkloadError(f"jobs[{i}].name: duplicate of jobs[{seen[n]}].name {n!r}")
        seen[n] = i
    out["jobs"] = jobs
    return out


def _load_json(path, what):
    try:
        with open(path) as fh:
            return json.load(fh)
    except OSError as e:
        raise WorkloadError(f"{path}: cannot read {what}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise WorkloadError(f"{path}: not JSON: {e}") from None


def load_spec(path):
    """Reads and validates a spec file; see validate_spec."""
    return validate_spec(_load_json(path, "spec"))


def job_bytes(job):
    """Shuffle bytes of one job: every map writes each reduce its partition."""
    per_reduce = job.get("reduce_bytes") or [job["partition_bytes"]] * job["reduces"]
    return job["maps"] * sum(per_reduce)


def describe_spec(spec):
    jobs = spec["jobs"]
    return (f"{spec['name']}: {len(jobs)} jobs, {sum(j['maps'] for j in jobs)} maps, "
            f"{sum(j['reduces'] for j in jobs)} reduces, "
            f"{sum(job_bytes(j) for j in jobs) / 1e6:.1f} MB, submits over "
            f"{max(j['submit_s'] for j in jobs):.2f} s"
            + (f", {spec['hosts']} hosts" if "hosts" in spec else "")
            + (", barrier" if spec["barrier"] else ""))


# ---- results.json -------------------------------------------------------------------

RESULT_KEYS = ("spec", "rounds", "generated_by", "modes")
MODE_KEYS = ("jobs", "cc_seen", "dscp_seen")
JOB_RESULT_KEYS = ("jct_s", "copy_s", "deadline_met", "bytes", "rounds")


def _need(obj, where, keys):
    if not isinstance(obj, dict):
        raise WorkloadError(f"{where or 'results'}: must be an object")
    for k in keys:
        if k not in obj:
            raise WorkloadError(f"{where}{'.' if where else ''}{k}: missing (required)")


def validate_results(obj):
    """Checks a results.json (parsed): the plan's required keys and their types (extra
    keys are allowed: results carry at least these); every mode has the same jobs as
    `off`, which is required (all comparisons are against it). Raises WorkloadError."""
    _need(obj, "", RESULT_KEYS)
    if not isinstance(obj["spec"], str) or not obj["spec"]:
        raise WorkloadError("spec: must be a non-empty string")
    if not _is_int(obj["rounds"]) or obj["rounds"] < 1:
        raise WorkloadError("rounds: must be an integer >= 1")
    if not isinstance(obj["generated_by"], str) or not obj["generated_by"]:
        raise WorkloadError("generated_by: must be a non-empty string")
    modes = obj["modes"]
    if not isinstance(modes, dict) or "off" not in modes:
        raise WorkloadError("modes: must be an object with at least the mode off")
    names = None
    for m in ["off"] + [m for m in modes if m != "off"]:
        mr, w = modes[m], f"modes.{m}"
        if m not in MODES:
            raise WorkloadError(f"{w}: unknown mode (accepted: {', '.join(MODES)})")
        _need(mr, w, MODE_KEYS)
        if not isinstance(mr["cc_seen"], list) or not all(
                isinstance(c, str) and c for c in mr["cc_seen"]):
            raise WorkloadError(f"{w}.cc_seen: must be a list of congestion control names")
        if not isinstance(mr["dscp_seen"], list) or not all(
                _is_int(d) and 0 <= d <= 63 for d in mr["dscp_seen"]):
            raise WorkloadError(f"{w}.dscp_seen: must be a list of integers in [0, 63]")
        jobs = mr["jobs"]
        if not isinstance(jobs, dict) or not jobs:
            raise WorkloadError(f"{w}.jobs: must be a non-empty object of job name -> result")
        for n, jr in jobs.items():
            _job_result(jr, f"{w}.jobs.{n}", obj["rounds"])
        if names is None:
            names = set(jobs)
        if set(jobs) != names:
            diff = sorted(set(jobs) ^ names)
            raise WorkloadError(f"{w}.jobs: must hold the same jobs as modes.off.jobs "
                                f"(differ: {', '.join(diff[:5])})")
    if "alone" in obj:
        alone = obj["alone"]
        if not isinstance(alone, dict):
            raise WorkloadError("alone: must be an object of job name -> seconds")
        for n, t in alone.items():
            if n not in names:
                raise WorkloadError(f"alone.{n}: not a job of modes.off.jobs")
            if not _is_num(t) or t <= 0:
                raise WorkloadError(f"alone.{n}: must be a number > 0 (seconds)")
    return obj


def _job_result(jr, w, rounds):
    _need(jr, w, JOB_RESULT_KEYS)
    if not _is_num(jr["jct_s"]) or jr["jct_s"] <= 0:
        raise WorkloadError(f"{w}.jct_s: must be a number > 0 (seconds)")
    if jr["copy_s"] is not None and (not _is_num(jr["copy_s"]) or jr["copy_s"] < 0):
        raise WorkloadError(f"{w}.copy_s: must be null or a number >= 0 (seconds)")
    if jr["deadline_met"] is not None and not isinstance(jr["deadline_met"], bool):
        raise WorkloadError(f"{w}.deadline_met: must be null, true or false")
    if not _is_int(jr["bytes"]) or jr["bytes"] < 0:
        raise WorkloadError(f"{w}.bytes: must be an integer >= 0")
    r = jr["rounds"]
    if (not isinstance(r, list) or not 1 <= len(r) <= rounds
            or not all(_is_num(x) and x > 0 for x in r)):
        raise WorkloadError(f"{w}.rounds: must be a list of 1 to rounds={rounds} "
                            f"numbers > 0 (per-round jct_s)")


def load_results(path):
    return validate_results(_load_json(path, "results"))


# ---- report -------------------------------------------------------------------------

def percentile(xs, p):
    """Linear interpolation between closest ranks (numpy's default, 'inclusive')."""
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[p - 1]


def _stats(xs):
    return {"n": len(xs), "mean": statistics.fmean(xs), "median": statistics.median(xs),
            "p95": percentile(xs, 95), "max": max(xs)}


def analyse(results):
    """Every number TABLE.md shows, from validated results: per mode JCT stats, ratios
    to off and to the best baseline, per-job slowdowns, the §5 targets."""
    modes = [m for m in MODES if m in results["modes"]]
    jobs = sorted(results["modes"]["off"]["jobs"])
    jct = {m: {n: results["modes"][m]["jobs"][n]["jct_s"] for n in jobs} for m in modes}
    st = {m: _stats(list(jct[m].values())) for m in modes}
    base = [m for m in BASELINES if m in modes]
    best = min(base, key=lambda m: (st[m]["mean"], BASELINES.index(m)))
    a = {"modes": modes, "jobs": jobs, "jct": jct, "stats": st, "best": best,
         "ratio_off": {}, "ratio_best": {}, "slow_off": {}, "slow_alone": {},
         "slow_off_stats": {}, "slow_alone_stats": {}, "deadlines": {}}
    alone = results.get("alone") or {}
    for m in modes:
        for ref, key in (("off", "ratio_off"), (best, "ratio_best")):
            a[key][m] = {s: st[m][s] / st[ref][s] for s in ("mean", "p95")}
        a["slow_off"][m] = {n: jct[m][n] / jct["off"][n] for n in jobs}
        s = _stats(list(a["slow_off"][m].values()))
        s["over"] = sorted((n for n in jobs if a["slow_off"][m][n] > TARGET_SLOWDOWN),
                           key=lambda n: -a["slow_off"][m][n])
        a["slow_off_stats"][m] = s
        if alone:
            a["slow_alone"][m] = {n: jct[m][n] / alone[n] for n in jobs if n in alone}
            a["slow_alone_stats"][m] = _stats(list(a["slow_alone"][m].values()))
        dl = [results["modes"][m]["jobs"][n]["deadline_met"] for n in jobs]
        dl = [d for d in dl if d is not None]
        a["deadlines"][m] = (sum(dl), len(dl))
    a["targets"] = _targets(a) if "on" in modes else None
    return a


def _targets(a):
    """Issue 16 §5 on `on`: (name, measured, limit, met) rows."""
    r = a["ratio_off"]["on"]
    rows = [("mean JCT on/off", r["mean"], TARGET_MEAN, r["mean"] <= TARGET_MEAN),
            ("p95 JCT on/off", r["p95"], TARGET_P95, r["p95"] <= TARGET_P95)]
    vs = a["stats"]["on"]["mean"] / a["stats"][a["best"]]["mean"]
    rows.append((f"mean JCT on/best baseline ({a['best']})", vs, 1.0, vs < 1.0))
    s = a["slow_off_stats"]["on"]
    rows.append(("max per-job slowdown on/off", s["max"], TARGET_SLOWDOWN,
                 s["max"] <= TARGET_SLOWDOWN))
    return rows


def _verdict(measured, limit, met):
    if met:
        return f"met ({(limit - measured) / limit:.0%} under the limit)"
    return f"missed by {measured - limit:.2f} ({(measured - limit) / limit:.0%} over the limit)"


def _f(x, d=2):
    return f"{x:.{d}f}"


def _cpu_md(results, modes):
    """The CPU section: what each mode's rounds cost the cluster (docker runner's cpu_s)."""
    cpu = {m: results["modes"][m].get("cpu_s") for m in modes}
    if not any(cpu.values()):
        return []
    containers = sorted({n for c in cpu.values() if c for n in c["containers"]})
    roles = sorted({r for c in cpu.values() if c for r in c["roles"]})
    L = ["", "## CPU (s, median over rounds)", "",
         "Each container's CPU time over the round (cgroup); the NodeManagers' Java processes "
         "by role, sampled every second (a process's last second is not counted).", "",
         "| mode | total | " + " | ".join(containers + roles) + " |",
         "|---|---|" + "---|" * (len(containers) + len(roles))]
    for m in modes:
        c = cpu[m]
        if not c:
            L.append(f"| {m} | - |" + " - |" * (len(containers) + len(roles)))
            continue
        L.append(f"| {m} | {_f(c['total'], 1)} | " + " | ".join(
            [_f(c["containers"].get(n, 0), 1) for n in containers] +
            [_f(c["roles"].get(r, 0), 1) for r in roles]) + " |")
    return L


def table_md(results, a):
    rm = results["modes"]
    L = [f"# Workload `{results['spec']}`: {len(a['jobs'])} jobs, {results['rounds']} "
         f"round(s), generated by {results['generated_by']}", "",
         f"Modes compared: {', '.join(a['modes'])}. Best baseline (lowest mean JCT of "
         f"{', '.join(m for m in BASELINES if m in a['modes'])}): **{a['best']}**. "
         "Times are medians over rounds; p95 by linear interpolation.", "",
         "| mode | cc_seen | dscp_seen |", "|---|---|---|"]
    for m in a["modes"]:
        L.append(f"| {m} | {', '.join(rm[m]['cc_seen']) or '-'} | "
                 f"{', '.join(str(d) for d in rm[m]['dscp_seen']) or '-'} |")
    L += ["", "## Job completion time (s)", "",
          "| mode | jobs | mean | median | p95 | max | mean/off | p95/off | "
          f"mean/best ({a['best']}) | p95/best ({a['best']}) | deadlines met |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in a["modes"]:
        s, ro, rb = a["stats"][m], a["ratio_off"][m], a["ratio_best"][m]
        met, n = a["deadlines"][m]
        L.append(f"| {m} | {s['n']} | {_f(s['mean'])} | {_f(s['median'])} | {_f(s['p95'])} "
                 f"| {_f(s['max'])} | {_f(ro['mean'])} | {_f(ro['p95'])} | "
                 f"{_f(rb['mean'])} | {_f(rb['p95'])} | {f'{met}/{n}' if n else '-'} |")
    L += ["", "## Per-job slowdown against off (JCT in the mode / JCT off)", "",
          f"| mode | median | p95 | max | jobs > {TARGET_SLOWDOWN}x |", "|---|---|---|---|---|"]
    for m in a["modes"]:
        if m == "off":
            continue
        s = a["slow_off_stats"][m]
        L.append(f"| {m} | {_f(s['median'])} | {_f(s['p95'])} | {_f(s['max'])} | "
                 f"{len(s['over'])} of {s['n']} |")
    if a["slow_alone"]:
        L += ["", "## Per-job slowdown against alone (JCT / the job alone on the empty "
              "fabric)", "", "| mode | median | p95 | max |", "|---|---|---|---|"]
        for m in a["modes"]:
            s = a["slow_alone_stats"][m]
            L.append(f"| {m} | {_f(s['median'])} | {_f(s['p95'])} | {_f(s['max'])} |")
    L += _cpu_md(results, a["modes"])
    L += dockerrun.map_end_lines(results)
    L += ["", "## Issue 16 §5 targets (on)", ""]
    if a["targets"] is None:
        L.append("No `on` mode in these results: targets not evaluated.")
    else:
        L += ["| target | measured | limit | result |", "|---|---|---|---|"]
        for name, v, lim, met in a["targets"]:
            L.append(f"| {name} | {_f(v)} | {'<' if lim == 1.0 else '<='} {_f(lim)} | "
                     f"{_verdict(v, lim, met)} |")
        over = a["slow_off_stats"]["on"]["over"]
        if over:
            L += ["", f"Jobs slower on than off by more than {TARGET_SLOWDOWN}x: " +
                  ", ".join(f"{n} ({_f(a['slow_off']['on'][n])}x)" for n in over)]
    L += ["", "![JCT CDF per mode](cdf.png)", "", "![per-job slowdown](slowdown.png)", "",
          "## Per job (JCT s; slowdown against off in brackets)", "",
          "| job | bytes | " + " | ".join(a["modes"]) +
          (" | alone |" if a["slow_alone"] else " |"),
          "|---|---|" + "---|" * (len(a["modes"]) + bool(a["slow_alone"]))]
    alone = results.get("alone") or {}
    for n in sorted(a["jobs"], key=lambda n: a["jct"]["off"][n]):
        cells = [_f(a["jct"]["off"][n])] + [
            f"{_f(a['jct'][m][n])} ({_f(a['slow_off'][m][n])})" for m in a["modes"][1:]]
        if a["slow_alone"]:
            cells.append(_f(alone[n]) if n in alone else "-")
        L.append(f"| {n} | {rm['off']['jobs'][n]['bytes']} | " + " | ".join(cells) + " |")
    return "\n".join(L) + "\n"


def _ecdf(ax, xs, mode, label=None):
    xs = sorted(xs)
    # one colour per mode in every plot
    ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post",
            label=label or mode, color=f"C{MODES.index(mode)}")


def plots(a, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for m in a["modes"]:
        _ecdf(ax, a["jct"][m].values(), m, f"{m} (mean {a['stats'][m]['mean']:.1f} s)")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("job completion time (s, log)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("JCT CDF per mode")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "cdf.png"), dpi=110)
    plt.close(fig)
    panels = [("off", a["slow_off"], [m for m in a["modes"] if m != "off"])]
    if a["slow_alone"]:
        panels.append(("alone", a["slow_alone"], a["modes"]))
    fig, axs = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.2), squeeze=False)
    for ax, (ref, slow, ms) in zip(axs[0], panels):
        for m in ms:
            _ecdf(ax, slow[m].values(), m)
        ax.axvline(1.0, color="grey", lw=0.8)
        if ref == "off":
            ax.axvline(TARGET_SLOWDOWN, color="black", lw=0.8, ls="--",
                       label=f"{TARGET_SLOWDOWN}x (§5 limit)")
        else:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.xaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel(f"per-job slowdown: JCT / JCT {ref}")
        ax.set_ylabel("fraction of jobs")
        ax.set_title(f"per-job slowdown against {ref}")
        ax.grid(alpha=0.3)
        if ms:
            ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "slowdown.png"), dpi=110)
    plt.close(fig)


def report(results, out_dir):
    """Writes out_dir/TABLE.md, cdf.png and slowdown.png; returns the analysis and the
    table text."""
    validate_results(results)
    a = analyse(results)
    os.makedirs(out_dir, exist_ok=True)
    text = table_md(results, a)
    with open(os.path.join(out_dir, "TABLE.md"), "w") as fh:
        fh.write(text)
    plots(a, out_dir)
    return a, text
