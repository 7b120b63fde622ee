"""bench/run trace: the replay with the real scheduler and agents (root, kmod, jars), and
its pure parts (spec loading, the physical limit, the mode check)."""
import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import BENCH, RUN, needs_kmod, needs_root, our_netns
from datcpbench import kernel, replay, workload

SMALL = os.path.join(BENCH, "tests", "data", "replay-small.json")
JARS = replay.jars()
needs_jars = pytest.mark.skipif(
    not all(os.path.isfile(p) for p in JARS.values()),
    reason=f"scheduler/agent jars or libdatcp missing ({', '.join(JARS.values())}): "
           "mvn -q package -DskipTests -pl proto,scheduler,agent -am; make -C kmod")


def trace(tmp_path, *args, timeout=300):
    out = tmp_path / "out"
    r = subprocess.run([RUN, "trace", "--trace", SMALL, "--out", str(out), "--timeout", "120",
                        *args], capture_output=True, text=True, timeout=timeout)
    res = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() \
        else None
    return r, res, out


@needs_root
@needs_kmod
@needs_jars
def test_replay_off_and_on(tmp_path):
    r, res, out = trace(tmp_path, "--modes", "off,on")
    assert r.returncode == 0, r.stderr[-3000:]
    spec = workload.load_spec(SMALL)
    assert res["spec"] == "replay-small" and res["rounds"] == 1
    assert res["generated_by"] == "bench/run trace"
    assert set(res["modes"]) == {"off", "on"} and "failed_modes" not in res
    names = {j["name"] for j in spec["jobs"]}
    assert set(res["alone"]) <= names and res["alone"]
    for mode, m in res["modes"].items():
        assert set(m["jobs"]) == names, mode
        for j in spec["jobs"]:
            got = m["jobs"][j["name"]]
            assert set(got) >= {"jct_s", "copy_s", "deadline_met", "bytes", "rounds"}
            # every job completed with all its bytes, no faster than the fabric allows
            assert got["bytes"] == replay.job_bytes(j), (mode, j["name"])
            assert got["rounds"] == [got["jct_s"]] and got["deadline_met"] is None
            assert 0 <= got["copy_s"] <= got["jct_s"]
            assert got["jct_s"] >= 0.95 * res["alone"].get(j["name"], 0), (mode, j["name"])
        flows = json.loads((out / f"flows-{mode}.json").read_text())
        assert flows and all(f["complete"] or f.get("error") for f in flows)
    off, on = res["modes"]["off"], res["modes"]["on"]
    assert off["cc_seen"] == ["cubic"] and off["dscp_seen"] == [0]
    assert off["kernel_modes_seen"] == [] and off["registered"] == 0
    assert on["cc_seen"] == ["datcp"] and "datcp" in on["kernel_modes_seen"]
    assert on["registered"] == on["flows"] > 0
    # the agents' shuffle port is gone again, nothing is left in the kernel or as namespaces
    st = kernel.status() or {}
    assert replay.SHUFFLE_PORT not in (st.get("ports") or [])
    assert not [f for f in kernel.flow_list() or [] if f["src"].startswith("10.10.1.")]
    assert not our_netns()


@needs_root
@needs_kmod
def test_replay_rounds(tmp_path):
    # two rounds of off on a fresh testbed each: per job the median and both rounds' jct_s
    r, res, out = trace(tmp_path, "--modes", "off", "--rounds", "2", "--select", "0:4")
    assert r.returncode == 0, r.stderr[-3000:]
    assert res["rounds"] == 2 and "failed_modes" not in res
    workload.validate_results(res)
    off = res["modes"]["off"]
    assert len(off["jobs"]) == 4 and len(off["per_round"]) == 2
    for got in off["jobs"].values():
        assert len(got["rounds"]) == 2
        assert got["jct_s"] == pytest.approx(sum(got["rounds"]) / 2, abs=1e-4)
    flows = json.loads((out / "flows-off.json").read_text())
    assert {f["round"] for f in flows} == {1, 2}
    assert off["flows"] == len(flows) == sum(p["flows"] for p in off["per_round"])
    assert (out / "logs" / "off" / "round-2").is_dir()
    assert not our_netns()


