"""Mode verification and results of docker/run-workload.sh (docker/README.md, "The workload
runner").

While a round's jobs run, the runner samples every NodeManager's shuffle connections from the
kernel (`ss -tinH --tos` on port 13562, both ends) and the datcp flow table (`datcpctl flow list
--json`). `verify` turns those samples into what each mode actually used (`cc_seen`,
`dscp_seen`, ...) and the list of ways they break the mode's definition; `cpu_usage` adds what
the round cost in CPU (each container's cgroup, each NodeManager's Java processes by role);
`merge` builds results.json (issue 16's schema) from the rounds' job-client output;
`map_end_estimates` holds the scheduler's estimates of each job's last map's end against the
real one (issue 19 item 8) and `mapend` prints them for one round.

    python3 -m datcpbench.dockerrun check --mode MODE --samples DIR --out FILE
    python3 -m datcpbench.dockerrun merge --dir DIR --spec NAME --modes M,.. --rounds N
    python3 -m datcpbench.dockerrun mapend --round FILE --scheduler FILE --mode MODE --index I
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

MODES = ("off", "dctcp", "prio", "on")
SHUFFLE_PORT = 13562
# what each mode's shuffle connections must run (issue 16 §2): off is Hadoop as shipped
EXPECTED_CC = {"off": "cubic", "dctcp": "datcp", "prio": "datcp", "on": "datcp"}
# modes whose flows the kmod must run in its dctcp mode (plan: "every flow mode dctcp")
DCTCP_FLOW_MODES = ("dctcp", "prio")
# ss -i's option flags that precede the congestion control's name on the info line
SS_FLAGS = {"ts", "sack", "ecn", "ecnseen", "fastopen", "noqueue", "ecn_low"}
_ADDR = re.compile(r"^(\[[0-9a-fA-F:.%]+\]|[0-9.]+|\*):(\d+)$")


def _addr(token):
    """'10.0.0.1:13562' or '[::ffff:10.0.0.1]:13562' -> ('10.0.0.1', 13562)."""
    m = _ADDR.match(token)
    if not m:
        return None
    ip = m.group(1).strip("[]")
    if ip.startswith("::ffff:"):
        ip = ip[len("::ffff:"):]
    return ip, int(m.group(2))


def parse_ss(text, host):
    """Connections in `ss -tinH --tos` samples (blocks after '# TIME' lines), one dict per
    socket and sample: host, local, peer (IP, port), cc, ecn (negotiated), dscp (the socket's
    traffic class: IPv6 sockets' tclass, else tos, shifted to DSCP), sender (local port is the
    shuffle port: the map side, which sends the bytes)."""
    conns = []
    current = None
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if not line[0].isspace():
            tokens = line.split()
            addrs = [a for a in map(_addr, tokens) if a]
            if len(addrs) < 2:
                raise ValueError(f"{host}: not an ss socket line: {line!r}")
            fields = dict(t.split(":", 1) for t in tokens if t.startswith(("tos:", "tclass:")))
            tc = fields.get("tclass", fields.get("tos", "0"))
            current = {"host": host, "local": addrs[0], "peer": addrs[1], "cc": None,
                       "ecn": False, "dscp": int(tc, 0) >> 2,
                       "sender": addrs[0][1] == SHUFFLE_PORT}
            conns.append(current)
        elif current is not None:
            words = []
            for t in line.split():
                if ":" in t or "(" in t:
                    break
                words.append(t)
            current["ecn"] = "ecn" in words
            names = [w for w in words if w not in SS_FLAGS]
            current["cc"] = names[-1] if names else None
            current = None
    return conns


def parse_flows(text):
    """(src, dst) -> kmod mode, from `datcpctl flow list --json` samples (one array a line)."""
    modes = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("["):
            continue
        try:
            flows = json.loads(line)
        except json.JSONDecodeError:
            continue  # a sample cut short when the sampler was stopped
        for f in flows:
            if "mode" in f:
                modes[(_addr(f["src"]), _addr(f["dst"]))] = f["mode"]
    return modes


def verify(mode, conns, flow_modes):
    """(summary, problems): what the mode's shuffle connections ran, and every way that breaks
    the mode's definition. No connection sampled is a problem: nothing was verified."""
    if mode not in MODES:
        raise ValueError(f"mode: {mode!r} unknown (accepted: {', '.join(MODES)})")
    problems = []
    senders = [c for c in conns if c["sender"]]
    # the kmod keys a flow by the sending socket: map side local address -> reducer
    seen_modes = {}
    for c in senders:
        m = flow_modes.get((c["local"], c["peer"]))
        if m is not None:
            seen_modes.setdefault(m, 0)
            seen_modes[m] += 1
    summary = {
        "cc_seen": sorted({c["cc"] for c in conns if c["cc"]}),
        "dscp_seen": sorted({c["dscp"] for c in senders}),
        "ecn_seen": sorted({c["ecn"] for c in conns}),
        "flow_modes_seen": sorted(seen_modes),
        "connections_sampled": len({(c["host"], c["local"], c["peer"]) for c in conns}),
        "flows_read": sum(seen_modes.values()),
    }
    if not conns:
        problems.append(f"{mode}: no shuffle connection (port {SHUFFLE_PORT}) was sampled on"
                        " any NodeManager: the mode could not be verified")
        return summary, problems
    want = EXPECTED_CC[mode]
    # a reduce fetching from its own host connects to the host's own address (no ToR)
    wrong = sorted({(c["host"], c["cc"], c["local"][0] == c["peer"][0]) for c in conns
                    if c["cc"] != want})
    if wrong:
        problems.append(f"{mode}: shuffle connections must run {want} only, seen "
                        + ", ".join(f"{cc} on {h}" + (" (host-local)" if loc else "")
                                    for h, cc, loc in wrong))
    if mode == "off" and any(c["ecn"] for c in conns):
        problems.append("off: shuffle connections negotiated ECN (Hadoop as shipped does not)")
    if mode in DCTCP_FLOW_MODES:
        other = sorted(m for m in seen_modes if m != "dctcp")
        if other:
            problems.append(f"{mode}: the kmod ran shuffle flows in mode(s) {', '.join(other)},"
                            " the mode defines dctcp only")
    return summary, problems


