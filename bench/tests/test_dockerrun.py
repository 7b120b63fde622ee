"""docker/run-workload.sh's mode verification and results (datcpbench.dockerrun): fed samples
as `ss -tinoH --tos` and `datcpctl flow list --json` print them, right and wrong."""
import json

import pytest

from datcpbench import dockerrun, workload


def ss_sample(*sockets):
    """One sample block: (local, peer, cc, options, tos) per socket."""
    lines = ["# 1764090000.123"]
    for local, peer, cc, options, tos in sockets:
        lines.append(f"0      0      {local} {peer} timer:(on,200ms,0) tos:{tos} class_id:0")
        lines.append(f"\t {options} {cc} wscale:7,7 rto:204 rtt:1.2/0.3 mss:1448 cwnd:10")
    return "\n".join(lines) + "\n"


MAP = "10.213.3.10:13562"
RED = "10.213.4.10:41234"


def conns(cc, options="ts sack", tos="0", v6=False):
    local, peer = (f"[::ffff:{MAP.split(':')[0]}]:13562", f"[::ffff:10.213.4.10]:41234") \
        if v6 else (MAP, RED)
    # the map side (sender, local port 13562) and the reduce side of one shuffle connection
    return (dockerrun.parse_ss(ss_sample((local, peer, cc, options, tos)), "nm1")
            + dockerrun.parse_ss(ss_sample((RED, MAP, cc, options, "0")), "nm2"))


def flows(mode):
    return dockerrun.parse_flows(json.dumps([{"src": MAP, "dst": RED, "epoch": 1, "mode": mode,
                                              "quench_mode": "off"}]) + "\n")


def test_parse_ss_reads_cc_ecn_dscp_and_both_address_families():
    c = dockerrun.parse_ss(ss_sample((MAP, RED, "datcp", "ts sack ecn", "0x88")), "nm1")[0]
    assert c == {"host": "nm1", "local": ("10.213.3.10", 13562), "peer": ("10.213.4.10", 41234),
                 "cc": "datcp", "ecn": True, "dscp": 34, "sender": True}
    v6 = conns("datcp", tos="0x20", v6=True)[0]
    assert v6["local"] == ("10.213.3.10", 13562) and v6["dscp"] == 8


def test_parse_ss_rejects_what_is_not_ss_output():
    with pytest.raises(ValueError, match="nm3: not an ss socket line"):
        dockerrun.parse_ss("Cannot open netlink socket\n", "nm3")


@pytest.mark.parametrize("mode,cc,options,flow_mode", [
    ("off", "cubic", "ts sack", None),
    ("dctcp", "datcp", "ts sack ecn", "dctcp"),
    ("prio", "datcp", "ts sack ecn", "dctcp"),
    ("on", "datcp", "ts sack ecn", "datcp"),
])
def test_a_mode_as_defined_passes(mode, cc, options, flow_mode):
    summary, problems = dockerrun.verify(mode, conns(cc, options),
                                         flows(flow_mode) if flow_mode else {})
    assert problems == []
    assert summary["cc_seen"] == [cc] and summary["dscp_seen"] == [0]
    assert summary["flow_modes_seen"] == ([flow_mode] if flow_mode else [])


@pytest.mark.parametrize("mode,cc,options,flow_mode,message", [
    # datcp left over from an earlier on-run (sockops still attached)
    ("off", "datcp", "ts sack ecn", None, "off: shuffle connections must run cubic only, seen"
                                          " datcp on nm1, datcp on nm2"),
    ("off", "cubic", "ts sack ecn", None, "off: shuffle connections negotiated ECN"),
    ("on", "cubic", "ts sack", None, "on: shuffle connections must run datcp only, seen cubic"),
    ("dctcp", "cubic", "ts sack", None, "dctcp: shuffle connections must run datcp only"),
    ("dctcp", "datcp", "ts sack ecn", "datcp", "dctcp: the kmod ran shuffle flows in mode(s)"
                                               " datcp, the mode defines dctcp only"),
    ("prio", "datcp", "ts sack ecn", "pd2tcp", "prio: the kmod ran shuffle flows in mode(s)"
                                               " pd2tcp"),
])
def test_a_mode_not_as_defined_fails_with_the_reason(mode, cc, options, flow_mode, message):
    _, problems = dockerrun.verify(mode, conns(cc, options), flows(flow_mode) if flow_mode else {})
    assert any(message in p for p in problems), problems


