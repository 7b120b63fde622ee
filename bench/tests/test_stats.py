"""bench/run --runs / stats: per-run metrics, their median and range, the run files'
summary (datcpbench/stats.py). Plain Python on synthetic results: no namespaces."""
import json
import os
import subprocess

import pytest
from conftest import RUN, needs_root

from datcpbench import diagnose, scenarios, stats


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
        stats.write_run(str(tmp_path / stats.run_file("mixed", label, seed)),
                        mixed_result(flags, seed=seed, label=label))
    (tmp_path / "notes.json").write_text("{}")   # not run files: ignored
    (tmp_path / "mixed__datcp__seed9.json").write_text("{}")
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


# ------------------------------------------------------------ bench/run diagnose

def batch_flow(fid, size_mb, deadline):
    return {"id": fid, "size_bytes": int(size_mb * 1e6), "deadline_s": deadline}


def test_edf_feasibility_of_a_batch():
    # a (2.5 MB, D 1 s) and b (5 MB, D 1 s): 60 Mbit by 1 s; c (12 MB, D 1.5 s): 156 Mbit
    # by 1.5 s, more than 100 Mbit/s carry (150 Mbit), less than 110 Mbit/s (165)
    batch = [batch_flow("a", 2.5, 1.0), batch_flow("b", 5, 1.0), batch_flow("c", 12, 1.5)]
    assert diagnose.edf_feasible(batch, "a", 100e6)
    assert diagnose.edf_feasible(batch, "b", 100e6)
    assert not diagnose.edf_feasible(batch, "c", 100e6)
    assert diagnose.edf_feasible(batch, "c", 110e6)
    assert not diagnose.edf_feasible(batch, "b", 50e6)


def test_need_series_is_bits_left_over_time_left():
    f = flow("t0", 1_000_000, 1.0, 0.0, None, False, [4.0] * 20, "tight")
    ns = diagnose.need_series(f, 2.0)
    assert ns[0] == (0.0, 8.0)                      # 8 Mbit in 1 s
    # after 0.5 s at 4 Mbit/s, 6 Mbit left for 0.5 s
    assert dict(ns)[0.5] == pytest.approx(12.0)
    assert all(t < 1.0 for t, _ in ns)


def diag_result(bg_mbps, dl_mbps, suspended=0):
    """Three flows of one batch at t = 1 s needing 20 Mbit/s each (2.5 MB in 1 s), each
    getting dl_mbps for 1 s and missing; one background flow at bg_mbps."""
    flows = [flow("bg0", None, None, 0.0, None, None, [bg_mbps] * 40)]
    for i in range(3):
        f = flow(f"moderate0.{i}", 2_500_000, 1.0, 1.0, None, False,
                 [dl_mbps] * 10, "moderate")
        f["suspended"] = suspended
        flows.append(f)
    return {"scenario": "mixed", "cc": "datcp", "link_mbps": 100, "duration_s": 4.0,
            "flows": flows, "events": [], "label": "datcp", "seed": 1}


def test_a_miss_while_background_takes_more_than_the_slack_is_blamed_on_it():
    d = diagnose.run_diag(diag_result(bg_mbps=60.0, dl_mbps=12.0))
    f = d["flows"][0]
    assert f["need_mbps"] == pytest.approx(20.0)
    assert f["got_mbps_to_deadline"] == pytest.approx(12.0)
    assert f["bg_mbps_during"] == pytest.approx(60.0)
    assert f["slack_mbps"] == pytest.approx(95.6 - 60.0)
    assert f["edf_feasible"] and f["edf_feasible_bg30"]
    # one background flow: it may keep 95.6 - 60 Mbit/s, the flow needs 20 of it
    assert f["ratio_needed"] == pytest.approx(20.0 / 35.6, abs=0.01)
    assert f["ratio_got"] == pytest.approx(0.2)
    assert [x["cause"] for x in d["flows"]] == ["bg_not_yielding"] * 3


def test_quench_comes_before_background_and_a_yielding_background_is_not_blamed():
    assert diagnose.run_diag(diag_result(60.0, 12.0, suspended=1))["flows"][0]["cause"] == \
        "quenched"
    # background within the slack: the flows' own first second decides
    assert diagnose.run_diag(diag_result(30.0, 8.0))["flows"][0]["cause"] == "late_start"
    assert diagnose.run_diag(diag_result(30.0, 15.0))["flows"][0]["cause"] == "other"


def test_diagnose_dir_writes_a_plot_and_the_table(tmp_path):
    r = diag_result(60.0, 12.0)
    r["kernel_trace"] = [{"t_s": 1.0 + 0.2 * i, "id": fid, "urgency": u, "precedence": u,
                          "b": 2 / (3 * u + 1), "quench": "none"}
                         for i in range(5) for fid, u in (("moderate0.0", 1 + i), ("bg0", 1))]
    stats.write_run(str(tmp_path / stats.run_file("mixed", "datcp", 1)), r)
    txt = diagnose.write_dir(str(tmp_path))
    assert "| datcp | 1 | 3 | 0 | 0 | 0 | 3 | 0 | 0 |" in txt
    d = json.loads((tmp_path / "diagnosis" / "mixed__datcp__seed1.json").read_text())
    f0 = d["flows"][0]
    assert f0["urgency_max"] == 5 and f0["t_urgency_2_s"] == pytest.approx(0.2)
    assert f0["bg_b_mean"] == pytest.approx(0.5)
    assert (tmp_path / "diagnosis" / "mixed__datcp__seed1.png").stat().st_size > 10_000


def test_eq5_check_pairs_each_deadline_flow_sample_with_the_background_mean():
    r = diag_result(30.0, 20.0)
    r["cc"] = "datcp"
    tr = []
    for t, p, q in ((1.2, 4.0, "none"), (1.6, 4.0, "none"), (1.8, 9.0, "suspended")):
        tr.append({"t_s": t, "id": "bg0", "r_avg_bps": 10e6, "precedence": 1.0})
        tr.append({"t_s": t, "id": "moderate0.0", "r_avg_bps": 20e6 + 10e6 * (t > 1.5),
                   "precedence": p, "quench": q})
    r["kernel_trace"] = tr
    got = diagnose.share_by_precedence(r)
    # 1.2 s is within 0.5 s of the start (R_avg still from slow start); 1.8 s is quenched
    assert got[(3, 5)] == [3.0]
    assert sum(len(v) for v in got.values()) == 1
    # the table names the background's precedence the ratios are measured against
    assert "| datcp | 1.00 | - | - | 3.00 [3.00-3.00] (1) | - | - |" in diagnose.table([], [r])


def test_a_quenched_flow_records_what_the_batch_needed_when_it_was_picked():
    r = diag_result(60.0, 12.0, suspended=1)
    for i, f in enumerate(r["flows"]):
        f["addr"] = f"10.10.1.{i + 1}:4000"
    r["events"] = [{"event": "quench", "action": "suspend", "src": "10.10.1.2:4000",
                    "t_s": 1.55}]
    d = diagnose.run_diag(r)["flows"]
    assert d[0]["quench_t_s"] == [1.55]
    # 20 Mbit at 12 Mbit/s for 0.5 s leaves 14 Mbit for the remaining 0.5 s
    assert d[0]["need_mbps_at_quench"] == {f"moderate0.{i}": pytest.approx(28.0)
                                           for i in range(3)}
    assert d[1]["quench_t_s"] == [] and "need_mbps_at_quench" not in d[1]
    assert d[0]["batch_met"] == 0
