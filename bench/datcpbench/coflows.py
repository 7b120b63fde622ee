"""The FB2010 coflow trace (coflow-benchmark, the workload of Varys and Aalo) turned into
workload specs (issue 16 §3). The scaling is documented in bench/README.md "Workloads
from the coflow trace"; in short:

- sizes: a coflow's shuffle bytes are its reducers' MB summed. The slice's sizes are
  mapped onto [min_bytes, max_bytes] linearly when that range holds the slice's spread,
  else by a power law b = max_bytes * (mb / mb_max) ** gamma, a straight line on log-log
  axes: order and log-scale spacing are kept, a Pareto tail stays Pareto (index / gamma);
- time: arrivals keep their order and relative gaps, compressed by one factor chosen so
  that the busiest reducer host's downlink is offered `load` of the link over the slice's
  window (its first arrival to the next coflow's);
- docker: no placement (YARN places tasks); maps and reduces capped per job, a uniform
  partition_bytes; the load is the mean over `hosts` reducer hosts;
- replay: racks folded onto hosts by balancing the slice's reduce bytes; maps and
  reduces capped per job, reduce_bytes from the trace's per-reducer MB."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .workload import WorkloadError, job_bytes, validate_spec

TARGETS = ("docker", "replay")
# docker: a 2-CPU machine runs every task's JVM, so few tasks per job and a few MB to tens
# of MB per job; replay: tasks are threads of the replay driver, so more of them
DEFAULTS = {
    "docker": {"max_maps": 6, "max_reduces": 2, "min_bytes": 4_000_000,
               "max_bytes": 80_000_000},
    "replay": {"max_maps": 6, "max_reduces": 6, "min_bytes": 200_000,
               "max_bytes": 300_000_000},
}


@dataclass(frozen=True)
class Coflow:
    id: int
    arrival_ms: int
    mapper_racks: tuple
    reducers: tuple          # (rack, MB) per reducer

    @property
    def mb(self):
        return sum(mb for _, mb in self.reducers)


def parse_trace(path):
    """Returns (ports, [Coflow]) in the trace's order; WorkloadError names FILE:LINE."""
    try:
        with open(path) as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        raise WorkloadError(f"{path}: cannot read trace: {e.strerror}") from None
    if not lines:
        raise WorkloadError(f"{path}:1: empty trace (expected 'ports coflows')")
    head = lines[0].split()
    if len(head) != 2 or not all(x.isdigit() for x in head):
        raise WorkloadError(f"{path}:1: expected 'ports coflows', got {lines[0]!r}")
    ports, n = int(head[0]), int(head[1])
    out = []
    for no, line in enumerate(lines[1:], start=2):
        if line.strip():
            out.append(_coflow(line.split(), f"{path}:{no}", ports))
    if len(out) != n:
        raise WorkloadError(f"{path}:1: header says {n} coflows, the file has {len(out)}")
    for a, b in zip(out, out[1:]):
        if b.arrival_ms < a.arrival_ms:
            raise WorkloadError(f"{path}: coflow {b.id} arrives before coflow {a.id}")
    return ports, out


def _coflow(t, where, ports):
    try:
        cid, arr, m = int(t[0]), int(t[1]), int(t[2])
        racks = tuple(int(x) for x in t[3:3 + m])
        r = int(t[3 + m])
        reducers = tuple((int(x.split(":")[0]), float(x.split(":")[1]))
                         for x in t[4 + m:])
    except (ValueError, IndexError):
        raise WorkloadError(f"{where}: expected 'id arrival_ms mappers rack... reducers "
                            f"rack:MB...'") from None
    if m < 1 or len(racks) != m or r < 1 or len(reducers) != r:
        raise WorkloadError(f"{where}: coflow {cid}: {m} mappers and {r} reducers declared, "
                            f"{len(racks)} mapper racks and {len(reducers)} reducers given")
    if arr < 0 or any(not 0 <= x < ports for x in racks + tuple(x for x, _ in reducers)):
        raise WorkloadError(f"{where}: coflow {cid}: arrival < 0 or a rack outside "
                            f"[0, {ports})")
    if any(not mb > 0 for _, mb in reducers):
        raise WorkloadError(f"{where}: coflow {cid}: a reducer's MB must be > 0")
    return Coflow(cid, arr, racks, reducers)