def test_a_host_local_fetch_is_checked_too_and_named_so():
    own = "10.213.3.10:45404"
    local = dockerrun.parse_ss(ss_sample((own, MAP, "bbr", "ts sack", "0")), "nm1")
    _, problems = dockerrun.verify("off", conns("cubic") + local, {})
    assert problems == ["off: shuffle connections must run cubic only, seen bbr on nm1"
                        " (host-local)"]


def test_no_sampled_connection_fails_rather_than_passing_unverified():
    _, problems = dockerrun.verify("on", [], {})
    assert problems and "could not be verified" in problems[0]


def test_flows_of_other_connections_do_not_count():
    other = dockerrun.parse_flows(json.dumps([{"src": "10.213.5.10:13562",
                                               "dst": "10.213.6.10:40000", "mode": "datcp"}]))
    summary, problems = dockerrun.verify("dctcp", conns("datcp", "ecn"), other)
    assert problems == [] and summary["flows_read"] == 0


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="mode: 'fast' unknown"):
        dockerrun.verify("fast", [], {})


def round_json(jct, copy, deadline=None):
    # submitted at 1 s, maps 3-5 s, first fetch at 6 s, copy ends at 6 s + copy, job at 1 + jct
    history = {"submitMillis": 1000, "lastMapFinishMillis": 5000,
               "completionMillis": round((1 + jct) * 1000),
               "maps": [{"startMillis": 3000}, {"startMillis": 3500}],
               "reduces": [{"firstFetchMillis": 6000,
                            "shuffleFinishMillis": 6000 + round(copy * 1000)}]}
    return {"spec": "s", "jobs": {"j1": {"jct_s": jct, "copy_s": copy, "state": "SUCCEEDED",
                                         "bytes": 8000, "expected_bytes": 8000,
                                         "deadline_s": deadline, "history": history}}}


def test_merge_takes_medians_and_keeps_the_rounds(tmp_path):
    check = {"cc_seen": ["cubic"], "dscp_seen": [0], "ecn_seen": [False],
             "flow_modes_seen": [], "problems": []}
    for i, (jct, copy) in enumerate([(9.8, 2.4), (10.1, 2.6), (9.7, 2.0)], 1):
        d = tmp_path / "raw" / "off"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"round-{i}.json").write_text(json.dumps(round_json(jct, copy, deadline=9.9)))
        (d / f"round-{i}-check.json").write_text(json.dumps(check))
    assert dockerrun._main(["merge", "--dir", str(tmp_path), "--spec", "s", "--modes", "off",
                            "--rounds", "3"]) == 0
    r = json.loads((tmp_path / "results.json").read_text())
    assert r["spec"] == "s" and r["rounds"] == 3 and r["generated_by"] == "docker/run-workload.sh"
    j1 = r["modes"]["off"]["jobs"]["j1"]
    phases = j1.pop("phases_s")
    assert j1 == {"jct_s": 9.8, "copy_s": 2.4, "deadline_met": True, "bytes": 8000,
                  "rounds": [9.8, 10.1, 9.7]}
    # each phase's median over the rounds: 2 s to the first map, maps 2 s, 1 s to the first
    # fetch, copy 2.0/2.4/2.6 s, copy end to job end 2.4/2.5/2.7 s
    assert phases == pytest.approx({"start": 2.0, "maps": 2.0, "wait": 1.0, "copy": 2.4,
                                    "end": 2.5})
    assert r["modes"]["off"]["cc_seen"] == ["cubic"] and r["modes"]["off"]["dscp_seen"] == [0]


