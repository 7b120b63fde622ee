#!/usr/bin/env python3
"""Prints the job A/B comparison (DATCP §4.4, Fig. 14) from a run of the workload runner on
docker/workloads/ab.json (docker/demo-ab.sh): medians over the rounds of each mode, then one
line per round, with whether all of job B's flows met the deadline the scheduler gave them,
and each job's real last map end against the scheduler's estimates of it, with the map-wave
rule and without (issue 19 item 8).

usage: ab-table.py DIR      (DIR: run-workload.sh's --out, with raw/off/ and raw/on/)
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))
from datcpbench import dockerrun  # noqa: E402

# (row, job, key of the job's history details; completion counts from the maps' release)
ROWS = [
    ("job B copy (first fetch -> copy done; Fig. 14's measure)", "B", "copyMillis"),
    ("job B shuffle (last map done -> copy done)", "B", "shuffleMillis"),
    ("job B completion (from release of the maps)", "B", "completionMillis"),
    ("job A copy (first fetch -> copy done)", "A", "copyMillis"),
    ("job A completion (from release of the maps)", "A", "completionMillis"),
    ("job A completion less its reduce's poll wait (0-1 s of chance)", "A",
     "completionLessPollMillis"),
]
FROM_RELEASE = {"completionMillis", "completionLessPollMillis"}


def rounds(run_dir, mode, count):
    """The mode's rounds 1..count (raw/ may hold more from an earlier, longer run): (round
    JSON, scheduler records or None)."""
    out = []
    for i in range(1, count + 1):
        p = os.path.join(run_dir, "raw", mode, f"round-{i}.json")
        if not os.path.exists(p):
            break
        with open(p) as f:
            r = json.load(f)
        sched = os.path.join(run_dir, "raw", mode, f"round-{i}-scheduler.json")
        records = None
        if os.path.exists(sched):
            with open(sched) as f:
                records = json.load(f)
        out.append((r, records))
    return out


def value(rnd, job, key):
    """Milliseconds of a job's history detail; completions from the maps' release."""
    h = rnd["jobs"][job]["history"]
    if key not in FROM_RELEASE:
        return h[key]
    return h[key] - (rnd.get("releaseMillis") or 0)


def b_on_time(rnd, records):
    """True when every flow of job B the scheduler recorded finished by its deadline; None
    without records (a mode without the scheduler)."""
    if not records:
        return None
    flows = (records.get("flows") or {}).get(rnd["jobs"]["B"]["history"]["jobId"]) or {}
    flows = flows.get("flows") or []
    if not flows:
        return False
    return all(f.get("deadlineUnixNanos", 0) > 0 and f.get("finishUnixNanos", 0) > 0
               and f.get("met") for f in flows)


def seconds(millis):
    return f"{millis / 1000.0:.2f} s"


def table(run_dir):
    try:
        with open(os.path.join(run_dir, "results.json")) as f:
            results = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"ab-table: {run_dir}/results.json: {e}")
    runs = {m: rounds(run_dir, m, results["rounds"]) if m in results["modes"] else []
            for m in ("off", "on")}
    if not runs["off"]:
        raise SystemExit(f"ab-table: no rounds of mode off under {run_dir}/raw/off")
    on = runs["on"]
    n = "/".join(str(len(r)) for r in runs.values() if r)
    lines = [f"| job A/B, median of {n} rounds | off (cubic, stock shuffle) | on (datcp) | on / off |",
             "|---|---|---|---|"]
    for name, job, key in ROWS:
        a = statistics.median(value(r, job, key) for r, _ in runs["off"])
        if not on:
            lines.append(f"| {name} | {seconds(a)} | (not run) | |")
            continue
        b = statistics.median(value(r, job, key) for r, _ in on)
        lines.append(f"| {name} | {seconds(a)} | {seconds(b)} | {b / a:.2f} |")
    lines += ["", "| round | job B copy | job B shuffle | job A completion | job A poll wait "
              "| job B's flows on time |", "|---|---|---|---|---|---|"]
    for mode, rs in runs.items():
        for i, (r, records) in enumerate(rs, 1):
            met = b_on_time(r, records)
            lines.append(f"| {mode} {i} | {seconds(value(r, 'B', 'copyMillis'))} "
                         f"| {seconds(value(r, 'B', 'shuffleMillis'))} "
                         f"| {seconds(value(r, 'A', 'completionMillis'))} "
                         f"| {seconds(value(r, 'A', 'pollWaitMillis'))} "
                         f"| {'-' if met is None else ('yes' if met else 'no')} |")
    if on:
        met = sum(bool(b_on_time(r, rec)) for r, rec in on)
        lines += ["", f"Job B's flows all met their deadline in {met} of {len(on)} rounds on."]
    lines += dockerrun.map_end_lines(results)
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.write(table(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
