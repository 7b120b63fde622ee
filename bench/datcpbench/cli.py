"""bench/run SCENARIO [--cc CC] [--json] [--out DIR]
bench/run custom --spec FILE.json [--cc CC] [--json]
bench/run all --out DIR
bench/run trace --trace SPEC.json [--select START:COUNT] [--hosts H] [--modes off,dctcp,prio,on]
                [--rounds N] [--out DIR]
bench/run dcudp-incast [--short] [--senders 1,2,..] [--durations 1,0.01] [--rounds N] [--dctcp-g G]
                       [--protocols dcudp,dctcp,reno] [--out DIR] [--json]
bench/run dcudp-reclaim [--protocols dcudp,dctcp-k10,dctcp-k50,reno] [--rounds N] [--dctcp-g G]
                        [--out DIR] [--json]
bench/run fqcn-fairness [--short] [--staggered] [--rounds N] [--link-mbps M] [--out DIR] [--json]
bench/run fqcn-incast [--short] [--senders 1,4,8,16,32] [--rounds N] [--link-mbps M] [--out DIR] [--json]
bench/run pfdct-incast [--short] [--senders 10,20,..] [--rounds N] [--out DIR] [--json]
bench/run pfdct-threshold [--short] [--rounds N] [--seed S] [--out DIR] [--json]
bench/run SCENARIO --runs N --out DIR [--seed S] [--label L] [--kernel-trace SEC]
bench/run stats --out DIR
bench/run diagnose --out DIR"""
from __future__ import annotations

import argparse
import json
import os
import sys

from . import kernel, scenarios
from .netns import log


def fmt_table(r):
    lines = [f"scenario {r['scenario']}  cc {r['cc']}  link {r['link_mbps']} Mbit/s  "
             f"switch {r['switch_config'].get('profile', '')} ({r['switch'].get('impl')})"]
    flows = r["flows"]
    if r["scenario"].startswith("incast"):
        s = r["summary"]
        lines.append(f"{'senders':>8} {'goodput Mbit/s':>15} {'% link':>7}")
        for n, g in s["goodput_mbps"].items():
            lines.append(f"{n:>8} {g:>15.1f} {100 * g / r['link_mbps']:>6.1f}%")
    else:
        lines.append(f"{'id':<12} {'size MB':>8} {'start':>6} {'deadline':>8} {'imp':>4} "
                     f"{'fct s':>7} {'met':>5} {'Mbit/s':>7}")
        for f in flows:
            sz = "inf" if f["size_bytes"] is None else f"{f['size_bytes'] / 1e6:.2f}"
            dl = "-" if f["deadline_s"] is None else f"{f['deadline_s']:.2f}"
            fct = "-" if f["fct_s"] is None else f"{f['fct_s']:.3f}"
            met = "-" if f["met"] is None else ("yes" if f["met"] else "NO")
            if f.get("killed"):
                met += "(k)"
            elif f.get("suspended"):
                met += "(s)"
            lines.append(f"{f['id']:<12} {sz:>8} {f['start_s']:>6.2f} {dl:>8} "
                         f"{f['importance']:>4.1f} {fct:>7} {met:>5} {f['mean_mbps']:>7.2f}")
    sw = r["switch"]
    lines.append(f"deadline met ratio: {r['deadline_met_ratio']}   switch: marks {sw.get('marks')} "
                 f"drops {sw.get('drops')} peak queue {sw.get('peak_queue_bytes')} B "
                 f"steady {sw.get('steady')}")
    if r.get("link_util") is not None:
        lines.append(f"link utilisation {r['link_util']:.2f}" +
                     ("  (CPU-starved run: the host, not the link, was the limit)"
                      if r.get("cpu_starved") else ""))
    summ = {k: v for k, v in r["summary"].items() if k not in ("fct_s", "goodput_mbps")}
    lines.append(f"summary: {json.dumps(summ)}")
    return "\n".join(lines)


def strip_for_json(r):
    return r


