#!/usr/bin/env python3
"""Prints the job A/B comparison (DATCP §4.4, Fig. 14) from AbScenario's JSON results.

usage: ab-table.py OFF.json [ON.json]
"""
import json
import sys


def row(name, off, on, unit="s", scale=1000.0):
    if on is None:
        return f"| {name} | {off / scale:.2f} {unit} | (not run) | |"
    return f"| {name} | {off / scale:.2f} {unit} | {on / scale:.2f} {unit} | {on / off:.2f} |"


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    off = json.load(open(argv[1]))
    on = json.load(open(argv[2])) if len(argv) == 3 else None
    get = lambda r, job, key: None if r is None else r[job][key]
    print("| job A/B, 10 MB per map output, 100 Mbit/s ToR port | off (cubic, stock shuffle) "
          "| on (datcp) | on / off |")
    print("|---|---|---|---|")
    print(row("job B shuffle (last map done -> copy done)", off["jobB"]["shuffleMillis"],
              get(on, "jobB", "shuffleMillis")))
    print(row("job B completion (from release of the maps)", off["jobB"]["completionMillis"],
              get(on, "jobB", "completionMillis")))
    print(row("job A shuffle (last map done -> copy done)", off["jobA"]["shuffleMillis"],
              get(on, "jobA", "shuffleMillis")))
    print(row("job A completion (from release of the maps)", off["jobA"]["completionMillis"],
              get(on, "jobA", "completionMillis")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