def check_samples(mode, samples_dir):
    """verify() over a round's sample files: ss-HOST.txt per NodeManager, flows.txt."""
    conns = []
    for path in sorted(glob.glob(os.path.join(samples_dir, "ss-*.txt"))):
        host = os.path.basename(path)[len("ss-"):-len(".txt")]
        with open(path) as f:
            conns += parse_ss(f.read(), host)
    flows = {}
    path = os.path.join(samples_dir, "flows.txt")
    if os.path.exists(path):
        with open(path) as f:
            flows = parse_flows(f.read())
    summary, problems = verify(mode, conns, flows)
    summary["cpu_s"] = cpu_usage(samples_dir)
    return summary, problems


def _read_cgroup_snapshot(path):
    with open(path) as f:
        return {name: int(ns) for name, ns in (line.split() for line in f if line.strip())}


def parse_cpu_samples(text):
    """CPU seconds per role from one cpu-sampler.sh file: per process, its ticks at its last
    sample less those at the round's first sample (0 for a process started later); summed by
    role, with task attempts counted as "map" or "reduce". A process keeps the first role it
    was seen with: an exited JVM not yet reaped has no command line (role "java") but its
    final ticks. A process's last second is lost when it is reaped between two samples."""
    first, last, role_of, hz, t0 = {}, {}, {}, 100, True
    for line in text.splitlines():
        if line.startswith("#"):
            parts = line.split()
            hz = int(parts[2]) if len(parts) > 2 else hz
            t0 = not first
            continue
        parts = line.split()
        if len(parts) != 3:
            continue
        pid, ticks, role = parts[0], int(parts[1]), parts[2]
        if role.startswith("attempt_"):
            role = "map" if "_m_" in role else "reduce"
        if pid not in first:
            first[pid] = ticks if t0 else 0
        if role_of.get(pid, "java") == "java":
            role_of[pid] = role
        last[pid] = ticks
    roles = {}
    for pid, ticks in last.items():
        roles[role_of[pid]] = roles.get(role_of[pid], 0) + (ticks - first[pid]) / hz
    return roles