@needs_root
@needs_kmod
def test_a_mode_whose_connections_are_wrong_fails(tmp_path):
    # reno on the shuffle sockets where off means cubic: the kernel says so, the mode fails
    r, res, _ = trace(tmp_path, "--modes", "off", "--force-cc", "reno")
    assert r.returncode != 0
    err = res["failed_modes"]["off"]
    assert "cc_seen ['reno'], expected ['cubic']" in err["error"]
    assert err["cc_seen"] == ["reno"] and "off" not in res["modes"]


def test_check_mode():
    replay.check_mode("off", ["cubic"], [0], [])
    replay.check_mode("dctcp", ["datcp"], [0], ["dctcp"])
    replay.check_mode("prio", ["datcp"], [0, 8, 34], ["dctcp"])
    replay.check_mode("on", ["datcp"], [0, 34], ["datcp"])
    for args, why in [(("off", ["cubic", "datcp"], [0], []), "cc_seen"),
                      (("off", ["cubic"], [0], ["datcp"]), "kernel flow entries"),
                      (("on", ["cubic"], [0], ["datcp"]), "cc_seen ['cubic']"),
                      (("on", ["datcp"], [0], []), "expected datcp among them"),
                      (("dctcp", ["datcp"], [34], ["dctcp"]), "one band"),
                      (("prio", ["datcp"], [0], ["datcp"]), "expected ['dctcp']")]:
        with pytest.raises(replay.ModeCheckError, match=why.replace("[", r"\[")):
            replay.check_mode(*args)


def test_alone_is_the_busiest_port_at_the_link_rate():
    # two maps on h0 and h1, one reduce on h2: h2's downlink carries 2 x 10 MB -> 1.6 s
    j = {"maps": 2, "reduces": 1, "partition_bytes": 10_000_000, "map_hosts": [0, 1],
         "reduce_hosts": [2]}
    assert replay.alone_s(j) == pytest.approx(1.6)
    # a map on the reduce's own host does not cross the fabric
    assert replay.alone_s(dict(j, map_hosts=[2, 1])) == pytest.approx(0.8)
    # per-reduce bytes; the uplink of h0 carries both reduces' partitions
    j2 = dict(j, maps=1, reduces=2, map_hosts=[0], reduce_hosts=[1, 2],
              reduce_bytes=[5_000_000, 7_500_000])
    assert replay.alone_s(j2) == pytest.approx(1.0)
    # not before the last map ends
    assert replay.alone_s(dict(j, map_seconds=3.0)) == pytest.approx(3.0)


def test_select_and_spec_errors(tmp_path):
    spec = workload.load_spec(SMALL)
    sel = replay.select(spec, "2:3")
    assert [j["name"] for j in sel["jobs"]] == [j["name"] for j in spec["jobs"][2:5]]
    assert sel["jobs"][0]["submit_s"] == 0
    bad = dict(spec, jobs=[dict(spec["jobs"][0], map_hosts=[0, 9])])
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(bad))
    with pytest.raises(workload.WorkloadError, match=r"jobs\[0\]\.map_hosts"):
        workload.load_spec(p)
    unplaced = dict(spec, jobs=[{k: v for k, v in spec["jobs"][0].items() if k != "map_hosts"}])
    with pytest.raises(SystemExit, match=r"jobs\[0\]\.map_hosts: the trace replay needs"):
        replay.check_placement(unplaced)
    with pytest.raises(SystemExit, match="link_mbit: the replay's fabric runs at 100 Mbit/s, "
                                         "the spec was scaled for 10"):
        replay.check_placement(dict(spec, link_mbit=10))


