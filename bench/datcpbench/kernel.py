"""The one place where the bench talks to kmod/ (datcpctl). Everything else calls
these functions. When kmod/build/datcpctl is missing, switch ports fall back to a
plain HTB + bfifo port made with tc (no AQM marking) and datcp CCs are unavailable."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time

from .netns import NETNS_DIR, log, sh

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATCPCTL = os.environ.get("DATCPCTL", os.path.join(REPO, "kmod", "build", "datcpctl"))
PIN_DIR = "/sys/fs/bpf/datcp"
# extra `datcpctl load` arguments for the algorithm parameters of a run
# (--profile / --param, from bench/run --kmod-profile / --kmod-param)
LOAD_ARGS: list = []


def load_args(profile, params):
    """`datcpctl load` arguments for bench/run --kmod-profile PROFILE (None: not given) and
    --kmod-param NAME=VALUE...: without a profile the parameters apply on datcpctl's
    default profile."""
    return (["--profile", profile] if profile else []) + [x for p in params for x in ("--param", p)]

# bench --cc value -> (kernel CC name, datcp mode or None, quench)
CCS = {
    "datcp": ("datcp", "datcp", "suspend"),
    "datcp-noquench": ("datcp", "datcp", "off"),
    "dctcp": ("datcp", "dctcp", "off"),
    "d2tcp": ("datcp", "d2tcp", "off"),
    "pd2tcp": ("datcp", "pd2tcp", "off"),
    "pfdct": ("pfdct", None, None),
    "reno-ecn": ("reno", None, None),
    "cubic": ("cubic", None, None),
    "bbr": ("bbr", None, None),
}


def available():
    return os.path.isfile(DATCPCTL) and os.access(DATCPCTL, os.X_OK)


# CCs that are their own struct_ops (datcpctl pfdct load), not a datcp mode
PFDCT_CCS = ("pfdct",)


def needs_kmod(cc):
    return CCS[cc][1] is not None or cc in PFDCT_CCS


def _ctl(*args, check=True, timeout=30):
    return sh([DATCPCTL, *map(str, args)], check=check, timeout=timeout)


def _ctl_in(ns, *args, check=True):
    """datcpctl in network namespace ns: flow entries are per namespace, and datcpctl acts
    on its own namespace's (nsenter, not `ip netns exec`, which hides bpffs)."""
    return sh(["nsenter", f"--net={os.path.join(NETNS_DIR, ns)}", DATCPCTL, *map(str, args)],
              check=check)


def ensure_bpffs():
    if not os.path.ismount("/sys/fs/bpf"):
        sh(["mount", "-t", "bpf", "bpf", "/sys/fs/bpf"])


class Loaded:
    """Context manager: ``datcpctl load`` if not yet pinned; unload on exit only if
    this process did the load (so a concurrently running user keeps theirs)."""

    def __init__(self):
        self.we_loaded = False
        self.params = None

    def __enter__(self):
        ensure_bpffs()
        # with LOAD_ARGS, an unused datcp with other parameters is replaced
        self.we_loaded = "reused" not in _ctl("load", *LOAD_ARGS)
        self.params = (status() or {}).get("params")
        return self

    def __exit__(self, *exc):
        if self.we_loaded:
            st = status()
            if st and (st.get("flows") or st.get("switch_ports")):
                # someone else (the agent, another test) is using it now: leave it
                log(f"datcp left loaded: in use by others ({st.get('flows')} flows, "
                    f"{st.get('switch_ports')} switch ports)")
            else:
                _ctl("unload", check=False)
        return False


class PfdctLoaded:
    """Context manager: ``datcpctl pfdct load`` (PFDCT's congestion control and its
    senders' egress program) with 3.2.3's long-flow rule; unload on exit only if this
    process loaded it."""

    def __init__(self, long_bytes=None, long_cwnd=None):
        self.args = []
        if long_bytes:
            self.args += ["--long-bytes", int(long_bytes)]
        if long_cwnd:
            self.args += ["--long-cwnd", int(long_cwnd)]
        self.we_loaded = False

    def __enter__(self):
        ensure_bpffs()
        self.we_loaded = "reused" not in _ctl("pfdct", "load", *self.args)
        return self

    def __exit__(self, *exc):
        if self.we_loaded:
            _ctl("pfdct", "unload", check=False)
        return False


def pfdct_attach(ns, dev):
    """PFDCT's egress program on a sender's interface (retransmissions EF, short flows
    Not-ECT); it goes with the namespace."""
    _ctl("pfdct", "attach", "--netns", ns, "--dev", dev)


def pfdct_stats():
    """Per-flow class, window, alpha and the egress counters (datcpctl pfdct stats)."""
    try:
        return json.loads(_ctl("pfdct", "stats", "--json", check=False))
    except ValueError:
        return None


def line_rate_set(ns, mbit):
    """NIC rate of a sender namespace for the kernel (0 removes it)."""
    if mbit:
        _ctl("line-rate", "set", "--netns", ns, "--rate-mbit", int(mbit))
    else:
        _ctl("line-rate", "del", "--netns", ns, check=False)


def status():
    try:
        return json.loads(_ctl("status", "--json", check=False))
    except ValueError:
        return None


def flow_set(ns, src, dst, size=None, deadline_ms=None, importance=1.0, phi=0.0,
             mode="datcp", quench="off"):
    """Register the flow of a socket in namespace ns."""
    args = ["flow", "set", "--src", src, "--dst", dst, "--importance", importance,
            "--phi", phi, "--mode", mode, "--quench", quench]
    if size is not None:
        args += ["--size", int(size)]
    if deadline_ms is not None:
        args += ["--deadline-ms", int(round(deadline_ms))]
    _ctl_in(ns, *args)