def cpu_usage(samples_dir):
    """{"containers": {name: s}, "total": s, "roles": {role: s}} for a round, or None when the
    round has no CPU samples (cpu-start.txt, cpu-stop.txt, ps-HOST.txt from the runner)."""
    start, stop = (os.path.join(samples_dir, f"cpu-{w}.txt") for w in ("start", "stop"))
    if not (os.path.exists(start) and os.path.exists(stop)):
        return None
    before, after = _read_cgroup_snapshot(start), _read_cgroup_snapshot(stop)
    containers = {n: round((after[n] - before.get(n, 0)) / 1e9, 2) for n in sorted(after)}
    roles = {}
    for path in sorted(glob.glob(os.path.join(samples_dir, "ps-*.txt"))):
        with open(path) as f:
            for role, s in parse_cpu_samples(f.read()).items():
                roles[role] = roles.get(role, 0) + s
    return {"containers": containers, "total": round(sum(containers.values()), 2),
            "roles": {r: round(s, 2) for r, s in sorted(roles.items())}}


PHASES = ("start", "maps", "wait", "copy", "end")


def phases(job):
    """Where a job's time went (s), from its history details: submission to its first map's
    start (AM and containers), first map's start to last map's end, last map's end to the
    first fetch (reduce start-up, map-completion polls), the copy, the copy's end to the job's
    end. With a barrier, "start" includes the wait at it."""
    h = job["history"]
    first_map = min(m["startMillis"] for m in h["maps"])
    first_fetch = min(r["firstFetchMillis"] for r in h["reduces"])
    copy_end = max(r["shuffleFinishMillis"] for r in h["reduces"])
    ms = (first_map - h["submitMillis"], h["lastMapFinishMillis"] - first_map,
          first_fetch - h["lastMapFinishMillis"], copy_end - first_fetch,
          h["completionMillis"] - copy_end)
    return {k: v / 1000 for k, v in zip(PHASES, ms)}


ESTIMATES = ("first", "latest", "held")
RULES = ("map_wave", "last_completion")


def _held_errors(estimates, real, seconds):
    """Each rule's mean absolute error over time: every estimate (the view's mapEndEstimates)
    weighted by how long it stood, from when it was made to the next one or to the real end
    (estimates made after the real end stood for none of it). None when none stood."""
    made = [seconds(e["madeUnixNanos"]) for e in estimates]
    ends = made[1:] + [real]
    spans = [max(0.0, min(end, real) - start) for start, end in zip(made, ends)]
    window = sum(spans)
    if window <= 0:
        return None
    out = {"made_s": made[0], "estimates": len(estimates), "window_s": round(window, 3)}
    for rule, key in zip(RULES, ("mapWaveUnixNanos", "lastCompletionUnixNanos")):
        out[rule + "_error_s"] = round(sum(abs(seconds(e[key]) - real) * w
                                           for e, w in zip(estimates, spans)) / window, 3)
    if any(e.get("rule") == "EACH_START" for e in estimates):
        # what the planner aimed at before it knew each start: the earliest start's rule,
        # else (0: that start unknown) the last completion's
        out["earliest_start_error_s"] = round(sum(
            abs(seconds(e.get("earliestStartUnixNanos") or e["lastCompletionUnixNanos"]) - real)
            * w for e, w in zip(estimates, spans)) / window, 3)
    return out