def parse_select(text, n):
    """'START:COUNT' (START a 0-based position in the trace) -> (start, count)."""
    try:
        start, count = (int(x) for x in text.split(":"))
    except ValueError:
        raise WorkloadError(f"--select: expected START:COUNT, got {text!r}") from None
    check_slice(start, count, n)
    return start, count


def check_slice(start, count, n):
    if start < 0 or count < 1 or start + count > n:
        raise WorkloadError(f"--select: {start}:{count} is outside the trace's {n} coflows "
                            f"(START >= 0, COUNT >= 1, START + COUNT <= {n})")


def size_map(mbs, min_bytes, max_bytes):
    """(gamma, bytes per coflow): linear (gamma 1) if [min_bytes, max_bytes] holds the
    spread of mbs, else b = max_bytes * (mb / max(mbs)) ** gamma with the smallest coflow
    on min_bytes."""
    lo, hi = min(mbs), max(mbs)
    gamma = 1.0 if hi == lo else min(1.0, math.log(max_bytes / min_bytes) / math.log(hi / lo))
    return gamma, [max_bytes * (mb / hi) ** gamma for mb in mbs]


def top_share(sizes, frac=0.1):
    s = sorted(sizes, reverse=True)
    return sum(s[:max(1, math.ceil(len(s) * frac))]) / sum(s)


def _lpt(items, bins, key):
    """Longest processing time first: each item (largest first) to the lightest bin."""
    out = [[] for _ in range(bins)]
    load = [0.0] * bins
    for it in sorted(items, key=lambda x: -key(x)):
        b = min(range(bins), key=lambda i: (load[i], i))
        out[b].append(it)
        load[b] += key(it)
    return out


