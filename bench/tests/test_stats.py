"""bench/run --runs / stats: per-run metrics, their median and range, the run files'
summary (datcpbench/stats.py). Plain Python on synthetic results: no namespaces."""
import json
import os
import subprocess

import pytest
from conftest import RUN, needs_root

from datcpbench import scenarios, stats


def flow(fid, size, deadline, start, fct, met, series, cls=None):
    f = {"id": fid, "size_bytes": size, "deadline_s": deadline, "start_s": start,
         "fct_s": fct, "met": met, "bytes": 1 if series else 0, "importance": 1.0,
         "tput_from_s": start, "tput_mbps": series}
    if cls:
        f["class"] = cls
    return f


def mixed_result(met_flags, bg_mbps=40.0, seed=1, label="datcp"):
    """A mixed-like result: one background flow at bg_mbps for 4 s, deadline flows
    (class, met) each sending from 1.0 s to 2.0 s."""
    flows = [flow("bg0", None, None, 0.0, None, None, [bg_mbps] * 40)]
    for i, (cls, met) in enumerate(met_flags):
        flows.append(flow(f"{cls}{i}", 1_000_000, 2.0, 1.0, 1.0, met, [50.0] * 10, cls))
    dl = [f for f in flows if f["deadline_s"] is not None]
    return {"scenario": "mixed", "cc": "datcp", "link_mbps": 100, "duration_s": 4.0,
            "flows": flows, "link_util": 0.97, "seed": seed, "label": label,
            "summary": {"met": sum(f["met"] for f in dl), "deadline_flows": len(dl),
                        "met_ratio_by_class": {}}}


def test_aggregate_median_and_range_skip_missing_values():
    agg = stats.aggregate([{"met": 15, "x": 0.5}, {"met": 21}, {"met": 18, "x": 0.7},
                           {"met": 14, "x": None}])
    assert agg["met"] == {"median": 16.5, "min": 14, "max": 21, "n": 4,
                          "values": [15, 21, 18, 14]}
    assert agg["x"]["median"] == pytest.approx(0.6)
    assert (agg["x"]["min"], agg["x"]["max"], agg["x"]["n"]) == (0.5, 0.7, 2)
    assert agg["x"]["values"] == [0.5, None, 0.7, None]


def test_metrics_count_met_per_class():
    r = mixed_result([("lax", True), ("lax", True), ("tight", False), ("tight", True),
                      ("moderate", False)])
    m = stats.metrics(r)
    assert (m["met"], m["met_lax"], m["met_moderate"], m["met_tight"]) == (3, 2, 0, 1)
    assert m["link_util"] == 0.97


def test_bg_share_counts_only_bins_with_a_deadline_flow_running():
    r = mixed_result([("lax", True)], bg_mbps=40.0)
    # background at 10 Mbit/s outside the deadline flow's second, 40 inside
    r["flows"][0]["tput_mbps"] = [10.0] * 10 + [40.0] * 10 + [10.0] * 20
    share = stats.bg_share_during_deadline_flows(r)
    assert share == pytest.approx(40.0 / (stats.GOODPUT_FRACTION * 100), abs=0.002)
    # a deadline flow that never finished counts until its last non-empty bin
    late = flow("tight9", 1_000_000, 1.0, 2.0, None, False, [5.0] * 10, "tight")
    r["flows"].append(late)
    share = stats.bg_share_during_deadline_flows(r)
    assert share == pytest.approx((10 * 40 + 10 * 10) / 20 / (stats.GOODPUT_FRACTION * 100),
                                  abs=0.002)


def test_summary_of_run_files_groups_by_label_and_orders_by_seed(tmp_path):
    runs = {("datcp", 3): [("lax", True), ("tight", False)],
            ("datcp", 1): [("lax", True), ("tight", True)],
            ("datcp", 2): [("lax", False), ("tight", False)],
            ("bbr", 1): [("lax", True), ("tight", False)]}
    for (label, seed), flags in runs.items():
        (tmp_path / stats.run_file("mixed", label, seed)).write_text(
            json.dumps(mixed_result(flags, seed=seed, label=label)))
    (tmp_path / "notes.json").write_text("{}")   # not a run file: ignored
    txt = stats.summarize_dir(str(tmp_path))
    summ = json.loads((tmp_path / "summary.json").read_text())["mixed"]
    assert set(summ) == {"datcp", "bbr"}
    d = summ["datcp"]
    assert d["runs"] == 3 and d["seeds"] == [1, 2, 3]
    assert d["metrics"]["met"]["values"] == [2, 0, 1]
    assert (d["metrics"]["met"]["median"], d["metrics"]["met"]["min"],
            d["metrics"]["met"]["max"]) == (1, 0, 2)
    assert d["metrics"]["met_tight"]["values"] == [1, 0, 0]
    assert summ["bbr"]["runs"] == 1
    assert "| datcp | 3 | 1 [0-2] | 1 [0-1] | 0 [0-1] |" in txt
    assert (tmp_path / "SUMMARY.md").read_text().strip() == txt.strip()


def test_mixed_draws_sizes_and_deadlines_from_the_seed():
    def draws(seed):
        s = scenarios.build("mixed", seed=seed)
        return [(f["size_bytes"], f["deadline_s"]) for f in s["flows"] if f["deadline_s"]]
    assert draws(1) == draws(1)
    assert draws(1) != draws(2)
    assert len(draws(2)) == 27


@needs_root
@pytest.mark.parametrize("args,msg", [
    (["--runs", "0", "--out", "x"], "--runs 0: must be an integer >= 1"),
    (["--runs", "2"], "--runs needs --out DIR"),
    (["--kernel-trace", "-1"], "--kernel-trace -1.0: must be >= 0 seconds"),
])
def test_bad_repeat_options_fail_with_the_option_named(args, msg):
    r = subprocess.run([RUN, "mixed", *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert msg in r.stderr


def test_stats_without_run_files_fails(tmp_path):
    with pytest.raises(SystemExit, match="no run files"):
        stats.summarize_dir(str(tmp_path))
    assert not os.listdir(tmp_path)