def test_check_command_exits_non_zero_on_a_wrong_mode(tmp_path, capsys):
    (tmp_path / "ss-nm1.txt").write_text(ss_sample((MAP, RED, "cubic", "ts sack", "0")))
    out = tmp_path / "check.json"
    assert dockerrun._main(["check", "--mode", "on", "--samples", str(tmp_path),
                            "--out", str(out)]) == 1
    assert "MODE CHECK FAILED: on: shuffle connections must run datcp only" in \
        capsys.readouterr().err
    assert json.loads(out.read_text())["cc_seen"] == ["cubic"]


def test_cpu_samples_count_each_process_from_the_rounds_start_by_role():
    text = "\n".join([
        "# 1764090000.0 100",
        "1 500 nodemanager",          # running before the round: only its growth counts
        "40 90 agent",
        "# 1764090001.0 100",
        "1 530 nodemanager", "40 95 agent",
        "77 120 attempt_1_0001_m_000000_0",   # started during the round: all of it counts
        "# 1764090002.0 100",
        "1 560 nodemanager", "40 95 agent",
        "77 310 attempt_1_0001_m_000000_0",
        "81 150 attempt_1_0001_r_000000_0", "82 40 attempt_1_0002_r_000000_0",
        "90 250 appmaster", "95 70 java",
        "# 1764090003.0 100",
        # the map exited and is not reaped yet: no command line, its final ticks
        "1 570 nodemanager", "40 95 agent", "77 330 java",
        "81 150 attempt_1_0001_r_000000_0", "82 40 attempt_1_0002_r_000000_0",
        "90 260 appmaster", "95 75 java"])
    assert dockerrun.parse_cpu_samples(text) == pytest.approx(
        {"nodemanager": 0.7, "agent": 0.05, "map": 3.3, "reduce": 1.9, "appmaster": 2.6,
         "java": 0.75})


def test_cpu_usage_is_each_containers_cgroup_growth_and_none_without_samples(tmp_path):
    assert dockerrun.cpu_usage(str(tmp_path)) is None
    (tmp_path / "cpu-start.txt").write_text("nm1 1000000000\nrm 500000000\n")
    # the scheduler started during the round: counted from 0
    (tmp_path / "cpu-stop.txt").write_text("nm1 3500000000\nrm 600000000\nscheduler 2000000000\n")
    (tmp_path / "ps-nm1.txt").write_text("# 1.0 100\n7 0 agent\n# 2.0 100\n7 30 agent\n")
    (tmp_path / "ps-nm2.txt").write_text("# 1.0 100\n8 10 agent\n# 2.0 100\n8 20 agent\n")
    assert dockerrun.cpu_usage(str(tmp_path)) == {
        "containers": {"nm1": 2.5, "rm": 0.1, "scheduler": 2.0}, "total": 4.6,
        "roles": {"agent": 0.4}}


def test_merge_keeps_the_median_cpu_of_the_rounds(tmp_path):
    for i, total in enumerate([10.0, 14.0, 12.0], 1):
        check = {"cc_seen": ["cubic"], "dscp_seen": [0], "ecn_seen": [False],
                 "flow_modes_seen": [], "problems": [],
                 "cpu_s": {"containers": {"nm1": total}, "total": total,
                           "roles": {"map": total / 2} if i != 2 else {}}}
        d = tmp_path / "raw" / "off"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"round-{i}.json").write_text(json.dumps(round_json(9.8, 2.4)))
        (d / f"round-{i}-check.json").write_text(json.dumps(check))
    dockerrun._main(["merge", "--dir", str(tmp_path), "--spec", "s", "--modes", "off",
                     "--rounds", "3"])
    cpu = json.loads((tmp_path / "results.json").read_text())["modes"]["off"]["cpu_s"]
    # a role a round did not see counts 0 in that round
    assert cpu == {"total": 12.0, "containers": {"nm1": 12.0}, "roles": {"map": 5.0}}


ORIGIN_MS = 1_795_000_000_000


