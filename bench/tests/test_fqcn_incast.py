"""bench/run fqcn-incast (FQCN section IV-B): synchronized reads over TCP from N servers, TCP
alone against QCN and FQCN, short runs on the real testbed. Needs root and fqcn's tools."""
import os
import subprocess

import pytest

from conftest import BENCH, RUN, bench_json, needs_root

FQCN_BUILD = os.path.join(os.path.dirname(BENCH), "fqcn", "build")
needs_fqcn = pytest.mark.skipif(not os.access(os.path.join(FQCN_BUILD, "fqcn-incast"), os.X_OK),
                                reason="fqcn tools missing (make -C fqcn)")


def test_scaling_from_the_papers_gigabit():
    from datcpbench import fqcn_incast as f
    # s = 100 / 1000: SRU 256 KB x s, 802.1Qau's BC_LIMIT and rates x s, sampling base x s
    assert f.sru_bytes(100) == 26214
    assert f.rp_args(100) == ["--rp", "--line-rate-mbit", "100", "--bc-limit-bytes", "15000",
                              "--r-ai-kbit", "500", "--r-hai-kbit", "5000",
                              "--min-rate-kbit", "500"]
    assert f.sample_base(100) == 15360
    assert f.sample_base(1000) == 153600 and f.sru_bytes(1000) == 256 * 1024


@needs_root
def test_more_servers_than_taps_is_refused():
    r = subprocess.run([RUN, "fqcn-incast", "--senders", "8,65"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and "at most 64 servers" in r.stderr


@needs_root
@needs_fqcn
def test_sixteen_servers_tcp_qcn_fqcn():
    r = bench_json("fqcn-incast", "--short", timeout=300)
    assert [(x["mode"], x["servers"]) for x in r["runs"]] == [("tcp", 16), ("qcn", 16),
                                                              ("fqcn", 16)]
    for x in r["runs"]:
        # every block's barrier passed: each server answered each request in full
        assert x["blocks"] == r["blocks"] and len(x["block_ms"]) == r["blocks"], x
        assert x["requests_per_server"] == [r["blocks"]] * 16, x["requests_per_server"]
        assert 0 < x["goodput_mbps"] <= 101, x["goodput_mbps"]
    tcp, qcn, fqcn = r["runs"]
    assert tcp["cnms"] == 0 and not any(tcp["cnms_per_server"])
    for x in (qcn, fqcn):
        # the congestion point fed back, its CNMs reached the servers' own flows and their
        # reaction points lowered CR below the line rate
        assert x["cnms"] > 0 and x["cnms_foreign"] == 0, x
        # (a CNM sent after a server closed is counted by the point only)
        assert 0 < sum(x["cnms_per_server"]) <= x["cnms"], (x["cnms"], x["cnms_per_server"])
        assert min(x["cr_min_mbps"]) < r["link_mbps"], x["cr_min_mbps"]