def map_end_estimates(rnd, records):
    """Per job of a round (job-client JSON `rnd`, the scheduler's records `records` as
    run-workload.sh keeps them): the real end of its last map (its history: the finish of its
    last map attempt) and the scheduler's first and latest estimates of it (GET /api/v1/jobs:
    firstMapEndEstimate, latestMapEndEstimate) by the map-wave rule the planner uses and by the
    last-completion rule, each with its error (estimate less the real end), and over all its
    estimates, each weighted by how long it stood, each rule's mean absolute error (held).
    Seconds from the round's start. A job the scheduler made no estimate for has first, latest
    and held None; {} without scheduler records."""
    views = ((records or {}).get("jobs") or {}).get("jobs")
    if not views:
        return {}
    by_id = {v["id"]: v for v in views}
    origin = rnd["startMillis"] * 1_000_000

    def seconds(unix_nanos):
        return round((unix_nanos - origin) / 1e9, 3)

    out = {}
    for name, job in rnd["jobs"].items():
        h = job["history"]
        real = h["lastMapFinishMillis"] / 1000
        view = by_id.get(h["jobId"]) or {}
        entry = {"real_s": real, "maps": len(h["maps"])}
        held = view.get("mapEndEstimates")
        entry["held"] = _held_errors(held, real, seconds) if held else None
        for which in ESTIMATES[:2]:
            e = view.get(which + "MapEndEstimate")
            if not e:
                entry[which] = None
                continue
            wave, last = seconds(e["mapWaveUnixNanos"]), seconds(e["lastCompletionUnixNanos"])
            entry[which] = {"made_s": seconds(e["madeUnixNanos"]), "maps_done": e["mapsDone"],
                            "map_wave_s": wave, "last_completion_s": last,
                            "map_wave_error_s": round(wave - real, 3),
                            "last_completion_error_s": round(last - real, 3)}
        out[name] = entry
    return out


def _median_abs_errors(entries):
    """Median absolute error of each estimate by each rule over the entries that have it."""
    out = {}
    for which in ESTIMATES:
        made = [e[which] for e in entries if e and e.get(which)]
        out[which] = {r: round(statistics.median(abs(m[r + "_error_s"]) for m in made), 3)
                      if made else None for r in RULES}
    return out


def _estimate_row(which, m, e):
    """The cells after the real end for one estimate of a round's job; None when it repeats
    the first."""
    if m is None:
        return f"{which} | no estimate | | | | |"
    if which == "held":
        earliest = ("" if m.get("earliest_start_error_s") is None else
                    f" (earliest-start rule: {m['earliest_start_error_s']:.2f} s)")
        return (f"held: {m['estimates']} estimate(s) over {m['window_s']:.2f} s "
                f"| from {m['made_s']:.2f} s | | {m['map_wave_error_s']:.2f} s (mean abs)"
                f"{earliest} | | {m['last_completion_error_s']:.2f} s (mean abs) |")
    if which == "latest" and m == e["first"]:
        return "latest | the first (no later estimate moved an end) | | | | |"
    return (f"{which} | {m['made_s']:.2f} s ({m['maps_done']}/{e['maps']}) "
            f"| {m['map_wave_s']:.2f} s | {m['map_wave_error_s']:+.2f} s "
            f"| {m['last_completion_s']:.2f} s | {m['last_completion_error_s']:+.2f} s |")


