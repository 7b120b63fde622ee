"""Flow generator: real TCP connections from sender namespaces to receiver namespaces,
all driven from this one process (sockets are created after setns() into the host's
namespace and keep it). Records per-flow completion time, bytes, throughput in 100 ms
bins (measured at the receiver) and deadline met / missed; executes DATCP quench
orders (suspend / kill) coming from ``datcpctl events``."""
from __future__ import annotations

import selectors
import socket
import threading
import time

from . import kernel
from .netns import in_netns, log

TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_NOTSENT_LOWAT = getattr(socket, "TCP_NOTSENT_LOWAT", 25)
PORT = 9631   # not a port the sockops program may put on datcp
PROBE_PORT = 9632
BIN_S = 0.1      # default throughput bin; a spec's "bin_s" overrides it
SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
CHUNK = 64 * 1024
_ZEROS = memoryview(bytes(CHUNK))


class ConnStats:
    __slots__ = ("bins", "total", "first_t", "last_t", "eof_t")

    def __init__(self):
        self.bins = []
        self.total = 0
        self.first_t = None
        self.last_t = None
        self.eof_t = None


class Receiver(threading.Thread):
    """One thread, one selector over every receiver host's listening socket and all
    accepted connections. Counts bytes per peer (sender ip, port) in bins of bin_s (100 ms
    unless the spec sets bin_s)."""

    def __init__(self, testbed, cc_name, t0_ref, bin_s=BIN_S):
        super().__init__(daemon=True, name="receiver")
        self.bin_s = bin_s
        self.sel = selectors.DefaultSelector()
        self.stats = {}          # (ip, port) -> ConnStats
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.t0_ref = t0_ref     # list holding t0 (monotonic), set later
        self.listeners = []
        self.buf = bytearray(1 << 20)
        for j, ns in enumerate(testbed.receivers):
            with in_netns(ns):
                ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if cc_name in ("datcp", "pfdct"):   # their receivers echo CE precisely
                ls.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc_name.encode())
            ls.bind((testbed.receiver_ip(j), PORT))
            ls.listen(1024)
            ls.setblocking(False)
            self.sel.register(ls, selectors.EVENT_READ, None)
            self.listeners.append(ls)

    def run(self):
        buf = self.buf
        mv = memoryview(buf)
        while not self.stop_ev.is_set():
            for key, _ in self.sel.select(timeout=0.05):
                sock = key.fileobj
                if key.data is None:
                    try:
                        c, peer = sock.accept()
                    except BlockingIOError:
                        continue
                    c.setblocking(False)
                    st = ConnStats()
                    with self.lock:
                        self.stats[peer] = st
                    self.sel.register(c, selectors.EVENT_READ, st)
                    continue
                st = key.data
                now = time.monotonic()
                total = 0
                eof = False
                while True:
                    try:
                        n = sock.recv_into(mv)
                    except BlockingIOError:
                        break
                    except OSError:
                        eof = True
                        break
                    if n == 0:
                        eof = True
                        break
                    total += n
                    if n < len(buf):
                        break
                if total:
                    t = now - self.t0_ref[0]
                    b = max(0, int(t / self.bin_s))
                    bins = st.bins
                    if len(bins) <= b:
                        bins.extend([0] * (b + 1 - len(bins)))
                    bins[b] += total
                    st.total += total
                    if st.first_t is None:
                        st.first_t = now
                    st.last_t = now
                if eof:
                    st.eof_t = now
                    self.sel.unregister(sock)
                    sock.close()
        for key in list(self.sel.get_map().values()):
            try:
                key.fileobj.close()
            except OSError:
                pass
        self.sel.close()


