"""bench/workload: spec and results validation, the report, the coflow-trace converter and
the committed specs. Pure Python: no root, no kernel."""
import copy
import json
import math
import os
import re
import shlex
import subprocess

import pytest

from datcpbench import coflows, workload
from datcpbench.workload import WorkloadError

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(BENCH)
CLI = os.path.join(BENCH, "workload")
TRACE = os.path.join(os.path.dirname(REPO), "shared", "traces", "FB2010-1Hr-150-0.txt")
COMMITTED = {"docker/workloads/fb-20.json": (20, None), "docker/workloads/fb-ci.json": (6, None),
             "docker/workloads/fb-20-10m.json": (20, None), "bench/workloads/fb-200.json": (200, 8)}


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)


def good_spec():
    return {"name": "t", "hosts": 4, "jobs": [
        {"name": "a", "submit_s": 0, "maps": 4, "reduces": 1, "partition_bytes": 1000,
         "map_seconds": 2.0, "deadline_s": None, "queue": "default", "user": "alice"},
        {"name": "b.2", "submit_s": 1.5, "maps": 2, "reduces": 2, "partition_bytes": 10,
         "slow_maps": 1, "deadline_s": 4, "map_hosts": [0, 1], "reduce_hosts": [3, 3],
         "reduce_bytes": [5, 0]}]}


def mutate(path, value):
    """good_spec() with the key at `path` (tuple) set to value, or deleted for DELETE."""
    s = good_spec()
    o = s
    for k in path[:-1]:
        o = o[k]
    if value is DELETE:
        del o[path[-1]]
    else:
        o[path[-1]] = value
    return s


DELETE = object()

BAD_SPECS = [
    ((("name",), DELETE), "name: missing"),
    ((("name",), ""), "name: must be a non-empty string"),
    ((("colour",), "red"), "colour: unknown key"),
    ((("jobs",), []), "jobs: must be a non-empty list"),
    ((("jobs",), {"a": 1}), "jobs: must be a non-empty list"),
    ((("barrier",), "yes"), "barrier: must be true or false"),
    ((("cluster",), "rack"), "cluster: must be one of shared, ab"),
    ((("hosts",), 0), "hosts: must be an integer >= 1"),
    ((("link_mbit",), 0), "link_mbit: must be a number > 0"),
    ((("link_mbit",), "10"), "link_mbit: must be a number > 0"),
    ((("jobs", 0, "reduces"), DELETE), "jobs[0].reduces: missing"),
    ((("jobs", 1, "colour"), 1), "jobs[1].colour: unknown key"),
    ((("jobs", 1, "maps"), 0), "jobs[1].maps: must be an integer >= 1"),
    ((("jobs", 0, "maps"), 2.5), "jobs[0].maps: must be an integer >= 1"),
    ((("jobs", 0, "maps"), True), "jobs[0].maps: must be an integer >= 1"),
    ((("jobs", 0, "reduces"), "1"), "jobs[0].reduces: must be an integer >= 1"),
    ((("jobs", 0, "partition_bytes"), 0), "jobs[0].partition_bytes: must be an integer >= 1"),
    ((("jobs", 0, "submit_s"), -1), "jobs[0].submit_s: must be a number >= 0"),
    ((("jobs", 0, "submit_s"), float("nan")), "jobs[0].submit_s: must be a number >= 0"),
    ((("jobs", 0, "name"), "a b"), "jobs[0].name: must be a string of [A-Za-z0-9_.-]+"),
    ((("jobs", 1, "name"), "a"), "jobs[1].name: duplicate of jobs[0].name 'a'"),
    ((("jobs", 0, "map_seconds"), -1), "jobs[0].map_seconds: must be a number >= 0"),
    ((("jobs", 0, "slow_maps"), 5), "jobs[0].slow_maps: must be an integer in [0, maps=4]"),
    ((("jobs", 0, "deadline_s"), 0), "jobs[0].deadline_s: must be null or a number > 0"),
    ((("jobs", 0, "queue"), ""), "jobs[0].queue: must be a non-empty string"),
    ((("jobs", 0, "user"), 5), "jobs[0].user: must be a non-empty string"),
    ((("hosts",), DELETE), "jobs[1].map_hosts: needs the top-level hosts"),
    ((("jobs", 1, "map_hosts"), [0]), "jobs[1].map_hosts: must be a list of 2 integers"),
    ((("jobs", 1, "reduce_hosts"), [3, 4]), "jobs[1].reduce_hosts[1]: must be an integer >= 0 "
                                            "and < 4"),
    ((("jobs", 1, "reduce_bytes"), [5, -1]), "jobs[1].reduce_bytes[1]: must be an integer >= 0"),
]