def _shape(c, lim):
    """(mapper racks, reducer groups) of a replay job: more mappers than max_maps: every
    (m / maps)-th mapper's rack, so the racks' mix is kept; more reducers than
    max_reduces: grouped largest first onto the lightest group, a group on its largest
    reducer's rack."""
    m = len(c.mapper_racks)
    maps = min(m, lim["max_maps"])
    racks = [c.mapper_racks[i * m // maps] for i in range(maps)]
    groups = _lpt(c.reducers, min(len(c.reducers), lim["max_reduces"]), key=lambda x: x[1])
    return racks, [(g[0][0], sum(mb for _, mb in g)) for g in groups]


def rack_hosts(shapes, sizes, hosts):
    """Rack -> host: racks by the bytes they receive plus send in the slice, largest first,
    each to the host whose busier direction stays least busy, so downlinks and uplinks
    are offered about the same bytes."""
    red, mp = {}, {}
    for (racks, groups), b in zip(shapes, sizes):
        mb = sum(x for _, x in groups)
        for rack, x in groups:
            red[rack] = red.get(rack, 0.0) + b * x / mb
        for rack in racks:
            mp[rack] = mp.get(rack, 0.0) + b / len(racks)
    racks = sorted(set(red) | set(mp), key=lambda r: (-(red.get(r, 0) + mp.get(r, 0)), r))
    down, up = [0.0] * hosts, [0.0] * hosts
    table = {}
    for r in racks:
        d, u = red.get(r, 0), mp.get(r, 0)
        h = min(range(hosts), key=lambda i: (max(down[i] + d, up[i] + u),
                                            down[i] + up[i], i))
        table[r] = h
        down[h] += d
        up[h] += u
    return table


def _docker_job(c, b, lim):
    maps = min(len(c.mapper_racks), lim["max_maps"])
    reduces = min(len(c.reducers), lim["max_reduces"])
    return {"maps": maps, "reduces": reduces,
            "partition_bytes": max(1, round(b / (maps * reduces)))}


def _replay_job(shape, b, table, up):
    """Places one job; `up` (bytes sent per host so far) is updated."""
    racks, groups = shape
    hosts = len(up)
    maps, mb = len(racks), sum(x for _, x in groups)
    reduce_hosts = [table[rack] for rack, _ in groups]
    reduce_bytes = [max(1, round(b * x / mb / maps)) for _, x in groups]
    free = [h for h in range(hosts) if h not in reduce_hosts]
    map_hosts = []
    for rack in racks:
        h = table[rack]
        # the trace's bytes all cross its fabric; folding 150 racks onto few hosts would
        # make some host-local, so such a map moves to the least busy host without a
        # reduce of its job
        if h in reduce_hosts and free:
            h = min(free, key=lambda i: (up[i], i))
        map_hosts.append(h)
        up[h] += sum(rb for rh, rb in zip(reduce_hosts, reduce_bytes) if rh != h)
    return {"maps": maps, "reduces": len(groups),
            "partition_bytes": max(1, round(b / (maps * len(groups)))),
            "map_hosts": map_hosts, "reduce_hosts": reduce_hosts, "reduce_bytes": reduce_bytes}


def host_bytes(job, hosts):
    """(downlink, uplink) bytes per host of a placed job: only partitions between two
    different hosts cross the fabric."""
    down, up = [0] * hosts, [0] * hosts
    for mh in job["map_hosts"]:
        for rh, rb in zip(job["reduce_hosts"], job["reduce_bytes"]):
            if mh != rh:
                down[rh] += rb
                up[mh] += rb
    return down, up


DEFAULT_LINK_MBIT = 100


def convert(coflows, start, count, hosts, load, target, link_mbit=None, name=None, **limits):
    """A spec from coflows[start:start+count]; returns (spec, summary dict). limits:
    max_maps, max_reduces, min_bytes, max_bytes (None = the target's default). A link rate
    given (link_mbit) goes into the spec, for the runner to set the cluster's ports to it;
    without one the spec assumes the default 100 Mbit/s."""
    given_link = link_mbit is not None
    link_mbit = DEFAULT_LINK_MBIT if link_mbit is None else link_mbit
    if target not in TARGETS:
        raise WorkloadError(f"--target: must be one of {', '.join(TARGETS)}")
    if not 0 < load < 1:
        raise WorkloadError("--load: must be in (0, 1), the offered load of the busiest "
                            "downlink (issue 16: 0.5 to 0.8)")
    if hosts < 1 or (target == "replay" and hosts < 2):
        raise WorkloadError("--hosts: must be >= 1 (docker) or >= 2 (replay)")
    if link_mbit <= 0:
        raise WorkloadError("--link-mbit: must be > 0")
    lim = dict(DEFAULTS[target])
    lim.update({k: v for k, v in limits.items() if v is not None})
    for k in ("max_maps", "max_reduces", "min_bytes", "max_bytes"):
        if lim[k] < 1:
            raise WorkloadError(f"--{k.replace('_', '-')}: must be >= 1")
    if lim["min_bytes"] >= lim["max_bytes"]:
        raise WorkloadError("--min-bytes: must be < --max-bytes")
    check_slice(start, count, len(coflows))
    sel = coflows[start:start + count]
    gamma, sizes = size_map([c.mb for c in sel], lim["min_bytes"], lim["max_bytes"])
    jobs = []
    if target == "docker":
        for c, b in zip(sel, sizes):
            jobs.append(_docker_job(c, b, lim))
        total = sum(job_bytes(j) for j in jobs)
        # YARN places the reduces: the load is the mean over the reducer hosts
        down = up = [total / hosts] * hosts
    else:
        shapes = [_shape(c, lim) for c in sel]
        table = rack_hosts(shapes, sizes, hosts)
        sent = [0] * hosts
        down, up = [0] * hosts, [0] * hosts
        for shape, b in zip(shapes, sizes):
            j = _replay_job(shape, b, table, sent)
            jobs.append(j)
            d, u = host_bytes(j, hosts)
            down = [x + y for x, y in zip(down, d)]
            up = [x + y for x, y in zip(up, u)]
    link = link_mbit * 1e6 / 8
    window_s = max(down) / (load * link)
    if start + count < len(coflows):
        trace_window = (coflows[start + count].arrival_ms - sel[0].arrival_ms) / 1000
    else:   # the trace's last coflow: one mean gap of the slice after it
        span = (sel[-1].arrival_ms - sel[0].arrival_ms) / 1000
        trace_window = span * count / (count - 1) if count > 1 else 0
    if trace_window <= 0 or window_s <= 0:
        raise WorkloadError("--select: the slice's window has no duration to compress")
    compression = trace_window / window_s
    spec = {"name": name or f"fb2010-{start}-{count}-{target}"}
    if target == "replay":
        spec["hosts"] = hosts
    if given_link:
        spec["link_mbit"] = int(link_mbit) if link_mbit == int(link_mbit) else link_mbit
    spec["jobs"] = []
    for c, j in zip(sel, jobs):
        spec["jobs"].append({"name": str(c.id),
                             "submit_s": round((c.arrival_ms - sel[0].arrival_ms)
                                               / 1000 / compression, 3), **j})
    validate_spec(spec)
    real = [job_bytes(j) for j in spec["jobs"]]
    summary = {
        "target": target, "coflows": f"{sel[0].id}..{sel[-1].id} (positions {start}.."
                                     f"{start + count - 1})",
        "jobs": count, "hosts": hosts, "link_mbit": link_mbit, "load": load,
        "maps": sum(j["maps"] for j in jobs), "reduces": sum(j["reduces"] for j in jobs),
        "flows": sum(j["maps"] * j["reduces"] for j in jobs),
        "capped_maps": sum(len(c.mapper_racks) > j["maps"] for c, j in zip(sel, jobs)),
        "capped_reduces": sum(len(c.reducers) > j["reduces"] for c, j in zip(sel, jobs)),
        "trace_mb": sum(c.mb for c in sel), "trace_median_mb": statistics.median(
            c.mb for c in sel), "trace_max_mb": max(c.mb for c in sel),
        "trace_top10_share": top_share([c.mb for c in sel]),
        "gamma": gamma, "total_bytes": sum(real), "median_bytes": statistics.median(real),
        "min_bytes": min(real), "max_bytes": max(real), "top10_share": top_share(real),
        "trace_window_s": trace_window, "window_s": window_s, "compression": compression,
        "last_submit_s": spec["jobs"][-1]["submit_s"],
        "down_load": [x / (link * window_s) for x in down],
        "up_load": [x / (link * window_s) for x in up],
    }
    return spec, summary


def format_summary(s):
    if s["target"] == "docker":
        load = (f"offered load at {s['link_mbit']:g} Mbit/s: {max(s['down_load']):.2f} on "
                f"each of {s['hosts']} reducer hosts' downlinks (the mean: YARN places tasks)")
    else:
        load = (f"offered load at {s['link_mbit']:g} Mbit/s per host: downlinks "
                + " ".join(f"{x:.2f}" for x in s["down_load"])
                + f" (busiest {max(s['down_load']):.2f}); uplinks "
                + " ".join(f"{x:.2f}" for x in s["up_load"]))
    return "\n".join([
        f"coflows {s['coflows']}: {s['jobs']} jobs, {s['maps']} maps, {s['reduces']} "
        f"reduces, {s['flows']} map-reduce flows ({s['capped_maps']} jobs with maps capped, "
        f"{s['capped_reduces']} with reduces capped)",
        f"trace: {s['trace_mb']:.0f} MB, median {s['trace_median_mb']:.0f} MB, max "
        f"{s['trace_max_mb']:.0f} MB, top 10% of coflows carry {s['trace_top10_share']:.0%}",
        f"bytes: {s['total_bytes'] / 1e6:.1f} MB, median {s['median_bytes'] / 1e6:.2f} MB, "
        f"{s['min_bytes'] / 1e6:.2f}..{s['max_bytes'] / 1e6:.1f} MB per job, gamma "
        f"{s['gamma']:.3f}, top 10% of jobs carry {s['top10_share']:.0%}",
        f"time: trace window {s['trace_window_s']:.1f} s -> {s['window_s']:.2f} s "
        f"(compression {s['compression']:.1f}x), last submit at {s['last_submit_s']:.2f} s",
        load])
