"""The named paper scenarios, scaled to 100 Mbit/s (sizes / 10, times unchanged),
as scenario specs (the same format ``bench/run custom --spec`` reads)."""
from __future__ import annotations

import random

MB = 1_000_000
SWITCH_PROFILES = {
    # DATCP Table 1 kept in bytes: 200 KB buffer, RED on the instantaneous queue
    # 80 KB / 120 KB, max_p 1.0. step_k: the step-marking threshold of the DCTCP
    # family, K = 20 packets (30 KB), DCTCP's K at 1 Gbit/s, which D2TCP and PD2TCP
    # (pd2tcp.txt 2.3.5: parameters "as in [5]", DCTCP) also use; kept in bytes for
    # the reason the RED thresholds are (the path here has no propagation delay, the
    # queue is the whole window; see results/2026-11-22-buffer-study)
    "paper": {"buffer_bytes": 200_000, "mark": "red", "red_min": 80_000,
              "red_max": 120_000, "red_maxp": 1.0, "step_k": 30_000},
    # Table 1 and K scaled by 1/10 with the link (K = 2 packets)
    "scaled": {"buffer_bytes": 20_000, "mark": "red", "red_min": 8_000,
               "red_max": 12_000, "red_maxp": 1.0, "step_k": 3_000},
}
# CCs whose papers mark with one step threshold K (DCTCP, D2TCP, PD2TCP 2.3.1: RED
# with low = high threshold on the instantaneous queue); the others get the profile's
# RED (DATCP Table 1)
STEP_MARKING_CCS = ("dctcp", "d2tcp", "pd2tcp")


def switch_for(sw, cc):
    """The switch port a CC runs on: a named profile's port with step marking at the
    profile's K for the DCTCP family, as their papers run them. Custom switch configs
    (no "profile") are used exactly as given."""
    sw = dict(sw)
    k = sw.pop("step_k", None)
    if cc in STEP_MARKING_CCS and sw.get("profile") in SWITCH_PROFILES and k:
        sw.update(mark="step", k=k)
    return sw
DEFAULT_PROFILE = "paper"
NAMES = ["fig8-4s", "fig8-3s", "fig9", "fig10", "fig11", "eq5", "incast", "mixed"]
INCAST_COUNTS = [1, 2, 4, 8, 16, 24, 32, 40]
MIXED_CLASSES = {"lax": (5.5, 8.0), "moderate": (4.0, 5.5), "tight": (3.0, 4.0)}


def _base(name, link_mbps, profile):
    return {"scenario": name, "link_mbps": link_mbps,
            "switch": dict(SWITCH_PROFILES[profile], profile=profile), "flows": []}


def _fig8(name, deadline, link, profile, short=False):
    s = _base(name, link, profile)
    size = 10 * MB
    if short:  # CI version: half the bytes and half the deadline
        size, deadline = size // 2, deadline / 2
    for i in range(3):
        s["flows"].append({"id": f"d{i}", "src": i, "size_bytes": size, "deadline_s": deadline,
                           "importance": 1.0, "phi": 0.0, "start_s": 0.0})
    for i in range(3):
        s["flows"].append({"id": f"bg{i}", "src": 3 + i, "size_bytes": None, "deadline_s": None,
                           "importance": 1.0, "phi": 0.0, "start_s": 0.0})
    s.update(duration_s=2.5 * deadline + 2, min_duration_s=deadline + 1, tail_s=0.5)
    return s