def map_end_lines(results):
    """Markdown: per mode with scheduler estimates (results.json's jobs' map_end), one row per
    round, job and estimate (first, latest, held: all weighted by how long each stood): the
    real last map end, when the estimate was made and after how many maps, both rules'
    estimates and errors; then per mode and job the median absolute errors, and in how many
    rounds' estimates the map-wave rule was closer; [] without any."""
    rows, summary = [], []
    for mode, entry in results["modes"].items():
        per = [(n, j["map_end"]) for n, j in sorted(entry.get("jobs", {}).items())
               if j.get("map_end")]
        closer = {w: [0, 0] for w in ESTIMATES}
        for name, me in per:
            for i, e in enumerate(me["rounds"], 1):
                if e is None:
                    continue
                for which in ESTIMATES:
                    m = e.get(which)
                    rows.append(f"| {mode} {i} | {name} | {e['real_s']:.2f} s | "
                                + _estimate_row(which, m, e))
                    if m is not None and not (which == "latest" and m == e["first"]):
                        closer[which][0] += abs(m["map_wave_error_s"]) < abs(
                            m["last_completion_error_s"])
                        closer[which][1] += 1
            med = me["median_abs_error_s"]
            for which in ESTIMATES:
                if (med.get(which) or {}).get("map_wave") is not None:
                    summary.append(f"| {mode} | {name} | {which} "
                                   f"| {med[which]['map_wave']:.2f} s "
                                   f"| {med[which]['last_completion']:.2f} s |")
        for which, (c, n) in closer.items():
            if n:
                summary.append(f"| {mode} | all | {which} | map-wave closer in {c} of {n} | |")
    if not rows:
        return []
    return ["", "## The last map's end: the scheduler's estimates against the real one", "",
            "Seconds from the round's start. Real: the finish of the job's last map attempt "
            "(job history). The scheduler's first estimate (made at the first report of a map "
            "of known length while maps were left and a reduce shuffled), its latest (the "
            "last that moved an end before the last map was done), and all of them held over "
            "time (each weighted by how long it stood before the next one or the real end: the "
            "mean absolute error of the deadline the planner aimed at while it waited), by the "
            "map-wave rule it plans with (running maps end a median after each one's start, "
            "the rest take the slots as they free; with only the earliest start known, a "
            "median after it, the rest in waves: held also by that earliest-start rule when "
            "each start was known) and by the last-completion rule (maps left in waves "
            "of the median after the last map completion); error = estimate - real.", "",
            "| round | job | real last map end | estimate | made (maps done) | map-wave "
            "| error | last-completion | error |", "|---|---|---|---|---|---|---|---|---|"] \
        + rows + ["", "| mode | job | estimate | median abs error, map-wave "
                  "| median abs error, last-completion |", "|---|---|---|---|---|"] + summary


def merge(spec, rounds_by_mode, checks, records_by_mode=None):
    """results.json: per mode, per job the medians over rounds of jct_s, copy_s and the phases
    (phases_s), the rounds' jct_s, bytes and deadline_met (the median jct_s against deadline_s;
    null without one), with the scheduler's records (`records_by_mode`: per mode, per round,
    None where there are none) the estimates of its last map's end per round and their median
    absolute errors (map_end), the union of the rounds' verification summaries, and the
    medians of the rounds' CPU seconds (cpu_s) where the rounds have them."""
    modes = {}
    for mode, rounds in rounds_by_mode.items():
        records = (records_by_mode or {}).get(mode) or [None] * len(rounds)
        estimates = [map_end_estimates(r, rec) for r, rec in zip(rounds, records)]
        jobs = {}
        for name in rounds[0]["jobs"]:
            per = [r["jobs"][name] for r in rounds]
            jct = statistics.median(p["jct_s"] for p in per)
            deadline = per[0].get("deadline_s")
            jobs[name] = {"jct_s": jct,
                          "copy_s": statistics.median(p["copy_s"] for p in per),
                          "deadline_met": None if deadline is None else jct <= deadline,
                          "bytes": per[0]["bytes"],
                          "rounds": [p["jct_s"] for p in per],
                          "phases_s": {k: statistics.median(phases(p)[k] for p in per)
                                       for k in PHASES}}
            ends = [e.get(name) for e in estimates]
            if any(ends):
                jobs[name]["map_end"] = {"rounds": ends,
                                         "median_abs_error_s": _median_abs_errors(ends)}
        entry = {"jobs": jobs}
        for key in ("cc_seen", "dscp_seen", "ecn_seen", "flow_modes_seen"):
            entry[key] = sorted({v for c in checks[mode] for v in c[key]})
        cpu = [c["cpu_s"] for c in checks[mode] if c.get("cpu_s")]
        if cpu:
            entry["cpu_s"] = {"total": statistics.median(c["total"] for c in cpu)}
            for part in ("containers", "roles"):
                names = sorted({n for c in cpu for n in c[part]})
                entry["cpu_s"][part] = {n: statistics.median(c[part].get(n, 0) for c in cpu)
                                        for n in names}
        modes[mode] = entry
    rounds = {len(r) for r in rounds_by_mode.values()}
    return {"spec": spec, "rounds": rounds.pop() if len(rounds) == 1 else sorted(rounds),
            "generated_by": "docker/run-workload.sh", "modes": modes}