class DelayProbe:
    """End-to-end delay through the receiver's port: a 64-byte UDP datagram from the first
    sender to an echo on the first receiver every interval_s for the whole run (DSCP 0,
    Not-ECT: the port's default band), its round trip timed on CLOCK_MONOTONIC."""

    def __init__(self, testbed, interval_s):
        self.interval = interval_s
        with in_netns(testbed.receivers[0]):
            self.echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.echo.bind((testbed.receiver_ip(0), PROBE_PORT))
        with in_netns(testbed.senders[0]):
            self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.tx.connect((testbed.receiver_ip(0), PROBE_PORT))
        self.tx.settimeout(interval_s)
        self.echo.settimeout(0.1)
        self.stop_ev = threading.Event()
        self.sent = 0
        self.rtts = []
        self.threads = [threading.Thread(target=f, daemon=True, name=n)
                        for f, n in ((self._echo, "probe-echo"), (self._send, "probe-send"))]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def _echo(self):
        while not self.stop_ev.is_set():
            try:
                data, peer = self.echo.recvfrom(256)
            except socket.timeout:
                continue
            self.echo.sendto(data, peer)

    def _send(self):
        while not self.stop_ev.is_set():
            due = time.monotonic() + self.interval
            self.tx.send(time.monotonic_ns().to_bytes(8, "big") + bytes(56))
            self.sent += 1
            while (left := due - time.monotonic()) > 0:
                self.tx.settimeout(left)
                try:
                    data = self.tx.recv(256)
                except (socket.timeout, ConnectionRefusedError):
                    break
                self.rtts.append((time.monotonic_ns() - int.from_bytes(data[:8], "big")) / 1e6)

    def stop(self):
        """Count, lost, mean and 99th percentile round trip in ms."""
        self.stop_ev.set()
        for t in self.threads:
            t.join(timeout=2)
        self.tx.close()
        self.echo.close()
        rtts = sorted(self.rtts)
        return {"sent": self.sent, "lost": self.sent - len(rtts),
                "mean_ms": round(sum(rtts) / len(rtts), 3) if rtts else None,
                "p99_ms": round(rtts[min(len(rtts) - 1, int(0.99 * len(rtts)))], 3) if rtts else None}


class Flow:
    """One TCP flow. Sized flows write size_bytes then shut down; endless flows
    write until the scenario ends."""

    def __init__(self, spec, testbed, cc, gen):
        self.spec = spec
        self.id = spec["id"]
        self.size = spec.get("size_bytes")
        self.deadline = spec.get("deadline_s")
        self.start_s = float(spec.get("start_s", 0.0))
        # the application stops writing at stop_s (then shuts down: DCUDP V-B's FTP flow)
        self.stop_s = spec.get("stop_s")
        # a sender that never exceeds this rate (SO_MAX_PACING_RATE: a CBR source)
        self.max_pacing_mbps = spec.get("max_pacing_mbps")
        self.importance = float(spec.get("importance", 1.0))
        self.phi = float(spec.get("phi", 0.0))
        self.src_i = int(spec.get("src", 0))
        self.dst_i = int(spec.get("dst", 0))
        self.ns = testbed.senders[self.src_i]
        self.src_ip = testbed.sender_ip(self.src_i)
        self.dst = (testbed.receiver_ip(self.dst_i), PORT)
        self.cc = cc
        self.gen = gen
        self.sock = None
        self.laddr = None
        self.sent = 0
        self.t_start = None     # monotonic when first write was allowed
        self.t_kill = None
        self.killed = False
        self.error = None
        self.suspended = threading.Event()   # set = suspended
        self.resume_after = set()
        self.suspend_count = 0
        self.done_writing = False
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"flow-{self.id}")

    # ------------------------------------------------------------------ setup
    def connect(self, register=True):
        kcc, mode, quench = kernel.CCS[self.cc]
        with in_netns(self.ns):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, kcc.encode())
        s.setsockopt(socket.IPPROTO_TCP, TCP_NOTSENT_LOWAT, CHUNK)
        if self.max_pacing_mbps:
            s.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE,
                         int(self.max_pacing_mbps * 1e6 / 8))
        s.bind((self.src_ip, 0))
        s.connect(self.dst)
        self.sock = s
        self.laddr = s.getsockname()
        self.gen.register_addr(self)
        if register:
            self.register()

    def register(self):
        """Write the flow's meta into the kernel (after connect, before the first byte).
        The deadline is relative to the flow's planned start."""
        kcc, mode, quench = kernel.CCS[self.cc]
        if mode is None:
            return
        deadline_ms = None
        if self.deadline is not None:
            lead = 0.0
            if self.gen.t0 is not None:
                lead = max(0.0, self.gen.t0 + self.start_s - time.monotonic())
            deadline_ms = max(1.0, (self.deadline + lead) * 1000.0)
        kernel.flow_set(self.ns, self.src_key, self.dst_key, size=self.size,
                        deadline_ms=deadline_ms,
                        importance=self.importance, phi=self.phi, mode=mode,
                        quench=quench if self.deadline is not None else "off")
        self.gen.registered.append((self.ns, self.src_key, self.dst_key))

    @property
    def src_key(self):
        return f"{self.laddr[0]}:{self.laddr[1]}"

    @property
    def dst_key(self):
        return f"{self.dst[0]}:{self.dst[1]}"

    # ------------------------------------------------------------------ run
    def _run(self):
        g = self.gen
        try:
            delay = g.t0 + self.start_s - time.monotonic()
            if delay > 0 and g.stop_ev.wait(delay):
                return
            if self.sock is None:
                self.connect()
            self.t_start = time.monotonic()
            s = self.sock
            remaining = self.size
            stop_at = None if self.stop_s is None else g.t0 + float(self.stop_s)
            while not g.stop_ev.is_set() and not self.killed:
                if stop_at is not None and time.monotonic() >= stop_at:
                    break
                if self.suspended.is_set():
                    time.sleep(0.005)
                    continue
                n = CHUNK if remaining is None else min(CHUNK, remaining)
                if n <= 0:
                    break
                k = s.send(_ZEROS[:n])
                self.sent += k
                if remaining is not None:
                    remaining -= k
            self.done_writing = True
            if (self.size is not None or stop_at is not None) and not self.killed:
                s.shutdown(socket.SHUT_WR)
        except OSError as e:
            if not (self.killed or g.stop_ev.is_set()):
                self.error = str(e)
                log(f"flow {self.id}: {e}")

    def kill(self):
        self.killed = True
        self.t_kill = time.monotonic()
        self._abort()

    def _abort(self):
        s = self.sock
        if s is not None:
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass


class Generator:
    """Runs one scenario spec on a testbed with one congestion control."""

    def __init__(self, testbed, spec, cc, progress=None):
        self.tb = testbed
        self.spec = spec
        self.cc = cc
        self.kcc, self.mode, self.quench = kernel.CCS[cc]
        self.t0 = None
        self.t0_ref = [time.monotonic() + 3600]
        self.stop_ev = threading.Event()
        self.registered = []
        self.by_addr = {}
        self.lock = threading.Lock()
        self.events = []
        self.progress = progress
        self.flows = [Flow(f, testbed, cc, self) for f in spec["flows"]]

    def register_addr(self, flow):
        with self.lock:
            self.by_addr[(flow.src_key, flow.dst_key)] = flow

    # ---------------------------------------------------------------- quench
    def on_event(self, ev):
        now = time.monotonic()
        ev = dict(ev)
        ev["t_s"] = round(now - (self.t0 or now), 4)
        self.events.append(ev)
        if ev.get("event") not in ("quench", "resume"):
            return
        with self.lock:
            f = self.by_addr.get((ev.get("src"), ev.get("dst")))
        if ev.get("event") == "resume":   # the kernel lifted the quench (quiet or timeout)
            if f is not None and f.suspended.is_set():
                f.suspended.clear()
                log(f"  quench: kernel resumed {f.id} at {ev['t_s']:.2f}s ({ev.get('reason')})")
            return
        if f is None or self._finished(f, now):
            return
        if ev.get("action") == "kill":
            log(f"  quench: kill {f.id} at {ev['t_s']:.2f}s")
            f.kill()
        elif ev.get("action") == "suspend" and not f.suspended.is_set():
            f.resume_after = {o for o in self.flows if o is not f and o.deadline is not None
                              and o.t_start is not None and not self._finished(o, now)
                              and not o.suspended.is_set()}
            f.suspend_count += 1
            f.suspended.set()
            log(f"  quench: suspend {f.id} at {ev['t_s']:.2f}s until "
                f"{sorted(o.id for o in f.resume_after)} finish")

    def _finished(self, f, now=None):
        if f.killed:
            return True
        if f.size is None:
            return False
        st = self.rx.stats.get(f.laddr) if f.laddr else None
        return st is not None and st.total >= f.size

    # ---------------------------------------------------------------- run
    def run(self):
        spec = self.spec
        duration = float(spec.get("duration_s", 10.0))
        min_duration = float(spec.get("min_duration_s", 0.0))
        tail = float(spec.get("tail_s", 0.5))
        steady_from = float(spec.get("steady_from_s", 1.0))
        ev = probe = None
        self.bin_s = float(spec.get("bin_s", BIN_S))
        self.rx = Receiver(self.tb, self.kcc, self.t0_ref, self.bin_s)
        self.rx.start()
        queue = None
        try:
            if self.mode is not None:
                ev = kernel.Events(self.on_event).start()
            pre = [f for f in self.flows if f.spec.get("preconnect")]
            for f in pre:
                f.connect(register=False)
            self.t0 = time.monotonic() + 0.3 + 0.012 * len(pre)
            for f in pre:
                f.register()
            self.t0_ref[0] = self.t0
            if spec.get("queue_series_s") and self.tb.port_impl == "datcpctl":
                # the receiver port's queue from now to queue_series_s after t0 (Fig. 7)
                ns, dev = self.tb.switch_ports[0]
                queue = kernel.QueueSampler(ns, dev, self.t0 + float(spec["queue_series_s"]))
            for f in self.flows:
                f.thread.start()
            if spec.get("delay_probe_s"):
                probe = self._start_probe(float(spec["delay_probe_s"]))
            steady = None
            last_prog = 0
            trace_every = float(spec.get("kernel_trace_s", 0) or 0)
            last_trace = -1e9
            self.trace = []
            while True:
                now = time.monotonic()
                t = now - self.t0
                if steady is None and t >= steady_from:
                    steady = self.tb.counters()
                # resume suspended flows whose blockers have finished
                for f in self.flows:
                    if f.suspended.is_set() and all(self._finished(o, now) for o in f.resume_after):
                        kernel.flow_resume(f.ns, f.src_key, f.dst_key)
                        f.suspended.clear()
                        log(f"  quench: resume {f.id} at {t:.2f}s")
                sized = [f for f in self.flows if f.size is not None]
                all_done = all(self._finished(f, now) for f in sized) and \
                    all(f.t_start is not None or f.killed for f in sized)
                if sized and all_done and t >= max(min_duration,
                                                   max(self._end_t(f) for f in sized) + tail):
                    break
                if t >= duration:
                    break
                if trace_every and self.mode is not None and t - last_trace >= trace_every:
                    last_trace = t
                    self._sample_kernel(t)
                if self.progress and t - last_prog >= 1.0:
                    last_prog = t
                    self.progress(t, duration)
                time.sleep(0.02)
            t_end = time.monotonic()
            final = self.tb.counters()
            if self.tb.port_impl == "datcpctl" and final.get("packets") is None:
                raise RuntimeError("the emulated switch port vanished during the run (was "
                                   "`datcpctl unload` run by someone else?); results invalid")
        finally:
            self.stop_ev.set()
            for f in self.flows:
                if f.size is None or not f.done_writing:
                    f._abort()
            for f in self.flows:
                if f.thread.is_alive():
                    f.thread.join(timeout=2)
            time.sleep(0.05)
            self.rx.stop_ev.set()
            self.rx.join(timeout=3)
            for f in self.flows:
                f.close()
            if ev:
                ev.stop()
            for ns, src, dst in self.registered:
                kernel.flow_delete(ns, src, dst)
            delays = self._stop_probe(probe)
        res = self._result(t_end, final, steady)
        if delays is not None:
            res["delay_probe"] = delays
        if queue:
            res["queue"] = queue.series(self.t0)
        return res

    # ---------------------------------------------------------------- delay probe
    def _start_probe(self, interval_s):
        return DelayProbe(self.tb, interval_s).start()

    @staticmethod
    def _stop_probe(p):
        return p.stop() if p is not None else None

    def _sample_kernel(self, t):
        """Per-flow kernel statistics (urgency, precedence, b, cwnd, ...) for debugging."""
        lst = kernel.flow_list() or []
        ids = {(f.src_key, f.dst_key): f.id for f in self.flows if f.laddr}
        for e in lst:
            fid = ids.get((e.get("src"), e.get("dst")))
            st = e.get("stats") or {}
            if fid:
                self.trace.append({"t_s": round(t, 2), "id": fid, **{k: st.get(k) for k in (
                    "r_avg_bps", "urgency", "precedence", "b", "alpha", "cwnd", "ece_count",
                    "quench")}})

    def _end_t(self, f):
        """Scenario time at which a sized flow ended (finished or killed)."""
        if f.killed:
            return f.t_kill - self.t0
        st = self.rx.stats.get(f.laddr)
        return (st.last_t - self.t0) if st and st.last_t else 0.0

    def _result(self, t_end, final, steady):
        flows = []
        n_dl = n_met = 0
        bin_s = self.bin_s
        tot = [0.0] * (int((t_end - self.t0) / bin_s) + 1)
        for f in self.flows:
            st = self.rx.stats.get(f.laddr) if f.laddr else None
            total = st.total if st else 0
            start = f.t_start if f.t_start is not None else None
            fct = None
            if f.size is not None and not f.killed and st and st.total >= f.size and start:
                fct = st.last_t - start
            met = None
            if f.deadline is not None:
                met = fct is not None and fct <= f.deadline
                n_dl += 1
                n_met += met
            if start is None:
                mean = 0.0
            else:
                end = start + fct if fct is not None else (f.t_kill or t_end)
                mean = total * 8 / max(1e-6, end - start) / 1e6
            bins = st.bins if st else []
            nb = int((t_end - self.t0) / bin_s) + 1
            series = [(bins[i] if i < len(bins) else 0) * 8 / bin_s / 1e6 for i in range(nb)]
            # series starts at the flow's start bin (tput_from_s) and drops trailing zeros
            for i, x in enumerate(series):
                tot[i] += x
            b0 = min(int(f.start_s / bin_s), len(series))
            series = series[b0:]
            while series and series[-1] == 0:
                series.pop()
            d = {"id": f.id, "size_bytes": f.size, "deadline_s": f.deadline,
                 "importance": f.importance, "start_s": f.start_s,
                 "fct_s": round(fct, 4) if fct is not None else None, "met": met,
                 "mean_mbps": round(mean, 3), "bytes": total, "phi": f.phi,
                 "src": f.src_i, "dst": f.dst_i, "killed": f.killed,
                 "addr": f.src_key if f.laddr else None,   # the kernel events' "src"
                 "suspended": f.suspend_count,
                 "tput_from_s": round(b0 * bin_s, 3), "bin_s": bin_s,
                 "tput_mbps": [round(x, 2) for x in series]}
            for k in ("group", "class"):
                if k in f.spec:
                    d[k] = f.spec[k]
            if f.error:
                d["error"] = f.error
            flows.append(d)
        sw = {k: final.get(k) for k in ("marks", "drops", "peak_queue_bytes", "bytes", "packets")}
        if steady:
            sw["steady"] = {k: (final[k] - steady[k]) if final.get(k) is not None and
                            steady.get(k) is not None else None for k in ("marks", "drops", "packets")}
        sw["impl"] = self.tb.port_impl
        sw["ports"] = final.get("ports")
        # sanity: the emulated port must have been the bottleneck
        k = max(1, round(BIN_S / bin_s))   # judged on 100 ms bins: finer ones carry read jitter
        tot = [sum(tot[i:i + k]) / len(tot[i:i + k]) for i in range(0, len(tot), k)]
        over = [x for x in tot[2:] if x > 1.3 * self.tb.link_mbps]
        if len(over) > 3:
            raise RuntimeError(f"aggregate throughput above the link rate in {len(over)} bins "
                               f"(max {max(over):.0f} Mbit/s): the switch port was not shaping")
        return {"flows": flows,
                "deadline_met_ratio": (n_met / n_dl) if n_dl else None,
                "switch": sw, "duration_s": round(t_end - self.t0, 3),
                "events": self.events[:2000], **({"kernel_trace": self.trace} if self.trace else {})}