def build(name, link_mbps=100, profile=DEFAULT_PROFILE, short=False, seed=1):
    scale = link_mbps / 100.0   # sizes scale with the link so times stay the paper's
    if name == "fig8-4s":
        s = _fig8(name, 4.0, link_mbps, profile, short)
    elif name == "fig8-3s":
        s = _fig8(name, 3.0, link_mbps, profile, short)
    elif name == "fig9":
        s = _base(name, link_mbps, profile)
        for i in range(3):
            s["flows"].append({"id": f"bg{i}", "src": i, "size_bytes": None, "deadline_s": None,
                               "importance": 1.0, "phi": 0.0, "start_s": 0.0})
        for i in range(3):
            s["flows"].append({"id": f"d{i}", "src": 3 + i, "size_bytes": 10 * MB,
                               "deadline_s": 4.0, "importance": 1.0, "phi": 0.0,
                               "start_s": 1.0 + i})
        s.update(duration_s=14, min_duration_s=8, tail_s=0.5)
    elif name == "fig10":
        # fig8-4s with phi = 0.5, run three times: background flow bg0 has importance
        # 1, 2, 3 (the others 1). One result; flow ids are prefixed "I1/", "I2/", "I3/".
        s = _base(name, link_mbps, profile)
        s["variants"] = []
        for imp in (1, 2, 3):
            v = _fig8(name, 4.0, link_mbps, profile, short)
            for f in v["flows"]:
                f["phi"] = 0.5
                if f["id"] == "bg0":
                    f["importance"] = float(imp)
            v.update(min_duration_s=5 if short else 7, variant=f"I{imp}")
            s["variants"].append(v)
    elif name == "fig11":
        s = _base(name, link_mbps, profile)
        size, dl = 20 * MB, 6.0
        if short:
            size, dl = 10 * MB, 3.0
        for i in range(4):
            s["flows"].append({"id": f"f{i}", "src": i, "size_bytes": size, "deadline_s": dl,
                               "importance": 1.0, "phi": 0.0, "start_s": 0.0})
        s.update(duration_s=3 * dl, min_duration_s=0, tail_s=0.3)
    elif name == "eq5":
        s = _base(name, link_mbps, profile)
        # phi = 1: precedence = importance, fixed at 2 and 1
        s["flows"] = [
            {"id": "p2", "src": 0, "size_bytes": None, "deadline_s": None, "importance": 2.0,
             "phi": 1.0, "start_s": 0.0},
            {"id": "p1", "src": 1, "size_bytes": None, "deadline_s": None, "importance": 1.0,
             "phi": 1.0, "start_s": 0.0}]
        s.update(duration_s=6 if short else 12, steady_from_s=1.0)
    elif name == "incast":
        s = _base(name, link_mbps, profile)
        size = 256 * 1024
        t = 0.0
        counts = [1, 4, 16, 40] if short else INCAST_COUNTS
        for n in counts:
            for r in range(3):
                g = f"n={n}/r{r}"
                for i in range(n):
                    s["flows"].append({"id": f"{g}/s{i}", "src": i, "size_bytes": size,
                                       "deadline_s": None, "importance": 1.0, "phi": 0.0,
                                       "start_s": round(t, 3), "preconnect": True,
                                       "group": g, "senders": n})
                t += 2.0 * n * size * 8 / (link_mbps * 1e6) + 0.4
        s.update(duration_s=t + 5, tail_s=0.2)
    elif name == "mixed":
        s = _base(name, link_mbps, profile)
        rnd = random.Random(seed)
        for i in range(3):
            s["flows"].append({"id": f"bg{i}", "src": i, "size_bytes": None, "deadline_s": None,
                               "importance": 1.0, "phi": 0.0, "start_s": 0.0})
        t = 1.0
        batches = 2 if short else 3
        for cls, (klo, khi) in MIXED_CLASSES.items():
            for b in range(batches):
                for i in range(3):
                    size = int(rnd.uniform(1, 10) * MB * scale)
                    k = rnd.uniform(klo, khi)
                    dl = round(size * 8 / (link_mbps * 1e6) * k, 3)
                    s["flows"].append({"id": f"{cls}{b}.{i}", "src": 3 + i, "size_bytes": size,
                                       "deadline_s": dl, "importance": 1.0, "phi": 0.0,
                                       "start_s": t, "class": cls})
                t += 10.0
        s.update(duration_s=t + 5, min_duration_s=t, tail_s=0.5)
    else:
        raise KeyError(name)
    if scale != 1.0 and name not in ("mixed",):
        for f in s["flows"] + [f for v in s.get("variants", []) for f in v["flows"]]:
            if f.get("size_bytes"):
                f["size_bytes"] = int(f["size_bytes"] * scale)
    return s