def estimate(made, done, wave, last):
    """A map-end estimate as GET /api/v1/jobs shows it, times in s from the round's start."""
    ns = lambda s: ORIGIN_MS * 1_000_000 + round(s * 1e9)  # noqa: E731
    return {"madeUnixNanos": ns(made), "mapsDone": done, "mapsRunning": 1,
            "runningMapsSinceUnixNanos": ns(3), "medianMapNanos": 1_500_000_000, "waves": 0,
            "mapWaveUnixNanos": ns(wave), "lastCompletionUnixNanos": ns(last)}


def scheduler_round(jct, first, latest):
    """A round of job j1 (last map ends at 5 s) and the scheduler's records of it."""
    rnd = round_json(jct, 2.0)
    rnd["startMillis"] = ORIGIN_MS
    rnd["jobs"]["j1"]["history"]["jobId"] = "job_1"
    view = {"id": "job_1", "firstMapEndEstimate": first, "latestMapEndEstimate": latest,
            "mapEndEstimates": [e for e in (first, latest) if e]}
    if first == latest:
        view["mapEndEstimates"] = [first] if first else []
    return rnd, {"jobs": {"jobs": [view]}, "flows": {}}


def test_map_end_estimates_hold_both_rules_against_the_last_maps_real_end():
    rnd, records = scheduler_round(9.8, estimate(3.5, 1, 4.5, 6.0), estimate(4.0, 1, 5.2, 7.0))
    e = dockerrun.map_end_estimates(rnd, records)["j1"]
    assert e["real_s"] == 5.0 and e["maps"] == 2
    assert e["first"] == {"made_s": 3.5, "maps_done": 1, "map_wave_s": 4.5,
                          "last_completion_s": 6.0, "map_wave_error_s": -0.5,
                          "last_completion_error_s": 1.0}
    assert e["latest"]["map_wave_error_s"] == 0.2
    assert e["latest"]["last_completion_error_s"] == 2.0
    # held: the first stood 0.5 s (errors 0.5, 1.0 s), the latest 1.0 s to the real end (0.2,
    # 2.0 s)
    assert e["held"] == {"made_s": 3.5, "estimates": 2, "window_s": 1.5,
                         "map_wave_error_s": 0.3, "last_completion_error_s": 1.667}
    # estimates by each running map's start are held by the earliest-start rule too (the
    # planner's before), the last-completion rule where that start was unknown (0)
    each = [dict(estimate(3.5, 1, 4.5, 6.0), rule="EACH_START",
                 earliestStartUnixNanos=ORIGIN_MS * 1_000_000 + 4_000_000_000),
            dict(estimate(4.0, 1, 5.2, 7.0), rule="EACH_START", earliestStartUnixNanos=0)]
    rnd, records = scheduler_round(9.8, each[0], each[1])
    held = dockerrun.map_end_estimates(rnd, records)["j1"]["held"]
    # 0.5 s at 1.0 s off, 1.0 s at 2.0 s off
    assert held["earliest_start_error_s"] == 1.667
    assert "(earliest-start rule: 1.67 s)" in dockerrun._estimate_row("held", held, {})
    # an estimate made after the last map really ended stood for none of the wait
    late, records = scheduler_round(9.8, estimate(5.5, 1, 4.5, 6.0), None)
    assert dockerrun.map_end_estimates(late, records)["j1"]["held"] is None
    # a job the scheduler made no estimate for, and a round without the scheduler
    rnd, records = scheduler_round(9.8, None, None)
    assert dockerrun.map_end_estimates(rnd, records)["j1"]["first"] is None
    assert dockerrun.map_end_estimates(rnd, None) == {}