@pytest.mark.parametrize("change,msg", BAD_SPECS, ids=[m for _, m in BAD_SPECS])
def test_bad_spec_names_the_field(change, msg):
    with pytest.raises(WorkloadError) as e:
        workload.validate_spec(mutate(*change))
    assert str(e.value).startswith(msg), str(e.value)


def test_spec_not_an_object():
    with pytest.raises(WorkloadError, match="^spec: must be a JSON object"):
        workload.validate_spec([1])


def test_good_spec_gets_defaults():
    s = workload.validate_spec(good_spec())
    a, b = s["jobs"]
    assert s["barrier"] is False
    assert s["cluster"] == "shared"
    assert (a["slow_maps"], a["queue"], b["map_seconds"], b["queue"]) == (4, "default", 0,
                                                                           "default")
    assert b["slow_maps"] == 1 and b["deadline_s"] == 4
    assert "user" not in b
    assert workload.job_bytes(a) == 4000 and workload.job_bytes(b) == 10


def test_validate_cli(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(good_spec()))
    r = cli("validate", str(p))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok: t: 2 jobs, 6 maps, 3 reduces")
    p.write_text(json.dumps(mutate(("jobs", 1, "maps"), 0)))
    r = cli("validate", str(p))
    assert r.returncode == 2
    assert "jobs[1].maps: must be an integer >= 1" in r.stderr
    p.write_text("{not json")
    r = cli("validate", str(p))
    assert r.returncode == 2 and "not JSON" in r.stderr
    r = cli("validate", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "cannot read spec" in r.stderr


# ---- results and report -------------------------------------------------------------

JCT = {  # job -> JCT per mode; dctcp is the best baseline, not off (the first)
    "off": {"j1": 10.0, "j2": 20.0, "j3": 30.0, "j4": 40.0},
    "dctcp": {"j1": 8.0, "j2": 16.0, "j3": 30.0, "j4": 34.0},
    "prio": {"j1": 9.0, "j2": 15.0, "j3": 33.0, "j4": 35.0},
    "on": {"j1": 14.0, "j2": 10.0, "j3": 12.0, "j4": 20.0},
}
CC = {"off": ["cubic"], "dctcp": ["dctcp"], "prio": ["dctcp"], "on": ["datcp"]}


def results(modes=("off", "dctcp", "prio", "on"), alone=True):
    r = {"spec": "syn", "rounds": 3, "generated_by": "bench/run trace", "modes": {}}
    for m in modes:
        r["modes"][m] = {"cc_seen": CC[m], "dscp_seen": [0] if m in ("off", "dctcp")
                         else [0, 8, 34], "jobs": {
            n: {"jct_s": t, "copy_s": t / 2, "deadline_met": None if m != "on" else n != "j4",
                "bytes": 1000 * i, "rounds": [t, t * 1.1, t * 0.9], "extra": "kept"}
            for i, (n, t) in enumerate(JCT[m].items())}}
    if alone:
        r["alone"] = {"j1": 5.0, "j2": 5.0, "j3": 10.0, "j4": 20.0}
    return r


BAD_RESULTS = [
    (lambda r: r.pop("generated_by"), "generated_by: missing"),
    (lambda r: r.update(rounds=0), "rounds: must be an integer >= 1"),
    (lambda r: r["modes"].pop("off"), "modes: must be an object with at least the mode off"),
    (lambda r: r["modes"].update(fast=r["modes"]["on"]), "modes.fast: unknown mode"),
    (lambda r: r["modes"]["on"].pop("cc_seen"), "modes.on.cc_seen: missing"),
    (lambda r: r["modes"]["on"].update(dscp_seen=[64]), "modes.on.dscp_seen: must be a list"),
    (lambda r: r["modes"]["prio"]["jobs"].pop("j2"), "modes.prio.jobs: must hold the same jobs"),
    (lambda r: r["modes"]["on"]["jobs"]["j1"].update(jct_s=-1), "modes.on.jobs.j1.jct_s"),
    (lambda r: r["modes"]["on"]["jobs"]["j1"].pop("bytes"), "modes.on.jobs.j1.bytes: missing"),
    (lambda r: r["modes"]["on"]["jobs"]["j1"].update(deadline_met="yes"),
     "modes.on.jobs.j1.deadline_met: must be null, true or false"),
    (lambda r: r["modes"]["off"]["jobs"]["j1"].update(rounds=[1, 2, 3, 4]),
     "modes.off.jobs.j1.rounds: must be a list of 1 to rounds=3"),
    (lambda r: r["alone"].update(j9=1.0), "alone.j9: not a job"),
    (lambda r: r["alone"].update(j1=0), "alone.j1: must be a number > 0"),
]


@pytest.mark.parametrize("change,msg", BAD_RESULTS, ids=[m for _, m in BAD_RESULTS])
def test_bad_results_name_the_field(change, msg):
    r = results()
    change(r)
    with pytest.raises(WorkloadError) as e:
        workload.validate_results(r)
    assert str(e.value).startswith(msg), str(e.value)


def test_good_results_validate():
    r = results()
    assert workload.validate_results(copy.deepcopy(r)) == r
    workload.validate_results(results(modes=("off",), alone=False))


def p95(xs):   # linear interpolation between closest ranks, by hand
    xs = sorted(xs)
    k = 0.95 * (len(xs) - 1)
    return xs[int(k)] + (k - int(k)) * (xs[int(k) + 1] - xs[int(k)])


def test_report_numbers_and_files(tmp_path):
    a, text = workload.report(results(), str(tmp_path))
    mean = {m: sum(JCT[m].values()) / 4 for m in JCT}      # off 25, dctcp 22, prio 23, on 14
    assert a["best"] == "dctcp"
    for m in JCT:
        assert a["stats"][m]["mean"] == pytest.approx(mean[m])
        assert a["stats"][m]["p95"] == pytest.approx(p95(JCT[m].values()))
        assert a["ratio_off"][m]["mean"] == pytest.approx(mean[m] / 25)
        assert a["ratio_best"][m]["mean"] == pytest.approx(mean[m] / 22)
        assert a["ratio_best"][m]["p95"] == pytest.approx(p95(JCT[m].values())
                                                          / p95(JCT["dctcp"].values()))
    slow = {n: JCT["on"][n] / JCT["off"][n] for n in JCT["off"]}   # 1.4, 0.5, 0.4, 0.5
    s = a["slow_off_stats"]["on"]
    assert s["max"] == pytest.approx(1.4) and s["median"] == pytest.approx(0.5)
    assert s["over"] == ["j1"] and a["slow_off"]["on"] == pytest.approx(slow)
    assert a["slow_alone"]["off"]["j1"] == pytest.approx(2.0)
    assert a["slow_alone_stats"]["on"]["max"] == pytest.approx(2.8)
    assert a["deadlines"]["on"] == (3, 4) and a["deadlines"]["off"] == (0, 0)
    t = {name.split(" (")[0]: (v, met) for name, v, _, met in a["targets"]}
    assert t["mean JCT on/off"] == (pytest.approx(14 / 25), True)
    assert t["p95 JCT on/off"] == (pytest.approx(p95(JCT["on"].values()) / 38.5), True)
    assert t["mean JCT on/best baseline"] == (pytest.approx(14 / 22), True)
    assert t["max per-job slowdown on/off"] == (pytest.approx(1.4), False)
    md = (tmp_path / "TABLE.md").read_text()
    assert md == text
    assert "Modes compared: off, dctcp, prio, on" in md and "**dctcp**" in md
    assert "| on | datcp | 0, 8, 34 |" in md
    assert f"| on | 4 | 14.00 | 13.00 | {p95(JCT['on'].values()):.2f} | 20.00 | 0.56 |" in md
    assert "| max per-job slowdown on/off | 1.40 | <= 1.25 | missed by 0.15 (12% over" in md
    assert "| mean JCT on/off | 0.56 | <= 0.67 | met" in md
    assert "j1 (1.40x)" in md and "| on | 3/4 |" not in md and "| 3/4 |" in md
    assert "against alone" in md
    # the best baseline's columns name it: with off the best, "mean/off" twice read as a typo
    assert "| mean/off | p95/off | mean/best (dctcp) | p95/best (dctcp) |" in md
    for png in ("cdf.png", "slowdown.png"):
        data = (tmp_path / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000


def test_report_without_on_or_alone(tmp_path):
    a, text = workload.report(results(modes=("off", "prio"), alone=False), str(tmp_path))
    assert a["best"] == "prio" and a["targets"] is None
    assert "targets not evaluated" in text and "against alone" not in text
    assert (tmp_path / "slowdown.png").exists()


def test_report_shows_the_cpu_of_the_modes_that_measured_it(tmp_path):
    r = results(modes=("off", "on"), alone=False)
    _, text = workload.report(r, str(tmp_path))
    assert "## CPU" not in text
    r["modes"]["off"]["cpu_s"] = {"total": 71.3, "containers": {"nm1": 14.1, "rm": 6.5},
                                  "roles": {"map": 9.0, "reduce": 5.0}}
    r["modes"]["on"]["cpu_s"] = {"total": 102.4, "containers": {"nm1": 19.6, "scheduler": 1.9},
                                 "roles": {"agent": 1.0, "reduce": 8.0}}
    _, text = workload.report(r, str(tmp_path))
    assert "| mode | total | nm1 | rm | scheduler | agent | map | reduce |" in text
    # a container or role a mode did not have shows 0
    assert "| off | 71.3 | 14.1 | 6.5 | 0.0 | 0.0 | 9.0 | 5.0 |" in text
    assert "| on | 102.4 | 19.6 | 0.0 | 1.9 | 1.0 | 0.0 | 8.0 |" in text


def test_report_shows_the_last_maps_end_against_the_schedulers_estimates(tmp_path):
    r = results(modes=("off", "on"), alone=False)
    _, text = workload.report(r, str(tmp_path))
    assert "## The last map's end" not in text
    first = {"made_s": 3.0, "maps_done": 1, "map_wave_s": 4.9, "last_completion_s": 6.5,
             "map_wave_error_s": -0.1, "last_completion_error_s": 1.5}
    r["modes"]["on"]["jobs"]["j1"]["map_end"] = {
        "rounds": [{"real_s": 5.0, "maps": 2, "first": first, "latest": None}, None, None],
        "median_abs_error_s": {"first": {"map_wave": 0.1, "last_completion": 1.5},
                               "latest": {"map_wave": None, "last_completion": None}}}
    _, text = workload.report(r, str(tmp_path))
    assert "## The last map's end: the scheduler's estimates against the real one" in text
    assert ("| on 1 | j1 | 5.00 s | first | 3.00 s (1/2) | 4.90 s | -0.10 s | 6.50 s "
            "| +1.50 s |") in text
    assert "| on 1 | j1 | 5.00 s | latest | no estimate |" in text


def test_report_cli(tmp_path):
    p = tmp_path / "results.json"
    p.write_text(json.dumps(results()))
    r = cli("report", str(p), "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    assert "modes compared: off, dctcp, prio, on; best baseline dctcp" in r.stdout
    assert "on: cc_seen ['datcp'] dscp_seen [0, 8, 34]" in r.stdout
    assert "target max per-job slowdown on/off 1.40 (limit 1.25): missed" in r.stdout
    assert (tmp_path / "rep" / "TABLE.md").exists()
    bad = results()
    del bad["modes"]["on"]["dscp_seen"]
    p.write_text(json.dumps(bad))
    r = cli("report", str(p), "--out", str(tmp_path / "rep2"))
    assert r.returncode == 2 and "modes.on.dscp_seen: missing" in r.stderr
    assert not (tmp_path / "rep2").exists()


# ---- converter ----------------------------------------------------------------------

TRACE_LINES = """20 6
1 0 1 3 1 5:10.0
2 1000 2 1 2 2 7:100.0 9:300.0
3 1500 3 4 5 6 1 3:1.0
4 4000 1 8 3 1:1000.0 2:10.0 5:50.0
5 6000 2 10 11 1 12:5.0
6 9000 1 0 1 19:2.0
"""
ARR = [0, 1000, 1500, 4000, 6000, 9000]
MB = [10, 400, 1, 1060, 5, 2]


@pytest.fixture
def trace(tmp_path):
    p = tmp_path / "trace.txt"
    p.write_text(TRACE_LINES)
    return str(p)


def loads(spec, window_s, link_mbit):
    down, up = [0] * spec["hosts"], [0] * spec["hosts"]
    for j in spec["jobs"]:
        d, u = coflows.host_bytes(j, spec["hosts"])
        down = [x + y for x, y in zip(down, d)]
        up = [x + y for x, y in zip(up, u)]
    return [x * 8 / (link_mbit * 1e6 * window_s) for x in down]


def test_parse_trace(trace):
    ports, cs = coflows.parse_trace(trace)
    assert ports == 20 and [c.id for c in cs] == [1, 2, 3, 4, 5, 6]
    assert [c.mb for c in cs] == MB and cs[1].mapper_racks == (1, 2)
    assert cs[3].reducers == ((1, 1000.0), (2, 10.0), (5, 50.0))


@pytest.mark.parametrize("lines,msg", [
    ("20 2\n1 0 1 3 1 5:10.0\n", ":1: header says 2 coflows, the file has 1"),
    ("20 1\n1 0 2 3 4 1 5:10.0 6:1.0\n", ":2: coflow 1: 2 mappers and 1 reducers declared"),
    ("20 1\n1 0 1 3 2 5:10.0\n", ":2: coflow 1: 1 mappers and 2 reducers declared"),
    ("20 1\n1 0 1 3 1 5-10\n", ":2: expected 'id arrival_ms"),
    ("20 1\n1 0 1 30 1 5:10.0\n", ":2: coflow 1: arrival < 0 or a rack outside [0, 20)"),
    ("20\n", ":1: expected 'ports coflows'"),
    ("20 2\n1 50 1 3 1 5:10.0\n2 10 1 3 1 5:10.0\n", "coflow 2 arrives before coflow 1"),
])
def test_bad_trace_names_the_line(tmp_path, lines, msg):
    p = tmp_path / "trace.txt"
    p.write_text(lines)
    with pytest.raises(WorkloadError) as e:
        coflows.parse_trace(str(p))
    assert msg in str(e.value) and str(e.value).startswith(str(p))


def test_convert_replay_scaling(trace):
    _, cs = coflows.parse_trace(trace)
    # sizes span 1..1060 MB; 1e5..1e7 bytes is 100x: power law, gamma = ln 100 / ln 1060
    spec, s = coflows.convert(cs, 0, 5, 4, 0.6, "replay", link_mbit=100, name="t",
                              max_maps=2, max_reduces=2, min_bytes=100_000,
                              max_bytes=10_000_000)
    workload.validate_spec(spec)
    gamma = math.log(100) / math.log(1060)
    assert s["gamma"] == pytest.approx(gamma)
    want = [1e7 * (mb / 1060) ** gamma for mb in MB[:5]]
    got = [workload.job_bytes(j) for j in spec["jobs"]]
    for w, g, j in zip(want, got, spec["jobs"]):   # rounding: half a byte per partition
        assert abs(g - w) <= j["maps"] * j["reduces"], (w, g)
    assert min(got) == pytest.approx(1e5, abs=4) and max(got) == pytest.approx(1e7, abs=4)
    assert s["total_bytes"] == sum(got)
    assert spec["hosts"] == 4 and [j["name"] for j in spec["jobs"]] == ["1", "2", "3", "4", "5"]
    j3, j4 = spec["jobs"][2], spec["jobs"][3]
    assert j3["maps"] == 2 and j4["reduces"] == 2                   # capped
    # coflow 4's reducers 1000, 50, 10 MB in two groups: 1000 | 50 + 10
    assert j4["reduce_bytes"][0] / j4["reduce_bytes"][1] == pytest.approx(1000 / 60, rel=1e-4)
    for j in spec["jobs"]:
        assert all(0 <= h < 4 for h in j["map_hosts"] + j["reduce_hosts"])
        # fewer reduce hosts than hosts: every partition crosses the fabric
        assert not set(j["map_hosts"]) & set(j["reduce_hosts"])
    # arrivals: order and relative gaps kept, one compression factor
    sub = [j["submit_s"] for j in spec["jobs"]]
    assert sub == sorted(sub) and sub[0] == 0
    c = s["compression"]
    for t, a in zip(sub, ARR):
        assert t == pytest.approx(a / 1000 / c, abs=0.0006)
    # window: first arrival to the next coflow's (9 s of trace), compressed
    assert s["window_s"] == pytest.approx(9.0 / c)
    lo = loads(spec, s["window_s"], 100)
    assert max(lo) == pytest.approx(0.6, rel=1e-3)
    assert lo == pytest.approx(s["down_load"], rel=1e-9)


def test_convert_linear_when_range_fits(trace):
    _, cs = coflows.parse_trace(trace)
    spec, s = coflows.convert(cs, 1, 4, 3, 0.5, "replay", min_bytes=1_000,
                              max_bytes=10_000_000, max_maps=9, max_reduces=9)
    assert s["gamma"] == 1.0
    got = [workload.job_bytes(j) for j in spec["jobs"]]
    for g, mb, j in zip(got, MB[1:5], spec["jobs"]):
        assert abs(g - 1e7 * mb / 1060) <= j["maps"] * j["reduces"]


def test_convert_last_coflow_window(trace):
    _, cs = coflows.parse_trace(trace)
    spec, s = coflows.convert(cs, 3, 3, 2, 0.7, "replay")
    assert s["trace_window_s"] == pytest.approx((9000 - 4000) / 1000 * 3 / 2)


def test_convert_docker(trace):
    _, cs = coflows.parse_trace(trace)
    spec, s = coflows.convert(cs, 0, 6, 4, 0.65, "docker", max_maps=2, max_reduces=1,
                              min_bytes=1_000_000, max_bytes=8_000_000)
    workload.validate_spec(spec)
    assert "hosts" not in spec
    for j, c in zip(spec["jobs"], cs):
        assert not set(j) & set(workload.PLACEMENT)
        assert (j["maps"], j["reduces"]) == (min(len(c.mapper_racks), 2), 1)
    total = sum(workload.job_bytes(j) for j in spec["jobs"])
    assert total == s["total_bytes"]
    window = (9000 - 0) / 1000 * 6 / 5 / s["compression"]
    assert total * 8 / (4 * 100e6 * window) == pytest.approx(0.65, rel=1e-3)
    sub = [j["submit_s"] for j in spec["jobs"]]
    assert sub == sorted(sub)
    assert "link_mbit" not in spec


def test_convert_docker_at_a_slower_link_spreads_the_jobs_and_says_so(trace):
    _, cs = coflows.parse_trace(trace)
    fast, _ = coflows.convert(cs, 0, 6, 4, 0.65, "docker")
    slow, s = coflows.convert(cs, 0, 6, 4, 0.65, "docker", link_mbit=10)
    workload.validate_spec(slow)
    assert slow["link_mbit"] == 10 and s["link_mbit"] == 10
    # the same bytes at a tenth of the rate: the same load over ten times the window
    for f, j in zip(fast["jobs"], slow["jobs"]):
        assert j["partition_bytes"] == f["partition_bytes"]
        assert j["submit_s"] == pytest.approx(10 * f["submit_s"], abs=0.011)


@pytest.mark.parametrize("kw,msg", [
    ({"load": 1.5}, "--load"), ({"target": "yarn"}, "--target"), ({"hosts": 1}, "--hosts"),
    ({"start": 5, "count": 3}, "--select"), ({"min_bytes": 10, "max_bytes": 5}, "--min-bytes"),
    ({"max_maps": 0}, "--max-maps"),
])
def test_convert_bad_args(trace, kw, msg):
    _, cs = coflows.parse_trace(trace)
    args = {"start": 0, "count": 3, "hosts": 4, "load": 0.6, "target": "replay"}
    args.update(kw)
    with pytest.raises(WorkloadError, match=f"^{msg}"):
        coflows.convert(cs, **args)


def test_convert_cli(trace, tmp_path):
    out = tmp_path / "x" / "spec.json"
    r = cli("convert", "--trace", trace, "--select", "0:4", "--hosts", "4", "--load", "0.6",
            "--target", "replay", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "coflows 1..4 (positions 0..3): 4 jobs" in r.stdout
    assert "(busiest 0.60)" in r.stdout
    spec = workload.load_spec(str(out))
    assert spec["name"] == "spec" and len(spec["jobs"]) == 4
    r = cli("convert", "--trace", trace, "--select", "4:9", "--hosts", "4", "--load", "0.6",
            "--target", "replay", "--out", str(out))
    assert r.returncode == 2 and "--select: 4:9 is outside" in r.stderr
    r = cli("convert", "--trace", trace, "--select", "0:4", "--hosts", "4", "--load", "0.6",
            "--target", "cloud", "--out", str(out))
    assert r.returncode == 2 and "--target" in r.stderr


# ---- committed specs ----------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(COMMITTED))
def test_committed_spec_validates(path):
    spec = workload.load_spec(os.path.join(REPO, path))
    jobs, hosts = COMMITTED[path]
    assert len(spec["jobs"]) >= jobs
    assert spec.get("hosts") == hosts
    if hosts is None:   # Docker: YARN places tasks
        assert all(not set(j) & set(workload.PLACEMENT) for j in spec["jobs"])


def recorded_commands():
    with open(os.path.join(REPO, "docker", "workloads", "README.md")) as fh:
        text = fh.read()
    return re.findall(r"^\s*(bench/workload convert .*)$", text, re.M)


def test_every_committed_spec_has_its_command():
    outs = {shlex.split(c)[shlex.split(c).index("--out") + 1] for c in recorded_commands()}
    assert outs == set(COMMITTED)


@pytest.mark.skipif(not os.path.exists(TRACE), reason=f"{TRACE} missing")
@pytest.mark.parametrize("cmd", recorded_commands())
def test_committed_spec_is_what_its_command_makes(cmd, tmp_path):
    argv = shlex.split(cmd)[1:]
    i = argv.index("--out")
    committed = os.path.join(REPO, argv[i + 1])
    argv[i + 1] = str(tmp_path / os.path.basename(committed))
    argv[argv.index("--trace") + 1] = TRACE
    r = cli(*argv)
    assert r.returncode == 0, r.stderr
    with open(committed) as a, open(argv[i + 1]) as b:
        assert a.read() == b.read()
