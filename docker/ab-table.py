#!/usr/bin/env python3
"""Prints the job A/B comparison (DATCP §4.4, Fig. 14) from AbScenario's JSON results.

Times are the medians over the rounds of each file; the rounds follow, one line each.

usage: ab-table.py OFF.json [ON.json]
"""
import json
import sys

ROWS = [
    ("job B copy (first fetch -> copy done; Fig. 14's measure)", "jobB", "copyMillis"),
    ("job B shuffle (last map done -> copy done)", "jobB", "shuffleMillis"),
    ("job B completion (from release of the maps)", "jobB", "completionMillis"),
    ("job A copy (first fetch -> copy done)", "jobA", "copyMillis"),
    ("job A completion (from release of the maps)", "jobA", "completionMillis"),
    ("job A completion less its reduce's poll wait (0-1 s of chance)", "jobA",
     "completionLessPollMillis"),
]


def seconds(millis):
    return f"{millis / 1000.0:.2f} s"


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    runs = [json.load(open(path)) for path in argv[1:]]
    off, on = runs[0], runs[1] if len(runs) == 2 else None
    rounds = "/".join(str(len(r["rounds"])) for r in runs)
    print(f"| job A/B, 10 MB per map output, 100 Mbit/s ToR port, median of {rounds} rounds "
          "| off (cubic, stock shuffle) | on (datcp) | on / off |")
    print("|---|---|---|---|")
    for name, job, key in ROWS:
        a = off["median"][job][key]
        if on is None:
            print(f"| {name} | {seconds(a)} | (not run) | |")
        else:
            b = on["median"][job][key]
            print(f"| {name} | {seconds(a)} | {seconds(b)} | {b / a:.2f} |")
    print()
    print("| round | job B copy | job B shuffle | job A completion | job A poll wait |")
    print("|---|---|---|---|---|")
    for run in runs:
        for i, r in enumerate(run["rounds"], 1):
            print(f"| {run['label']} {i} | {seconds(r['jobB']['copyMillis'])} "
                  f"| {seconds(r['jobB']['shuffleMillis'])} "
                  f"| {seconds(r['jobA']['completionMillis'])} "
                  f"| {seconds(r['jobA']['pollWaitMillis'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
