"""bench/workload validate SPEC
bench/workload report RESULTS.json --out DIR
bench/workload convert --trace FILE --select START:COUNT --hosts H --load L
                       --target docker|replay --out SPEC [--link-mbit 100]
                       [--max-maps M] [--max-reduces R] [--min-bytes B] [--max-bytes B]

Workload specs and results of issue 16 (bench/README.md "Workloads"). Exit code 2 with
a message naming the field on bad input."""
from __future__ import annotations

import argparse
import json
import os
import sys

from . import coflows, workload
from .workload import WorkloadError


def write_spec(spec, path):
    """One job per line: specs are read and diffed by people."""
    jobs = ",\n".join("  " + json.dumps(j) for j in spec["jobs"])
    head = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in spec.items()
                     if k != "jobs")
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as fh:
        fh.write(f"{{{head}, \"jobs\": [\n{jobs}\n]}}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench/workload", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate", help="check a workload spec")
    v.add_argument("spec")
    r = sub.add_parser("report", help="TABLE.md, cdf.png, slowdown.png from results.json")
    r.add_argument("results")
    r.add_argument("--out", required=True, help="directory for the report")
    c = sub.add_parser("convert", help="a spec from a slice of the FB2010 coflow trace")
    c.add_argument("--trace", required=True)
    c.add_argument("--select", required=True, metavar="START:COUNT",
                   help="COUNT coflows from 0-based position START, in the trace's order")
    c.add_argument("--hosts", required=True, type=int,
                   help="replay: hosts of the emulated fabric; docker: NodeManagers that "
                        "run reduces (the load is the mean over them)")
    c.add_argument("--load", required=True, type=float,
                   help="offered load of the busiest reducer downlink, 0.5-0.8 in issue 16")
    c.add_argument("--target", required=True, choices=coflows.TARGETS)
    c.add_argument("--out", required=True, help="spec file to write")
    c.add_argument("--name", help="spec name (default: the out file's stem)")
    c.add_argument("--link-mbit", type=float, help="link rate, written into the spec (default: none written; runners assume 100)")
    for k, what in (("max-maps", "maps per job"), ("max-reduces", "reduces per job"),
                    ("min-bytes", "shuffle bytes of the slice's smallest job"),
                    ("max-bytes", "shuffle bytes of the slice's largest job")):
        dflt = ", ".join(f"{t} {coflows.DEFAULTS[t][k.replace('-', '_')]}"
                         for t in coflows.TARGETS)
        c.add_argument(f"--{k}", type=int, help=f"{what} (default: {dflt})")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "validate":
            spec = workload.load_spec(a.spec)
            print(f"ok: {workload.describe_spec(spec)}")
        elif a.cmd == "report":
            res = workload.load_results(a.results)
            an, _ = workload.report(res, a.out)
            print(f"modes compared: {', '.join(an['modes'])}; best baseline {an['best']}")
            for m in an["modes"]:
                mr = res["modes"][m]
                print(f"  {m}: cc_seen {mr['cc_seen']} dscp_seen {mr['dscp_seen']} "
                      f"mean JCT {an['stats'][m]['mean']:.2f} s "
                      f"({an['ratio_off'][m]['mean']:.2f}x off, "
                      f"{an['ratio_best'][m]['mean']:.2f}x {an['best']})")
            for name, val, lim, met in an["targets"] or []:
                print(f"  target {name} {val:.2f} (limit {lim:.2f}): "
                      f"{'met' if met else 'missed'}")
            print(f"wrote {os.path.join(a.out, 'TABLE.md')}, cdf.png, slowdown.png")
        else:
            _, trace = coflows.parse_trace(a.trace)
            start, count = coflows.parse_select(a.select, len(trace))
            name = a.name or os.path.splitext(os.path.basename(a.out))[0]
            spec, summ = coflows.convert(trace, start, count, a.hosts, a.load, a.target,
                                         a.link_mbit, name, max_maps=a.max_maps,
                                         max_reduces=a.max_reduces, min_bytes=a.min_bytes,
                                         max_bytes=a.max_bytes)
            write_spec(spec, a.out)
            print(coflows.format_summary(summ))
            print(f"wrote {a.out}")
    except WorkloadError as e:
        print(f"bench/workload: {e}", file=sys.stderr)
        return 2
    return 0
