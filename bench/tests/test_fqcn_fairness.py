"""bench/run fqcn-fairness (FQCN section IV-A): four CBR sources into one drop-tail port,
QCN against FQCN, short runs on the real testbed. Needs root and fqcn's tools."""
import os

import pytest

from conftest import BENCH, bench_json, needs_root

FQCN_BUILD = os.path.join(os.path.dirname(BENCH), "fqcn", "build")
needs_fqcn = pytest.mark.skipif(not os.access(os.path.join(FQCN_BUILD, "fqcn-cp"), os.X_OK),
                                reason="fqcn tools missing (make -C fqcn)")


@needs_root
@needs_fqcn
def test_four_sources_under_qcn_and_fqcn():
    r = bench_json("fqcn-fairness", "--short", timeout=180)
    assert [x["mode"] for x in r["runs"]] == ["qcn", "fqcn"]
    for x in r["runs"]:
        # all four sources reached the receiver, the congestion point fed back, and every
        # source's reaction point heard it: the port's 100 Mbit/s is shared, not lost
        assert len(x["shares_mbps"]) == 4, x["shares_mbps"]
        assert x["cnms"] > 0 and all(c > 0 for c in x["cnms_per_source"]), x
        assert 70 <= x["total_mbps"] <= 101, x["total_mbps"]
        assert x["q_median_late_bytes"] is not None and x["q_median_late_bytes"] < r["buffer_bytes"]