def flow_resume(ns, src, dst):
    """Clear a quench order (the application resumed the flow)."""
    _ctl_in(ns, "flow", "resume", "--src", src, "--dst", dst, check=False)


def flow_get(ns, src, dst):
    out = _ctl_in(ns, "flow", "get", "--src", src, "--dst", dst, "--json", check=False)
    try:
        return json.loads(out)
    except ValueError:
        return None


def flow_delete(ns, src, dst):
    _ctl_in(ns, "flow", "delete", "--src", src, "--dst", dst, check=False)


def flow_list():
    """Every namespace's flows (netns_cookie tells them apart)."""
    out = _ctl("flow", "list", "--json", check=False)
    try:
        return json.loads(out)
    except ValueError:
        return None


# ---------------------------------------------------------------- switch ports

def _tc_port(ns, dev, rate_mbit, buf):
    sh(["tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb",
        "default", "10"])
    sh(["tc", "-n", ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:10",
        "htb", "rate", f"{rate_mbit}mbit", "ceil", f"{rate_mbit}mbit", "quantum", "60000"])
    sh(["tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:",
        "bfifo", "limit", str(int(buf))])


def switch_configure(ns, dev, rate_mbit, sw):
    """Configure an emulated switch egress port. Returns the implementation used."""
    buf = int(sw.get("buffer_bytes", 200000))
    mark = sw.get("mark", "red")
    if available() and not sw.get("plain_tc"):
        args = ["switch", "configure", "--netns", ns, "--dev", dev, "--rate-mbit",
                rate_mbit, "--buffer-bytes", buf, "--mark", mark]
        if mark == "red":
            args += ["--red-min", int(sw.get("red_min", 80000)), "--red-max",
                     int(sw.get("red_max", 120000)), "--red-maxp", sw.get("red_maxp", 1.0)]
        elif mark == "step":
            args += ["--k-bytes", int(sw.get("k", 30000))]
        elif mark == "pfdct":
            # K_i: given, or from the port's rate and RTT (PFDCT Eq. 15)
            if "k" in sw:
                args += ["--k-bytes", int(sw["k"])]
            elif "rtt_us" in sw:
                args += ["--rtt-us", int(sw["rtt_us"])]
            else:
                raise ValueError("switch.mark pfdct needs switch.k (K_i, bytes) or "
                                 "switch.rtt_us (K_i from the port's rate and RTT, Eq. 15)")
        if sw.get("preset"):
            args += ["--preset", sw["preset"]]
        if sw.get("dscp_map"):
            args += ["--dscp-map", sw["dscp_map"]]
        try:
            _ctl(*args)
        except RuntimeError as e:
            if "not loaded" not in str(e):
                raise
            log("datcp was unloaded by someone else; loading it again")
            _ctl("load", *LOAD_ARGS)
            _ctl(*args)
        return "datcpctl"
    _tc_port(ns, dev, rate_mbit, buf)
    return "tc"


def switch_reset(ns, dev, impl):
    if impl == "datcpctl":
        _ctl("switch", "reset", "--netns", ns, "--dev", dev, check=False)
    else:
        sh(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], check=False)


def switch_counters(ns, dev, impl):
    if impl == "datcpctl":
        out = _ctl("switch", "counters", "--netns", ns, "--dev", dev, "--json", check=False)
        try:
            return json.loads(out)
        except ValueError:
            log(f"switch counters: unparsable: {out!r}")
            return {}
    out = sh(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev], check=False)
    try:
        qd = json.loads(out)
    except ValueError:
        return {}
    leaf = next((q for q in qd if q.get("kind") == "bfifo"), {})
    return {"bytes": leaf.get("bytes"), "packets": leaf.get("packets"), "marks": 0,
            "drops": leaf.get("drops"), "peak_queue_bytes": None}


class QueueSampler:
    """``datcpctl switch queue``: the port's queue every interval_us from now until
    ``until`` (time.monotonic(), CLOCK_MONOTONIC like datcpctl's t_ns)."""

    def __init__(self, ns, dev, until, interval_us=1000):
        ms = max(1, int((until - time.monotonic()) * 1000))
        self.until = until
        self.proc = subprocess.Popen([DATCPCTL, "switch", "queue", "--netns", ns, "--dev", dev,
                                      "--duration-ms", str(ms), "--interval-us", str(interval_us)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def series(self, t0):
        """[[t - t0 in s, queue bytes], ...] from t0 on, once the sampling ended."""
        try:
            out, err = self.proc.communicate(timeout=max(0.0, self.until - time.monotonic()) + 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        if self.proc.returncode:
            log(f"switch queue: exit {self.proc.returncode}: {err.strip()}")
        pts = []
        for line in out.splitlines()[1:]:
            t, _, q = line.partition(",")
            if q and int(t) / 1e9 >= t0:
                pts.append([round(int(t) / 1e9 - t0, 4), int(q)])
        return pts


# ---------------------------------------------------------------- events

class Events:
    """Runs ``datcpctl events --json``; calls ``cb(obj)`` for each event line."""

    def __init__(self, cb):
        self.cb = cb
        self.proc = None
        self.t = None

    def start(self):
        self.proc = subprocess.Popen([DATCPCTL, "events", "--json"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()
        return self

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            try:
                self.cb(obj)
            except Exception as e:
                log(f"event handler: {e}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