def _main(argv=None):
    ap = argparse.ArgumentParser(prog="dockerrun", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="verify one round's samples against its mode")
    c.add_argument("--mode", required=True, choices=MODES)
    c.add_argument("--samples", required=True, help="directory of ss-HOST.txt and flows.txt")
    c.add_argument("--out", required=True, help="where the summary JSON goes")
    m = sub.add_parser("merge", help="results.json from DIR/raw/MODE/round-I{.json,-check.json}")
    m.add_argument("--dir", required=True)
    m.add_argument("--spec", required=True, help="the spec's name")
    m.add_argument("--modes", required=True)
    m.add_argument("--rounds", required=True, type=int)
    e = sub.add_parser("mapend", help="one round's estimates of each job's last map's end")
    e.add_argument("--round", required=True, help="the round's job-client JSON")
    e.add_argument("--scheduler", required=True, help="the round's scheduler records")
    e.add_argument("--mode", required=True, choices=MODES)
    e.add_argument("--index", required=True, type=int, help="the round's number, from 1")
    t = sub.add_parser("mapends", help="a merged results.json's last-map-end section, whatever"
                       " its modes (the comparison report needs mode off; this does not)")
    t.add_argument("--results", required=True, help="results.json written by merge")
    t.add_argument("--out", required=True, help="the Markdown file to write")
    a = ap.parse_args(argv)
    if a.cmd == "mapends":
        with open(a.results) as f:
            text = "\n".join(map_end_lines(json.load(f))) + "\n"
        with open(a.out, "w") as f:
            f.write(text)
        print(text, end="")
        return 0
    if a.cmd == "mapend":
        with open(a.round) as f:
            rnd = json.load(f)
        with open(a.scheduler) as f:
            records = json.load(f)
        ends = map_end_estimates(rnd, records)
        results = {"modes": {a.mode: {"jobs": {
            n: {"map_end": {"rounds": [None] * (a.index - 1) + [e],
                            "median_abs_error_s": _median_abs_errors([e])}}
            for n, e in ends.items()}}}}
        print("\n".join(map_end_lines(results)[2:]))
        return 0
    if a.cmd == "check":
        summary, problems = check_samples(a.mode, a.samples)
        with open(a.out, "w") as f:
            json.dump(dict(summary, problems=problems), f, indent=1)
        print(f"{a.mode}: cc {summary['cc_seen']}, dscp {summary['dscp_seen']}, ecn "
              f"{summary['ecn_seen']}, flow modes {summary['flow_modes_seen']} "
              f"({summary['connections_sampled']} connections, {summary['flows_read']} flow"
              " reads)")
        cpu = summary["cpu_s"]
        if cpu:
            print(f"{a.mode}: CPU {cpu['total']:.1f} s in the cluster's containers ("
                  + ", ".join(f"{n} {s:.1f}" for n, s in cpu["containers"].items())
                  + "); NodeManagers' Java by role: "
                  + ", ".join(f"{r} {s:.1f}" for r, s in cpu["roles"].items()))
        for p in problems:
            print(f"MODE CHECK FAILED: {p}", file=sys.stderr)
        return 1 if problems else 0
    rounds_by_mode, checks, records = {}, {}, {}
    for mode in a.modes.split(","):
        rounds_by_mode[mode], checks[mode], records[mode] = [], [], []
        for i in range(1, a.rounds + 1):
            base = os.path.join(a.dir, "raw", mode, f"round-{i}")
            with open(base + ".json") as f:
                rounds_by_mode[mode].append(json.load(f))
            with open(base + "-check.json") as f:
                checks[mode].append(json.load(f))
            records[mode].append(None)
            if os.path.exists(base + "-scheduler.json"):
                with open(base + "-scheduler.json") as f:
                    records[mode][-1] = json.load(f)
    with open(os.path.join(a.dir, "results.json"), "w") as f:
        json.dump(merge(a.spec, rounds_by_mode, checks, records), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