@needs_root
def test_cli_names_the_bad_field(tmp_path):
    spec = workload.load_spec(SMALL)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(dict(spec, jobs=[dict(spec["jobs"][0], map_hosts=[0, 9])])))
    r = subprocess.run([RUN, "trace", "--trace", str(p), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "jobs[0].map_hosts" in r.stderr


@needs_root
def test_cli_converts_a_coflow_trace_only_with_hosts_and_load(tmp_path):
    raw = tmp_path / "trace.txt"
    raw.write_text("150 2\n1 0 1 22 1 65:1.0\n2 10833 2 104 132 1 140:48.0\n")
    r = subprocess.run([RUN, "trace", "--trace", str(raw), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--hosts and --load" in r.stderr
    r = subprocess.run([RUN, "trace", "--trace", str(raw), "--hosts", "4", "--load", "1.5",
                        "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--load: must be in (0, 1)" in r.stderr


def _round_entry(jcts, copy, lag, cc="datcp", dscp=(0,), km=("datcp",), peak=1000):
    jobs = {n: {"jct_s": t, "copy_s": copy, "deadline_met": None, "bytes": 100,
                "rounds": [t]} for n, t in jcts.items()}
    entry = {"jobs": jobs, "cc_seen": [cc], "dscp_seen": list(dscp),
             "kernel_modes_seen": list(km), "duration_s": 10.0 + lag, "flows": 3,
             "registered": 3, "register_timeouts": 1, "register_ms": None, "hold_ms": None,
             "in_kernel": 3, "suspended": 0, "killed": 0, "forward_failures": 0,
             "driver_lag_ms": None, "data_threads": 4,
             "process_cpu_s": {"driver": lag, "agents": 1.0, "scheduler": None},
             "runqueue_wait_s": {"driver": 0.5, "agents": lag, "scheduler": None},
             "switch": {"bytes": 10, "packets": 1, "marks": 2, "drops": 0,
                        "peak_queue_bytes": peak}}
    samples = {"register_ms": [1.0], "hold_ms": [2.0, 3.0], "driver_lag_ms": [lag]}
    return entry, samples


def test_merge_rounds_takes_medians_and_keeps_the_rounds():
    e1, s1 = _round_entry({"a": 1.0, "b": 2.0}, 0.5, 1.0, dscp=(0,), peak=1000)
    e2, s2 = _round_entry({"a": 3.0, "b": 1.0}, 0.7, 5.0, dscp=(0, 34), peak=3000)
    e3, s3 = _round_entry({"a": 2.0, "b": 4.0}, 0.6, 3.0, km=("datcp", "dctcp"), peak=2000)
    m = replay.merge_rounds([e1, e2, e3], [s1, s2, s3], {"a": 2.5, "b": None})
    assert m["jobs"]["a"] == {"jct_s": 2.0, "copy_s": 0.6, "deadline_met": True, "bytes": 100,
                              "rounds": [1.0, 3.0, 2.0]}
    assert m["jobs"]["b"]["jct_s"] == 2.0 and m["jobs"]["b"]["rounds"] == [2.0, 1.0, 4.0]
    assert m["jobs"]["b"]["deadline_met"] is None
    # the kernel's view is the union, counts add up, samples pool, the switch adds up
    assert m["dscp_seen"] == [0, 34] and m["kernel_modes_seen"] == ["datcp", "dctcp"]
    assert m["flows"] == 9 and m["register_timeouts"] == 3
    assert m["driver_lag_ms"] == {"p50": 3.0, "p95": 5.0, "max": 5.0}
    assert m["hold_ms"]["max"] == 3.0 and m["duration_s"] == 13.0
    assert m["process_cpu_s"] == {"driver": 3.0, "agents": 1.0, "scheduler": None}
    assert m["runqueue_wait_s"] == {"driver": 0.5, "agents": 3.0, "scheduler": None}
    assert m["switch"] == {"bytes": 30, "packets": 3, "marks": 6, "drops": 0,
                           "peak_queue_bytes": 3000}
    assert len(m["per_round"]) == 3 and "jobs" not in m["per_round"][0]
    # an even count of rounds: the mean of the middle two, as the Docker runner's merge
    m2 = replay.merge_rounds([e1, e2], [s1, s2], {"a": 1.5})
    assert m2["jobs"]["a"]["jct_s"] == 2.0 and m2["jobs"]["a"]["deadline_met"] is False
    # results.json with these entries passes the workload schema (rounds at the top is N)
    res = {"spec": "x", "rounds": 3, "generated_by": "bench/run trace",
           "modes": {"off": m, "on": m}, "alone": {"a": 0.5}}
    workload.validate_results(res)
    with pytest.raises(workload.WorkloadError, match="rounds"):
        workload.validate_results(dict(res, rounds=2))
    # one round is the round itself
    one = replay.merge_rounds([e1], [s1], {})
    assert {n: (j["jct_s"], j["rounds"]) for n, j in one["jobs"].items()} == \
        {"a": (1.0, [1.0]), "b": (2.0, [2.0])}


@needs_root
def test_cli_rounds_must_be_positive(tmp_path):
    r = subprocess.run([RUN, "trace", "--trace", SMALL, "--rounds", "0", "--out",
                        str(tmp_path / "o")], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--rounds 0: must be an integer >= 1" in r.stderr


def test_host_process_serves_and_fetches_over_loopback(tmp_path):
    # one host's process without an agent, on loopback: it serves its own fetch; the reports
    # come in order with the bytes, the map side's record at the end
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    conf = tmp_path / "host.json"
    conf.write_text(json.dumps({"name": "h0", "ip": "127.0.0.1", "port": port,
                                "subscriber": "test", "jobs": {"job_1_0001": [300_000, 7]}}))
    mine, theirs = socket.socketpair()
    p = subprocess.Popen([sys.executable, "-m", "datcpbench.replayhost", str(conf),
                          str(theirs.fileno())], pass_fds=(theirs.fileno(),),
                         env=dict(os.environ, PYTHONPATH=BENCH))
    theirs.close()
    try:
        rd = mine.makefile("rb")
        assert json.loads(rd.readline()) == {"ev": "ready"}

        def fetch(fid, job, maps):
            req = json.dumps({"fetch": fid, "job": job, "reduce": 0, "maps": maps}) + "\n"
            mine.sendall(json.dumps({"op": "fetch", "fetch": fid, "src_ip": "127.0.0.1",
                                     "src_name": "h0", "job_id": job, "reduce": 0,
                                     "maps": maps, "request": req}).encode() + b"\n")
            msgs = []
            while not msgs or msgs[-1]["ev"] != "fetched":
                msgs.append(json.loads(rd.readline()))
            return msgs[:-1], msgs[-1]

        events, res = fetch(0, "job_1_0001", [0, 1, 2])
        assert [(e["kind"], e["map_ids"]) for e in events] == [
            (k, [m]) for m in (0, 1, 2) for k in ("fetch_started", "fetch_finished")]
        assert all(e["bytes"] == 300_000 + replay.HEADER_BYTES for e in events)
        assert res["complete"] and res["got"] == [0, 1, 2] and res["received"] == 900_000
        assert res["t_connected"] <= res["first"] <= res["last"] <= res["t_end"]
        # a job the map side does not know: it closes, the fetch fails with nothing received
        events, res = fetch(1, "job_1_0099", [0])
        assert not events and not res["complete"] and res["got"] == [] and res["error"]
        mine.sendall(b'{"op": "stop"}\n')
        rec = json.loads(rd.readline())
        assert rec["ev"] == "records" and rec["data_threads"] >= 2
        served = rec["recs"]["0"]
        assert served["t_served"] <= served["t_released"] and served["cc"]
        assert "registered" not in served       # no agent: nothing registered
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
        mine.close()


def test_replay_results_make_the_workload_report(tmp_path):
    # the replay's own keys in a mode do not collide with the Docker runner's (the report
    # reads a mode's cpu_s as the cluster's containers and roles)
    e, s = _round_entry({"a": 1.0, "b": 2.0}, 0.5, 1.0)
    m = replay.merge_rounds([e], [s], {})
    res = {"spec": "x", "rounds": 1, "generated_by": "bench/run trace",
           "modes": {"off": m, "on": m}, "alone": {"a": 0.5, "b": 0.5}}
    (tmp_path / "results.json").write_text(json.dumps(res))
    r = subprocess.run([os.path.join(BENCH, "workload"), "report",
                        str(tmp_path / "results.json"), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "## Job completion time" in (tmp_path / "TABLE.md").read_text()
