"""docker/ab-table.py: the A/B table from a workload-runner directory (docker/demo-ab.sh)."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "docker", "ab-table.py")


def history(job_id, copy, shuffle, completion, poll):
    return {"jobId": job_id, "copyMillis": copy, "shuffleMillis": shuffle,
            "completionMillis": completion, "completionLessPollMillis": completion - poll,
            "pollWaitMillis": poll}


def write_round(d, mode, i, b_copy, a_done, b_met=None):
    raw = d / "raw" / mode
    raw.mkdir(parents=True, exist_ok=True)
    rnd = {"releaseMillis": 20000, "jobs": {
        "A": {"history": history(f"job_{mode}{i}_A", 6000, 2000, 20000 + a_done, 500)},
        "B": {"history": history(f"job_{mode}{i}_B", b_copy, b_copy + 400, 20000 + b_copy + 900,
                                 300)}}}
    (raw / f"round-{i}.json").write_text(json.dumps(rnd))
    if b_met is not None:
        flows = [{"deadlineUnixNanos": 5, "finishUnixNanos": 4, "met": True},
                 {"deadlineUnixNanos": 5, "finishUnixNanos": 6, "met": b_met}]
        (raw / f"round-{i}-scheduler.json").write_text(json.dumps(
            {"jobs": {}, "flows": {f"job_{mode}{i}_B": {"flows": flows}}}))


def run(d):
    return subprocess.run([sys.executable, TOOL, str(d)], capture_output=True, text=True)


def test_medians_ratios_and_rounds_on_time(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"rounds": 3, "modes": {"off": {}, "on": {}}}))
    for i, (copy, done) in enumerate([(3000, 7500), (2800, 7700), (2900, 7600)], 1):
        write_round(tmp_path, "off", i, copy, done)
    for i, (copy, done) in enumerate([(1800, 7600), (1700, 7900), (2000, 7400)], 1):
        write_round(tmp_path, "on", i, copy, done, b_met=(i != 2))
    # a fourth round of an earlier, longer run is not this run's
    write_round(tmp_path, "on", 4, 100, 100, b_met=True)
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    # B copy medians 2.90 off, 1.80 on: 0.62; A completion from release 7.60 vs 7.60
    assert "| job B copy (first fetch -> copy done; Fig. 14's measure) | 2.90 s | 1.80 s | 0.62 |" \
        in r.stdout
    assert "| job A completion (from release of the maps) | 7.60 s | 7.60 s | 1.00 |" in r.stdout
    assert "| off 1 | 3.00 s | 3.40 s | 7.50 s | 0.50 s | - |" in r.stdout
    assert "| on 2 | 1.70 s | 2.10 s | 7.90 s | 0.50 s | no |" in r.stdout
    assert "| on 4 |" not in r.stdout
    assert "Job B's flows all met their deadline in 2 of 3 rounds on." in r.stdout


def test_off_only_and_missing_results(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"rounds": 1, "modes": {"off": {}}}))
    write_round(tmp_path, "off", 1, 3000, 7500)
    r = run(tmp_path)
    assert r.returncode == 0 and "| 3.00 s | (not run) | |" in r.stdout
    assert "met their deadline" not in r.stdout
    r = run(tmp_path / "nothing")
    assert r.returncode == 1 and "results.json" in r.stderr


def test_the_last_maps_end_against_the_schedulers_estimates(tmp_path):
    # as the runner's merge keeps them (datcpbench.dockerrun.map_end_estimates)
    first = {"made_s": 20.4, "maps_done": 2, "map_wave_s": 20.4, "last_completion_s": 33.2,
             "map_wave_error_s": -4.8, "last_completion_error_s": 8.0}
    map_end = {"rounds": [{"real_s": 25.2, "maps": 4, "first": first, "latest": first}],
               "median_abs_error_s": {w: {"map_wave": 4.8, "last_completion": 8.0}
                                      for w in ("first", "latest")}}
    (tmp_path / "results.json").write_text(json.dumps(
        {"rounds": 1, "modes": {"off": {}, "on": {"jobs": {"A": {"map_end": map_end}}}}}))
    write_round(tmp_path, "off", 1, 3000, 7500)
    write_round(tmp_path, "on", 1, 1800, 7600, b_met=True)
    r = run(tmp_path)
    assert r.returncode == 0, r.stderr
    assert ("| on 1 | A | 25.20 s | first | 20.40 s (2/4) | 20.40 s | -4.80 s | 33.20 s "
            "| +8.00 s |") in r.stdout
    assert "| on | A | first | 4.80 s | 8.00 s |" in r.stdout
    assert "| on 1 | A | 25.20 s | latest | the first (no later estimate moved an end) |" \
        in r.stdout
    assert "| on | all | first | map-wave closer in 1 of 1 | |" in r.stdout