def trace(ap, a):
    """--trace is a workload spec with placement (JSON), or a coflow trace (FB2010 format)
    converted here with --select, --hosts and --load as `bench/workload convert --target
    replay` would."""
    from . import coflows, replay, workload
    if not a.trace:
        ap.error("trace needs --trace SPEC.json or --trace TRACE.txt")
    if a.rounds < 1:
        ap.error(f"--rounds {a.rounds}: must be an integer >= 1")
    try:
        with open(a.trace) as fh:
            is_json = fh.read(1) == "{"
        if is_json:
            if a.load is not None:
                ap.error("--load applies when converting a coflow trace; the spec's load is fixed")
            spec = replay.select(workload.load_spec(a.trace), a.select)
        else:
            if a.hosts is None or a.load is None:
                ap.error("a coflow trace needs --hosts and --load to be converted")
            trace = coflows.parse_trace(a.trace)
            start, count = coflows.parse_select(a.select or f"0:{len(trace)}", len(trace))
            spec, summary = coflows.convert(trace, start, count, a.hosts, a.load, "replay")
            print(coflows.format_summary(summary), file=sys.stderr)
    except (OSError, workload.WorkloadError) as e:
        raise SystemExit(f"--trace {a.trace}: {e}")
    if spec.get("hosts") is None:
        raise SystemExit(f"--trace {a.trace}: hosts: the trace replay needs placement")
    if a.hosts is not None and a.hosts != spec["hosts"]:
        ap.error(f"--hosts {a.hosts}: the spec places jobs on {spec['hosts']} hosts")
    modes = [m for m in a.modes.split(",") if m]
    return replay.run(spec, modes, a.out or "replay-results", force_cc=a.force_cc,
                      timeout_s=a.timeout, rounds=a.rounds)


def repeat(a):
    """--runs N: run i on a fresh testbed with seed --seed + i (the scenario is rebuilt:
    mixed draws its sizes and deadlines from the seed); each result is written as it
    comes, then the summary over all run files of --out."""
    from . import runner, stats
    from .topo import RECEIVER_NET
    label = a.label or (a.cc + (f"@{a.kmod_profile}" if a.kmod_profile else ""))
    os.makedirs(a.out, exist_ok=True)
    for i in range(a.runs):
        seed = a.seed + i
        spec = scenarios.build(a.scenario, a.link_mbps, a.switch_profile, a.short, seed)
        if a.kernel_trace:
            spec["kernel_trace_s"] = a.kernel_trace
        log(f"run {i + 1}/{a.runs}: {a.scenario} with {label}, seed {seed} ...")
        r = runner.run_spec(spec, a.cc, boost=a.boost_softirq or None)
        r.update(seed=seed, label=label)
        if kernel.available():
            # the run's flow entries must be gone: the next run starts from a clean map
            left = [e for e in kernel.flow_list() or [] if str(e.get("dst", "")).startswith(
                RECEIVER_NET)]
            r["kernel_flows_left"] = left
            if left:
                log(f"warning: {len(left)} bench flow entries left in the kernel after run {i + 1}")
        stats.write_run(os.path.join(a.out, stats.run_file(a.scenario, label, seed)), r)
        log(f"  met {r['summary'].get('met')}/{r['summary'].get('deadline_flows')}  "
            f"{json.dumps(stats.metrics(r))}")
    txt = stats.summarize_dir(a.out)
    if a.json:
        with open(os.path.join(a.out, "summary.json")) as fh:
            sys.stdout.write(json.dumps(json.load(fh)) + "\n")
    else:
        print(txt)
    return 0


def emit(a, res, module):
    """The result of a scenario module (dcudp_incast, fqcn_fairness): SCENARIO.json and
    SCENARIO.png in --out, then one JSON object (--json) or the module's table."""
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, f"{res['scenario']}.json"), "w") as fh:
            json.dump(res, fh, indent=1)
        module.plot(res, os.path.join(a.out, f"{res['scenario']}.png"))
    if a.json:
        sys.stdout.write(json.dumps(res) + "\n")
    else:
        print(module.table(res))
    return 0


def sender_counts(ap, a):
    """--senders as a list of counts >= 1, or None when not given."""
    try:
        counts = [int(x) for x in a.senders.split(",")] if a.senders else None
    except ValueError:
        ap.error("--senders: comma-separated integers")
    if counts and min(counts) < 1:
        ap.error("--senders must be >= 1")
    return counts