def test_merge_keeps_the_map_end_estimates_and_prints_them_side_by_side(tmp_path):
    check = {"cc_seen": ["datcp"], "dscp_seen": [0], "ecn_seen": [True],
             "flow_modes_seen": [], "problems": []}
    d = tmp_path / "raw" / "on"
    d.mkdir(parents=True)
    # errors: map-wave -0.5 s and -1.0 s, last-completion +1.0 s and +0.5 s
    for i, (wave, last) in enumerate([(4.5, 6.0), (4.0, 5.5)], 1):
        rnd, records = scheduler_round(9.8, estimate(3.5, 1, wave, last),
                                       estimate(3.5, 1, wave, last))
        (d / f"round-{i}.json").write_text(json.dumps(rnd))
        (d / f"round-{i}-check.json").write_text(json.dumps(check))
        (d / f"round-{i}-scheduler.json").write_text(json.dumps(records))
    assert dockerrun._main(["merge", "--dir", str(tmp_path), "--spec", "s", "--modes", "on",
                            "--rounds", "2"]) == 0
    r = json.loads((tmp_path / "results.json").read_text())
    me = r["modes"]["on"]["jobs"]["j1"]["map_end"]
    assert [e["first"]["map_wave_error_s"] for e in me["rounds"]] == [-0.5, -1.0]
    assert me["median_abs_error_s"]["first"] == {"map_wave": 0.75, "last_completion": 0.75}
    text = "\n".join(dockerrun.map_end_lines(r))
    assert ("| on 1 | j1 | 5.00 s | first | 3.50 s (1/2) | 4.50 s | -0.50 s | 6.00 s "
            "| +1.00 s |") in text
    assert "| on | j1 | first | 0.75 s | 0.75 s |" in text
    # round 1 closer by map-wave (0.5 < 1.0), round 2 by last-completion; the latest estimates
    # are the first ones, held the whole 1.5 s to the real end
    assert "| on | all | first | map-wave closer in 1 of 2 | |" in text
    assert "| on | all | latest |" not in text
    assert ("| on 2 | j1 | 5.00 s | held: 1 estimate(s) over 1.50 s | from 3.50 s | "
            "| 1.00 s (mean abs) | | 0.50 s (mean abs) |") in text
    assert "| on | all | held | map-wave closer in 1 of 2 | |" in text


def test_mapends_writes_the_map_end_section_of_a_run_without_mode_off(tmp_path, capsys):
    # run-workload.sh --modes on: the comparison report refuses results without off, the
    # runner writes this section instead (it stopped at the report step before)
    check = {"cc_seen": ["datcp"], "dscp_seen": [0], "ecn_seen": [True],
             "flow_modes_seen": [], "problems": []}
    d = tmp_path / "raw" / "on"
    d.mkdir(parents=True)
    rnd, records = scheduler_round(9.8, estimate(3.5, 1, 4.5, 6.0), None)
    (d / "round-1.json").write_text(json.dumps(rnd))
    (d / "round-1-check.json").write_text(json.dumps(check))
    (d / "round-1-scheduler.json").write_text(json.dumps(records))
    assert dockerrun._main(["merge", "--dir", str(tmp_path), "--spec", "s", "--modes", "on",
                            "--rounds", "1"]) == 0
    with pytest.raises(workload.WorkloadError, match="at least the mode off"):
        workload.load_results(str(tmp_path / "results.json"))
    out = tmp_path / "MAP-END.md"
    assert dockerrun._main(["mapends", "--results", str(tmp_path / "results.json"),
                            "--out", str(out)]) == 0
    text = out.read_text()
    assert "| on 1 | j1 | 5.00 s | first | 3.50 s (1/2) | 4.50 s | -0.50 s |" in text
    assert text == capsys.readouterr().out


def test_mapend_prints_one_rounds_estimates(tmp_path, capsys):
    rnd, records = scheduler_round(9.8, estimate(3.5, 1, 4.5, 6.0), None)
    (tmp_path / "r.json").write_text(json.dumps(rnd))
    (tmp_path / "s.json").write_text(json.dumps(records))
    assert dockerrun._main(["mapend", "--round", str(tmp_path / "r.json"), "--scheduler",
                            str(tmp_path / "s.json"), "--mode", "on", "--index", "3"]) == 0
    out = capsys.readouterr().out
    assert "| on 3 | j1 | 5.00 s | first | 3.50 s (1/2) | 4.50 s | -0.50 s |" in out
    assert "| on 3 | j1 | 5.00 s | latest | no estimate |" in out
    # every row has the header's nine cells
    rows = [line for line in out.splitlines() if line.startswith("| on 3 |")]
    assert len(rows) == 3 and all(line.count("|") == 10 for line in rows)
