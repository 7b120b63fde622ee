"""``bench/run ablation --out DIR``: the datcp algorithm's parameter profiles side by
side. DIR holds one folder per run, ``<profile>-<n>`` (``paper-1``, ``tuned-1``, ...),
each with the JSON of ``bench/run SCENARIO --cc datcp --kmod-profile PROFILE --out``;
this writes DIR/ABLATION.md with one row per scenario headline and one column per run."""
from __future__ import annotations

import json
import os
import re

from .report import _git_rev, machine


def _headline(name, r):
    s = r.get("summary", {})
    if "error" in r:
        return f"error: {r['error'][:40]}"
    if name.startswith("fig8") or name == "fig11":
        fcts = [f["fct_s"] for f in r["flows"] if f["deadline_s"] is not None]
        quenched = sum(1 for f in r["flows"] if f.get("suspended") or f.get("killed"))
        done = [x for x in fcts if x is not None]
        txt = f"{s.get('met')}/{s.get('deadline_flows')} met"
        if done:
            txt += f", FCT {min(done):.2f}–{max(done):.2f} s"
        if name == "fig11":
            txt += f", {quenched} quenched"
        return txt
    if name == "eq5":
        return f"ratio {s.get('ratio')} ({s.get('p2_mbps')}/{s.get('p1_mbps')} Mbit/s)"
    if name == "mixed":
        by = s.get("met_ratio_by_class", {})
        return (f"{s.get('met')}/{s.get('deadline_flows')} met (" +
                ", ".join(f"{k} {v:.2f}" for k, v in by.items()) + ")")
    return json.dumps(s)[:60]


def write(out):
    runs = sorted(d for d in os.listdir(out) if re.fullmatch(r"[a-z]+-\d+", d)
                  and os.path.isdir(os.path.join(out, d)))
    if not runs:
        raise SystemExit(f"no <profile>-<n> folders in {out}")
    res, names, params = {}, [], {}
    for run in runs:
        for fn in sorted(os.listdir(os.path.join(out, run))):
            if not fn.endswith("__datcp.json"):
                continue
            with open(os.path.join(out, run, fn)) as fh:
                r = json.load(fh)
            name = fn[:-len("__datcp.json")]
            if name not in names:
                names.append(name)
            res[(name, run)] = r
            params.setdefault(run.split("-")[0], r.get("kmod_params"))
    L = ["# datcp parameter profiles: paper vs tuned", "",
         f"- machine: {machine()}", f"- commit: {_git_rev()}",
         "- cc `datcp` (quench suspend), switch profile `paper` (200 KB, RED 80/120 KB), "
         "100 Mbit/s; one column per run (the machine is shared: runs are noisy)", ""]
    L += [f"- `{p}`: `{v}`" for p, v in sorted(params.items())] + [""]
    L += ["| scenario | " + " | ".join(runs) + " |", "|---" * (len(runs) + 1) + "|"]
    for n in names:
        L.append(f"| {n} | " + " | ".join(_headline(n, res[(n, r)]) if (n, r) in res else "-"
                                          for r in runs) + " |")
    notes = os.path.join(out, "NOTES.md")
    if os.path.exists(notes):
        with open(notes) as fh:
            L += ["", fh.read().strip()]
    cmds = os.path.join(out, "commands.sh")
    if os.path.exists(cmds):
        with open(cmds) as fh:
            L += ["", "## Commands (`commands.sh` in this folder)", "", "```sh", fh.read().strip(), "```"]
    path = os.path.join(out, "ABLATION.md")
    with open(path, "w") as fh:
        fh.write("\n".join(L) + "\n")
    return path
