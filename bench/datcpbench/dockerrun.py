"""Mode verification and results of docker/run-workload.sh (docker/README.md, "The workload
runner").

While a round's jobs run, the runner samples every NodeManager's shuffle connections from the
kernel (`ss -tinH --tos` on port 13562, both ends) and the datcp flow table (`datcpctl flow list
--json`). `verify` turns those samples into what each mode actually used (`cc_seen`,
`dscp_seen`, ...) and the list of ways they break the mode's definition; `cpu_usage` adds what
the round cost in CPU (each container's cgroup, each NodeManager's Java processes by role);
`merge` builds results.json (issue 16's schema) from the rounds' job-client output.

    python3 -m datcpbench.dockerrun check --mode MODE --samples DIR --out FILE
    python3 -m datcpbench.dockerrun merge --dir DIR --spec NAME --modes M,.. --rounds N
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


def merge(spec, rounds_by_mode, checks):
    """results.json: per mode, per job the medians over rounds of jct_s, copy_s and the phases
    (phases_s), the rounds' jct_s, bytes and deadline_met (the median jct_s against deadline_s;
    null without one), the union of the rounds' verification summaries, and the medians of
    the rounds' CPU seconds (cpu_s) where the rounds have them."""
    modes = {}
    for mode, rounds in rounds_by_mode.items():
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
    a = ap.parse_args(argv)
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
    rounds_by_mode, checks = {}, {}
    for mode in a.modes.split(","):
        rounds_by_mode[mode], checks[mode] = [], []
        for i in range(1, a.rounds + 1):
            base = os.path.join(a.dir, "raw", mode, f"round-{i}")
            with open(base + ".json") as f:
                rounds_by_mode[mode].append(json.load(f))
            with open(base + "-check.json") as f:
                checks[mode].append(json.load(f))
    with open(os.path.join(a.dir, "results.json"), "w") as f:
        json.dump(merge(a.spec, rounds_by_mode, checks), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
