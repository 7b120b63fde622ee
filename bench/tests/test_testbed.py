"""Testbed + generator on real sockets, no kmod needed (cubic/reno/bbr)."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import RUN, bench_json, needs_root, our_netns


@needs_root
def test_custom_spec_contract(tmp_path):
    spec = {"scenario": "two-flows", "link_mbps": 100,
            "switch": {"buffer_bytes": 200000, "mark": "red", "red_min": 80000,
                       "red_max": 120000, "red_maxp": 1.0},
            "duration_s": 6,
            "flows": [{"id": "a", "size_bytes": 2_000_000, "deadline_s": 2.0},
                      {"id": "bg", "size_bytes": None}]}
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(spec))
    r = bench_json("custom", "--spec", str(p), "--cc", "cubic")
    for k in ("scenario", "cc", "link_mbps", "flows", "deadline_met_ratio", "switch"):
        assert k in r
    assert r["scenario"] == "two-flows" and r["cc"] == "cubic" and r["link_mbps"] == 100
    a, bg = r["flows"]
    for f in (a, bg):
        for k in ("id", "size_bytes", "deadline_s", "importance", "start_s", "fct_s", "met",
                  "mean_mbps"):
            assert k in f
    # 2 MB at a fair half of 100 Mbit/s takes ~0.35 s; the link must be the limit
    assert a["fct_s"] is not None and 0.15 < a["fct_s"] < 2.0
    assert a["met"] is True and r["deadline_met_ratio"] == 1.0
    assert bg["size_bytes"] is None and bg["fct_s"] is None and bg["met"] is None
    # the endless flow runs on alone after `a` and takes most of the link
    assert 60 < bg["mean_mbps"] < 100
    for k in ("marks", "drops", "peak_queue_bytes"):
        assert k in r["switch"]


@needs_root
def test_link_rate_is_enforced():
    # two backlogged reno flows through a 100 Mbit/s port: their goodput is the port's rate
    # less headers (95.6 Mbit/s), never above it. With the generator at nice -15 and the
    # softirq boost it ran at 92.4-94.4 Mbit/s, also beside two busy loops at nice 0 or -15
    r = bench_json("eq5", "--cc", "reno-ecn", "--short")
    tot = r["summary"]["p1_mbps"] + r["summary"]["p2_mbps"]
    assert 85 < tot < 100, tot


@needs_root
def test_sigint_cleans_up():
    p = subprocess.Popen([RUN, "fig8-4s", "--cc", "cubic"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    prefix = f"db{p.pid}-"
    deadline = time.time() + 20
    while time.time() < deadline and not any(n.startswith(prefix) for n in our_netns()):
        time.sleep(0.1)
    assert any(n.startswith(prefix) for n in our_netns()), "testbed never came up"
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=30)
    assert not [n for n in our_netns() if n.startswith(prefix)]


def _autogroup_nice():
    with open("/proc/self/autogroup") as fh:
        return int(fh.read().split()[-1])


def _in_own_autogroup():
    # a process whose session was never set up with setsid() stays in the boot autogroup,
    # which is the root task group: the kernel prints nothing for it (CI's runner is one)
    try:
        with open("/proc/self/autogroup") as fh:
            return bool(fh.read().strip())
    except OSError:
        return False


def test_boost_is_a_no_op_in_the_boot_autogroup(tmp_path, monkeypatch):
    from datcpbench import runner
    from datcpbench.netns import Cleanup
    empty = tmp_path / "autogroup"
    empty.write_text("")
    monkeypatch.setattr(runner, "AUTOGROUP", str(empty))
    cleanup = Cleanup()
    runner.boost_autogroup(cleanup)
    assert cleanup._stack == []
    assert empty.read_text() == ""


@needs_root
@pytest.mark.skipif(not _in_own_autogroup(), reason="no autogroup of this session to raise")
def test_boost_raises_the_session_autogroup_and_restores_it():
    from datcpbench import runner
    from datcpbench.netns import Cleanup
    before = _autogroup_nice()
    cleanup = Cleanup()
    try:
        runner.boost_autogroup(cleanup)
        assert _autogroup_nice() == min(before, -15)
    finally:
        cleanup.run()
    assert _autogroup_nice() == before
