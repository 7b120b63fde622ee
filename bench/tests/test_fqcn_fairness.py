"""bench/run fqcn-fairness (FQCN section IV-A): four simultaneous or eight staggered CBR sources into one
drop-tail port, QCN against FQCN, short runs on the real testbed. Needs root and fqcn's tools."""
import os
import subprocess

import pytest

from conftest import BENCH, RUN, bench_json, needs_root

FQCN_BUILD = os.path.join(os.path.dirname(BENCH), "fqcn", "build")
needs_fqcn = pytest.mark.skipif(not os.access(os.path.join(FQCN_BUILD, "fqcn-cp"), os.X_OK),
                                reason="fqcn tools missing (make -C fqcn)")


@needs_root
@needs_fqcn
def test_four_sources_under_qcn_and_fqcn():
    r = bench_json("fqcn-fairness", "--short", timeout=180)
    assert [x["mode"] for x in r["runs"]] == ["qcn", "fqcn"]
    for x in r["runs"]:
        (ph,) = x["phases"]   # the phases are the one place of shares, Jain and queue
        assert "shares_mbps" not in x and "jain" not in x, sorted(x)
        # all four sources reached the receiver, the congestion point fed back, and every
        # source's reaction point heard it: the port's 100 Mbit/s is shared, not lost
        assert len(ph["shares_mbps"]) == 4, ph["shares_mbps"]
        assert x["cnms"] > 0 and all(c > 0 for c in x["cnms_per_source"]), x["cnms_per_source"]
        assert 70 <= ph["total_mbps"] <= 101, ph["total_mbps"]
        assert ph["q_median_late_bytes"] is not None
        assert ph["q_median_late_bytes"] < r["buffer_bytes"]


def test_staggered_schedule_and_phases_follow_fig4():
    from datcpbench import fqcn_fairness as f
    # §IV-A: eight sources 0.1 s apart, four end at 0.8 s, four at 1 s (here in tenths of D)
    assert f.schedule(8, True, 10.0) == [(0.0, 8.0), (1.0, 8.0), (2.0, 8.0), (3.0, 8.0),
                                         (4.0, 10.0), (5.0, 10.0), (6.0, 10.0), (7.0, 10.0)]
    assert f.schedule(4, False, 4.0) == [(0.0, 4.0)] * 4
    assert f.phases(8, True, 10.0) == [("all 8", 7.0, 8.0, list(range(8))),
                                       ("last 4", 9.0, 10.0, [4, 5, 6, 7])]
    assert f.phases(4, False, 4.0) == [("all", 2.0, 4.0, [0, 1, 2, 3])]


def test_staggered_is_refused_for_other_scenarios():
    r = subprocess.run([RUN, "eq5", "--staggered"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--staggered: only for fqcn-fairness" in r.stderr


@needs_root
@needs_fqcn
def test_eight_staggered_sources_under_qcn_and_fqcn():
    r = bench_json("fqcn-fairness", "--short", "--staggered", timeout=240)
    assert r["sources"] == 8 and r["staggered"] is True
    for x in r["runs"]:
        all8, last4 = x["phases"]
        # every source reached the receiver while all eight sent, the four late ones alone
        # after the others ended, and the port stayed shared, not lost
        assert len(all8["shares_mbps"]) == 8, all8["shares_mbps"]
        assert len(last4["shares_mbps"]) == 4, last4["shares_mbps"]
        assert x["cnms"] > 0 and all(c > 0 for c in x["cnms_per_source"]), x["cnms_per_source"]
        for ph in (all8, last4):
            assert 70 <= ph["total_mbps"] <= 101, (ph["phase"], ph["total_mbps"])


def test_a_tools_long_output_does_not_stall_it():
    import sys
    from datcpbench import fqcn_fairness as f
    # 220 KB of sample lines: on a pipe nobody reads until the end the tool would block at
    # 64 KB (the staggered runs' congestion point did, at its 1540th sample)
    p = f.spawn([sys.executable, "-c", "import sys; sys.stdout.write('sample q=1\\n' * 20000)"])
    p.wait(timeout=20)
    out, err = f.collect(p, 5)
    assert out.count("sample q=1\n") == 20000 and not err