def dcudp_args(ap, a, known):
    """--dctcp-g and --protocols of the DCUDP scenarios: the protocols to run."""
    if not 0 < a.dctcp_g <= 1:
        ap.error(f"--dctcp-g {a.dctcp_g}: must be in (0, 1]")
    protos = a.protocols.split(",") if a.protocols else list(known)
    bad = [p for p in protos if p not in known]
    if bad:
        ap.error(f"--protocols: {', '.join(bad)} unknown; accepted: {', '.join(known)}")
    return protos


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", help="|".join(scenarios.NAMES + ["custom", "all", "report",
                                                             "ablation", "cleanup", "trace",
                                                             "dcudp-incast", "dcudp-reclaim",
                                                             "fqcn-fairness", "fqcn-incast",
                                                             "pfdct-incast", "pfdct-threshold",
                                                             "stats",
                                                             "diagnose"]))
    ap.add_argument("--cc", default="datcp", help="|".join(kernel.CCS))
    ap.add_argument("--json", action="store_true", help="print exactly one JSON object")
    ap.add_argument("--out", help="directory for results (JSON per run; report for 'all')")
    ap.add_argument("--spec", help="scenario spec file for 'custom'")
    ap.add_argument("--link-mbps", type=int, default=100)
    ap.add_argument("--switch-profile", default=scenarios.DEFAULT_PROFILE,
                    choices=sorted(scenarios.SWITCH_PROFILES))
    ap.add_argument("--short", action="store_true", help="CI-sized version of the scenario")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--boost-softirq", action="store_true",
                    help="raise ksoftirqd priority and this session's autogroup nice during "
                         "runs (CPU shared with builds)")
    ap.add_argument("--kmod-profile", choices=["yield", "tuned", "paper"],
                    help="datcp algorithm parameters to load (default: whatever is loaded, "
                         "else yield); replaces an unused datcp with other parameters")
    ap.add_argument("--kmod-param", action="append", default=[], metavar="NAME=VALUE",
                    help="one datcp parameter on top of the profile (datcpctl load --param)")
    rp = ap.add_argument_group("repeated runs (see bench/README.md)")
    rp.add_argument("--runs", type=int, help="run the scenario N times, run i with seed "
                                             "--seed + i; per-run JSON, summary.json and "
                                             "SUMMARY.md (median, min-max) in --out")
    rp.add_argument("--label", help="name of the CC column in run files and the summary "
                                    "(default: --cc, with @PROFILE for --kmod-profile)")
    rp.add_argument("--kernel-trace", type=float, default=0.0, metavar="SEC",
                    help="sample the kernel's per-flow state (urgency, precedence, b, cwnd, "
                         "quench) every SEC seconds into the result's kernel_trace")
    ap.add_argument("--ccs", help="for 'all': comma-separated subset of CCs")
    ap.add_argument("--scenarios", help="for 'all': comma-separated subset of scenarios")
    dc = ap.add_argument_group("dcudp-incast, dcudp-reclaim (DCUDP sections V-A, V-B, see "
                               "bench/README.md)")
    dc.add_argument("--senders", help="comma-separated sender counts (default 1,2,4,8,16,20; "
                                      "--short 1,2,4,8; pfdct-incast: 10,20,40,60,80,100, "
                                      "--short 10,20; fqcn-incast: servers, 1,4,8,16,32, "
                                      "--short 16)")
    dc.add_argument("--durations", help="comma-separated CBR durations D in s (default 1,0.01)")
    dc.add_argument("--dctcp-g", type=float, default=0.3,
                    help="dcudp-incast, dcudp-reclaim: DCTCP's g (datcpctl load --param dctcp_g; "
                         "default 0.3, the paper's)")
    dc.add_argument("--protocols", help="comma-separated subset: dcudp-incast dcudp,dctcp,reno; "
                                        "dcudp-reclaim dcudp,dctcp-k10,dctcp-k50,reno "
                                        "(default all)")
    fq = ap.add_argument_group("fqcn-fairness (FQCN section IV-A, see bench/README.md)")
    fq.add_argument("--staggered", action="store_true",
                    help="Fig. 4's eight staggered sources instead of Fig. 2-3's four "
                         "simultaneous ones (runs of 20 s, 10 s with --short)")
    tr = ap.add_argument_group("trace replay (bench/run trace, see bench/README.md)")
    tr.add_argument("--trace", help="workload spec (JSON) with placement (hosts, map_hosts, "
                                    "reduce_hosts), or a coflow trace to convert")
    tr.add_argument("--select", metavar="START:COUNT", help="replay jobs[START:START+COUNT]")
    tr.add_argument("--hosts", type=int, help="host count (must match the spec's hosts)")
    tr.add_argument("--load", type=float, help="offered load at the bottleneck ports (converter)")
    tr.add_argument("--modes", default="off,dctcp,prio,on", help="comma-separated, in run order")
    tr.add_argument("--rounds", type=int, default=1,
                    help="rounds per mode (default 1); results carry the medians per job; "
                         "dcudp-incast: rounds per protocol and sender count; "
                         "fqcn-fairness: rounds per mode (qcn, fqcn); fqcn-incast: rounds "
                         "per mode (tcp, qcn, fqcn) and server count; pfdct-*: rounds per "
                         "mode (and sender count)")
    tr.add_argument("--timeout", type=float, default=900.0,
                    help="seconds after the last submit before unfinished jobs fail the mode")
    tr.add_argument("--force-cc", help=argparse.SUPPRESS)   # test hook: proves the mode check
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("bench/run needs root (network namespaces)")

    if a.kmod_profile or a.kmod_param:
        kernel.LOAD_ARGS[:] = kernel.load_args(a.kmod_profile, a.kmod_param)
    from . import runner
    from .netns import install_signal_handlers
    install_signal_handlers()
    if a.scenario == "cleanup":
        from .netns import reap_stale
        log(f"removed {reap_stale()} stale namespaces")
        return 0
    if a.scenario == "report":   # re-render REPORT.md + plots from the JSON in --out
        from . import report
        res = report.load_dir(a.out)
        names = [n for n in scenarios.NAMES if any(k[0] == n for k in res)]
        ccs = [c for c in report.ALL_CCS if any(k[1] == c for k in res)]
        report.write_report(a.out, res, names, ccs, [], a.switch_profile, a.link_mbps, 0.0)
        return 0
    if a.scenario == "stats":   # summary.json + SUMMARY.md from the run files in --out
        from . import stats
        if not a.out:
            ap.error("stats needs --out DIR")
        print(stats.summarize_dir(a.out))
        return 0
    if a.scenario == "diagnose":   # why deadline flows miss, from the run files in --out
        from . import diagnose
        if not a.out:
            ap.error("diagnose needs --out DIR")
        print(diagnose.write_dir(a.out))
        return 0
    if a.scenario == "ablation":   # ABLATION.md from <profile>-<n>/ folders in --out
        from . import ablation
        log(f"wrote {ablation.write(a.out)}")
        return 0
    if a.scenario == "trace":
        return trace(ap, a)
    if a.scenario == "all":
        from . import report
        out = a.out or "bench/results/latest"
        return report.run_all(out, ccs=a.ccs.split(",") if a.ccs else None,
                              names=a.scenarios.split(",") if a.scenarios else None,
                              profile=a.switch_profile, link_mbps=a.link_mbps,
                              short=a.short, seed=a.seed, boost=a.boost_softirq or None)
    if a.scenario == "dcudp-incast":   # DCUDP section V-A (datcpbench/dcudp_incast.py)
        from . import dcudp_incast
        if a.rounds < 1:
            ap.error(f"--rounds {a.rounds}: must be an integer >= 1")
        try:
            counts = [int(x) for x in a.senders.split(",")] if a.senders else None
            durs = [float(x) for x in a.durations.split(",")] if a.durations else None
        except ValueError:
            ap.error("--senders: comma-separated integers; --durations: comma-separated seconds")
        if (counts and min(counts) < 1) or (durs and min(durs) <= 0):
            ap.error("--senders must be >= 1 and --durations > 0")
        protos = dcudp_args(ap, a, dcudp_incast.PROTOCOLS)
        res = dcudp_incast.run(a.link_mbps, a.short, protocols=protos, rounds=a.rounds,
                               counts=counts, durations=durs, boost=a.boost_softirq or
                               os.environ.get("DATCPBENCH_BOOST_SOFTIRQ") == "1",
                               dctcp_g=a.dctcp_g)
        return emit(a, res, dcudp_incast)
    if a.scenario == "dcudp-reclaim":   # DCUDP section V-B (datcpbench/dcudp_reclaim.py)
        from . import dcudp_reclaim
        if a.rounds < 1:
            ap.error(f"--rounds {a.rounds}: must be an integer >= 1")
        protos = dcudp_args(ap, a, dcudp_reclaim.PROTOCOLS)
        res = dcudp_reclaim.run(a.link_mbps, protos, rounds=a.rounds, dctcp_g=a.dctcp_g,
                                boost=a.boost_softirq or
                                os.environ.get("DATCPBENCH_BOOST_SOFTIRQ") == "1")
        return emit(a, res, dcudp_reclaim)
    if a.staggered and a.scenario != "fqcn-fairness":
        ap.error("--staggered: only for fqcn-fairness")
    if a.scenario == "fqcn-fairness":   # FQCN section IV-A (datcpbench/fqcn_fairness.py)
        from . import fqcn_fairness
        if a.rounds < 1:
            ap.error(f"--rounds {a.rounds}: must be an integer >= 1")
        if a.staggered:
            dur = 10.0 if a.short else 20.0
        else:
            dur = 4.0 if a.short else 10.0
        res = fqcn_fairness.run(a.link_mbps, rounds=a.rounds, duration_s=dur,
                                staggered=a.staggered)
        return emit(a, res, fqcn_fairness)
    if a.scenario == "fqcn-incast":   # FQCN section IV-B (datcpbench/fqcn_incast.py)
        from . import fqcn_incast
        if a.rounds < 1:
            ap.error(f"--rounds {a.rounds}: must be an integer >= 1")
        counts = sender_counts(ap, a) or (fqcn_incast.SERVERS_SHORT if a.short
                                          else fqcn_incast.SERVERS)
        if max(counts) > 64:
            ap.error("--senders: fqcn-incast takes at most 64 servers (fqcn-cp's input ports)")
        res = fqcn_incast.run(a.link_mbps, counts, a.rounds,
                              fqcn_incast.BLOCKS_SHORT if a.short else fqcn_incast.BLOCKS)
        return emit(a, res, fqcn_incast)
    if a.scenario in ("pfdct-incast", "pfdct-threshold"):   # PFDCT §5.2, §4 (datcpbench/pfdct.py)
        from . import pfdct
        if a.rounds < 1:
            ap.error(f"--rounds {a.rounds}: must be an integer >= 1")
        if a.scenario == "pfdct-threshold":
            return emit(a, pfdct.run_threshold(a.link_mbps, a.short, a.rounds, a.seed), pfdct)
        return emit(a, pfdct.run_incast(a.link_mbps, a.short, a.rounds, sender_counts(ap, a)),
                    pfdct)
    if a.scenario == "custom":
        if not a.spec:
            ap.error("custom needs --spec FILE.json")
        with open(a.spec) as fh:
            spec = json.load(fh)
    else:
        if a.scenario not in scenarios.NAMES:
            ap.error(f"unknown scenario {a.scenario}")
        spec = scenarios.build(a.scenario, a.link_mbps, a.switch_profile, a.short, a.seed)
    if a.kernel_trace < 0:
        ap.error(f"--kernel-trace {a.kernel_trace}: must be >= 0 seconds")
    if a.kernel_trace:
        spec["kernel_trace_s"] = a.kernel_trace
    if a.runs is not None:
        if a.runs < 1:
            ap.error(f"--runs {a.runs}: must be an integer >= 1")
        if not a.out:
            ap.error("--runs needs --out DIR")
        if a.scenario == "custom":
            ap.error("--runs repeats a named scenario over seeds; custom specs have no seed")
        return repeat(a)

    def progress(t, dur):
        log(f"  [{spec['scenario']} / {a.cc}] t={t:5.1f}s / max {dur:.0f}s")

    log(f"running {spec.get('scenario')} with {a.cc} ...")
    r = runner.run_spec(spec, a.cc, progress, boost=a.boost_softirq or None)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, f"{r['scenario']}__{a.cc}.json"), "w") as fh:
            json.dump(r, fh)
    if a.json:
        sys.stdout.write(json.dumps(r) + "\n")
    else:
        print(fmt_table(r))
    return 0
