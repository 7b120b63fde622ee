"""bench/run dcudp-reclaim (DCUDP section V-B): one round of DCUDP and DCTCP (K = 10) on the
real testbed. Needs root, kmod's datcpctl and dcudp's tools."""
from conftest import bench_json, needs_kmod, needs_root
from test_dcudp_incast import needs_dcudp


def _mean(series, a, b):
    w = series[int(a / 0.01):int(b / 0.01)]
    return sum(w) / len(w)


@needs_root
@needs_kmod
@needs_dcudp
def test_cbr_and_ftp_share_then_ftp_stops():
    r = bench_json("dcudp-reclaim", "--protocols", "dcudp,dctcp-k10")
    by = {x["protocol"]: x for x in r["runs"]}
    assert set(by) == {"dcudp", "dctcp-k10"}
    for p, x in by.items():
        cbr, ftp = x["series_mbps"]["cbr"], x["series_mbps"]["ftp"]
        assert len(cbr) == len(ftp) == 130, p
        # both flows move data while they share the port, within what it carries (the
        # receivers' reads can lag a little: Reno's two flows read 100-103 Mbit/s)
        assert _mean(cbr, 0.1, 0.5) > 1 and _mean(ftp, 0.1, 0.5) > 1, (p, cbr[:50], ftp[:50])
        assert _mean(cbr, 0.1, 0.5) + _mean(ftp, 0.1, 0.5) <= 110, p
        # the FTP's application stopped at 0.5 s, the CBR's at 1 s: their wire stops
        assert _mean(ftp, 0.8, 1.3) < 1, (p, ftp[50:])
        assert _mean(cbr, 1.15, 1.3) < 1, (p, cbr[100:])
        # the port's queue, 1 ms samples over the 1.3 s run
        assert 1200 <= len(x["queue"]) <= 1320 and max(q for _, q in x["queue"]) > 0, p
    # 260 Mbit/s of UDP Mode into 100: the port marks and both DCUDP senders enter
    # Congestion Mode; DCTCP's port marks at K
    assert by["dcudp"]["marks"] > 0 and min(by["dcudp"]["congestion_entries"]) >= 1
    assert by["dctcp-k10"]["marks"] > 0 and "dctcp_g=0.3" in by["dctcp-k10"]["kmod_params"]
