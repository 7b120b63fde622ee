"""bench/run pfdct-incast and pfdct-threshold (PFDCT §5.2 and §4): CI-sized runs on the real
testbed with loose bounds, and the threshold workload's arrivals without root."""
from conftest import bench_json, needs_kmod, needs_root
from datcpbench import pfdct


def test_threshold_sessions_offer_the_papers_sizes_at_the_set_load():
    s = pfdct.threshold_spec(pfdct.PFDCT_PORT, 400, seed=3)
    sizes = [f["size_bytes"] for f in s["flows"]]
    assert sizes.count(100_000) == sizes.count(400_000) == 200
    span = s["flows"][-1]["start_s"]
    load = sum(sizes) * 8 / span / 100e6
    assert 0.7 < load < 0.9, load   # Poisson arrivals at 80% of the port, 400 draws
    assert {f["src"] for f in s["flows"]} == set(range(pfdct.THRESHOLD_SENDERS))
    assert s["rto_min_ms"] == 2 and s["pfdct_long_bytes"] == 100_000 and s["delay_probe_s"]


@needs_root
@needs_kmod
def test_incast_of_ten_senders_pfdct_and_dctcp():
    r = bench_json("pfdct-incast", "--senders", "10", timeout=300)
    by = {x["mode"]: x for x in r["runs"]}
    assert set(by) == {"pfdct", "dctcp"}
    for x in by.values():
        assert x["finished"] == 10, x
        assert 20 <= x["throughput_mbps"] <= 101, x
    p = by["pfdct"]["pfdct"]
    # the egress program saw every sender's segments; 150 KB flows among ten sharing a
    # 100-packet buffer never reach a window of 20: all short, sent Not-ECT, never marked
    assert p["tx"]["short"]["packets"] > 0
    assert p["tx"]["short"]["ect_cleared"] == p["tx"]["short"]["packets"]
    assert p["long_flows"] + p["short_flows"] >= 10
    assert by["dctcp"]["marks"] > 0


@needs_root
@needs_kmod
def test_threshold_short_pfdct_against_static_threshold():
    r = bench_json("pfdct-threshold", "--short", timeout=300)
    by = {x["mode"]: x for x in r["runs"]}
    assert set(by) == {"pfdct", "pfdct-st"}
    for x in by.values():
        assert x["finished"] == pfdct.THRESHOLD_FLOWS_SHORT, x
        assert x["probe_sent"] > 50 and x["delay_mean_ms"] is not None, x
        # 400 KB sessions pass 100 KB with a window of 20: some flows turn long and are
        # marked (dynamic K_t or K = 20 packets)
        assert x["pfdct"]["long_flows"] >= 1, x
        assert x["marks"] > 0, x
    # the dynamic port's K_t is read back; the static one has none
    assert by["pfdct"]["k_t_end_bytes"] is not None and by["pfdct-st"]["k_t_end_bytes"] is None
