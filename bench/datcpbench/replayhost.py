"""One host of the trace replay (`bench/run trace`, datcpbench/replay.py) in a process of its
own, started by the replay in the host's network namespace: what a NodeManager's shuffle
plugin does on the map side, and the byte copying of the reduces that run on the host.

The replay's loop keeps the control path (when jobs start and maps end, what each reduce
fetches, the reduce side's reports); it sends this process the fetches to run and gets back
their FetchStarted / FetchFinished reports (stamped here) and results. Bytes move in data
threads with blocking sockets, one per served connection and one per fetch, so that no byte
waits for the replay's loop and the loop never waits for a byte, and the 8 hosts' copying
runs on both CPUs (one Python process serialises its threads).

Map side (DatcpShuffleHandler), per fetch response: RegisterFlow over this process's own
channel to the host's agent (job, reduce, maps, exact bytes, the 4-tuple, this host's
subscriber id); the serving thread holds the first byte for the answer at most
REGISTER_TIMEOUT_S (datcp.shuffle.register.timeout-ms); the ShuffleHeader and partition per
map; EndFlow (written or aborted). The Orders stream (suspend / resume / kill) is followed
here. The control state (flow ids, early orders, ends) is kept under one lock.

Protocol with the replay: JSON lines on the socket pair passed as fd (argv[2]); the
configuration is the JSON file argv[1]. To the host: {"op": "fetch", ...}, {"op": "stop"};
from it: {"ev": "ready"} or {"ev": "failed"}, {"ev": "fwd", ...}, {"ev": "fetched", ...},
{"ev": "records", ...} (the map side's record of every response and the thread count).
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import socket
import struct
import sys
import threading
import time
import traceback

from . import protos
from .replay import (HEADER, HEADER_BYTES, NICE_CONTROL, NICE_DATA, REGISTER_TIMEOUT_S,
                     SHUFFLE_PORT, TCP_CONGESTION, WARMUP_REGISTRATIONS, host_cc)

CHUNK = 1 << 18
DATA_THREADS = 4096       # at most this many connections served / fetched at once
# how long a thread that wants the interpreter's lock waits before asking its holder to
# drop it (Python's default 5 ms): a woken hold should not wait for a data thread
GIL_SWITCH_S = 0.0005


class Link:
    """JSON lines to the replay; any thread may send."""

    def __init__(self, sock):
        self.sock = sock
        self.lock = threading.Lock()

    def send(self, obj):
        line = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        with self.lock:
            try:
                self.sock.sendall(line)
            except OSError:
                pass        # the replay is gone; its end (EOF) stops this process


class HostSide:
    def __init__(self, conf, link):
        self.conf, self.link = conf, link
        self.pb, self.pbg = protos.load()
        self.nice = os.getpriority(os.PRIO_PROCESS, 0)
        self.ip, self.name = conf["ip"], conf["name"]
        self.port = conf.get("port", SHUFFLE_PORT)     # every host's shuffle port
        self.subscriber = conf["subscriber"]
        self.force_cc = conf.get("force_cc")
        self.jobs = conf["jobs"]           # job id -> bytes each map writes per reduce
        self.lock = threading.Lock()       # flows, early_orders, a Serving's id and end
        self.flows = {}                    # agent flow id -> Serving
        self.early_orders = {}             # orders that overtook their registration's answer
        self.recs = {}                     # fetch id -> the map side's record of it
        self.servings = set()
        self.live = set()                  # fetch sockets open
        self.stub = self.channel = self.orders_call = None
        self.stopping = False
        self.zero = memoryview(bytes(CHUNK))
        self.serve_pool = concurrent.futures.ThreadPoolExecutor(
            DATA_THREADS, thread_name_prefix="serve", initializer=self.set_nice,
            initargs=(NICE_DATA,))
        self.fetch_pool = concurrent.futures.ThreadPoolExecutor(
            DATA_THREADS, thread_name_prefix="fetch", initializer=self.set_nice,
            initargs=(NICE_DATA,))

    def set_nice(self, rel):
        """The calling thread's priority, relative to this process's (Linux: per thread)."""
        try:
            os.setpriority(os.PRIO_PROCESS, 0, min(19, max(-20, self.nice + rel)))
        except OSError:
            pass

    def start(self):
        import grpc
        sys.setswitchinterval(GIL_SWITCH_S)
        self.set_nice(NICE_CONTROL)        # this thread reads the replay's orders
        if self.conf.get("sock_path"):
            self.channel = grpc.insecure_channel("unix:" + self.conf["sock_path"])
            self.stub = self.pbg.LocalAgentServiceStub(self.channel)
            self.warm_up()
            threading.Thread(target=self.orders, name="orders", daemon=True).start()
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        host_cc(ls)
        ls.bind((self.ip, self.port))
        ls.listen(1024)
        self.listener = ls
        threading.Thread(target=self.accept_loop, name="accept", daemon=True).start()

    def warm_up(self):
        """A cluster's agents run for days; these start cold (class loading, JIT). Flows of
        a job that does not exist, on a port no socket uses, registered and aborted before
        the first coflow keep that cold start out of the first jobs' registrations."""
        pb = self.pb
        for k in range(WARMUP_REGISTRATIONS):
            reg = pb.FlowRegistration(job_id="job_0_0", reduce_id=0, map_ids=[0], bytes=1,
                                      source_address=self.ip, source_port=1,
                                      destination_address="10.10.0.254",
                                      destination_port=1024 + k, subscriber_id=self.subscriber)
            try:
                reply = self.stub.RegisterFlow(reg, timeout=10)
                self.stub.EndFlow(pb.FlowEnd(flow_id=reply.flow_id,
                                             reason=pb.FLOW_END_REASON_ABORTED), timeout=10)
            except Exception as e:
                raise RuntimeError(f"agent {self.name} refused a warm-up registration: {e}")

    def orders(self):
        pb = self.pb
        while not self.stopping:
            try:
                self.orders_call = self.stub.Orders(
                    pb.OrdersRequest(subscriber_id=self.subscriber))
                for o in self.orders_call:
                    with self.lock:
                        s = self.flows.get(o.flow_id)
                        if s is None:
                            self.early_orders[o.flow_id] = o.action
                        else:
                            s.order(o.action)
            except Exception:
                time.sleep(0.5)

    def accept_loop(self):
        self.set_nice(NICE_DATA)
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return                                   # shut down at the end
            try:
                self.serve_pool.submit(Serving(self, conn).run)
            except RuntimeError:                         # the run is over
                conn.close()
                return

    def serve_forever(self, rfile):
        """This process's main thread: the replay's requests, until stop or its end."""
        for line in rfile:
            msg = json.loads(line)
            if msg["op"] == "fetch":
                self.fetch_pool.submit(self.fetch, msg)
            elif msg["op"] == "stop":
                break
        self.stop()

    def stop(self):
        """Aborts what is still open (nothing when every job completed, but the reducers'
        last closes), waits for the data threads and sends the map side's records."""
        self.stopping = True
        threads = len(self.serve_pool._threads) + len(self.fetch_pool._threads)
        try:
            self.listener.shutdown(socket.SHUT_RDWR)     # wakes the blocked accept
        except OSError:
            pass
        for sv in list(self.servings):
            sv.abort()
        for s in list(self.live):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self.orders_call is not None:
            self.orders_call.cancel()
        self.fetch_pool.shutdown(wait=True, cancel_futures=True)
        self.serve_pool.shutdown(wait=True, cancel_futures=True)
        with self.lock:
            recs = {fid: dict(r, cc=sorted(r["cc"]), dscp=sorted(r["dscp"]))
                    for fid, r in self.recs.items()}
        self.link.send({"ev": "records", "recs": recs, "data_threads": threads})
        if self.channel is not None:
            self.channel.close()

    # ---- reduce side: one fetch's bytes

    def fetch(self, msg):
        """Connect, request, read each map's header and partition (blocking socket);
        FetchStarted / FetchFinished around each map output's copy go to the replay, which
        reports them. Then the result: maps received, bytes, first and last byte."""
        fid, maps = msg["fetch"], msg["maps"]
        out = {"ev": "fetched", "fetch": fid, "got": [], "received": 0, "first": None,
               "last": None, "t_connected": None, "t_first": None, "complete": False}
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        host_cc(s)
        self.live.add(s)
        ev = {"ev": "fwd", "job_id": msg["job_id"], "reduce_id": msg["reduce"],
              "source_host": msg["src_name"]}
        try:
            try:
                s.connect((msg["src_ip"], self.port))
                out["t_connected"] = time.time()
                s.sendall(msg["request"].encode())
                buf = bytearray(CHUNK)
                view = memoryview(buf)
                for m in maps:
                    hdr = read_exactly(s, HEADER_BYTES, out)
                    mid, size = HEADER.unpack(hdr)
                    if mid != m:
                        raise ConnectionError(f"map {mid} where {m} was asked")
                    self.link.send(dict(ev, kind="fetch_started", t=time.time_ns(),
                                        map_ids=[m], bytes=size + HEADER_BYTES))
                    t0, left = time.monotonic_ns(), size
                    try:
                        while left > 0:
                            # a chunk per call (not whatever arrived): few wake-ups, little
                            # time holding the interpreter's lock
                            want = min(left, CHUNK)
                            n = s.recv_into(view[:want], want, socket.MSG_WAITALL)
                            if n == 0:
                                raise ConnectionError("closed early")
                            left -= n
                        out["last"] = time.time()
                    finally:
                        self.link.send(dict(ev, kind="fetch_finished", t=time.time_ns(),
                                            map_ids=[m], bytes=0 if left else size + HEADER_BYTES,
                                            duration_nanos=time.monotonic_ns() - t0))
                    out["got"].append(m)
                    out["received"] += size
                out["complete"] = True
            finally:
                self.live.discard(s)
                s.close()
        except (OSError, ConnectionError) as e:
            out["error"] = str(e)[:200]
        out["first"] = out["t_first"]
        out["t_end"] = time.time()
        self.link.send(out)


def read_exactly(s, n, out):
    data = b""
    while len(data) < n:
        part = s.recv(n - len(data))
        if not part:
            raise ConnectionError("closed early")
        data += part
        if out["t_first"] is None:
            out["t_first"] = time.time()
    return data


class Serving:
    """One fetch response on the map side: the plugin's FlowTracker. run() is its data
    thread; registered(), order() and end() change the control state under the host's
    lock."""

    def __init__(self, host, conn):
        self.h, self.conn = host, conn
        self.running = threading.Event()
        self.running.set()
        self.killed = False
        self.flow_id = 0
        self.ended = False
        self.end_reason = None
        self.written = 0
        self.rec = None

    def order(self, action):
        """(under the host's lock)"""
        pb = self.h.pb
        if action == pb.FLOW_ACTION_SUSPEND:
            self.rec["suspended"] += 1
            self.running.clear()
        elif action == pb.FLOW_ACTION_RESUME:
            self.running.set()
        elif action == pb.FLOW_ACTION_KILL:
            self.rec["killed"] += 1
            self.abort()

    def abort(self):
        """Kill (and the end of the run): the data thread wakes from a suspend or a blocked
        write and closes the connection, which resets it (linger 0)."""
        self.killed = True
        self.running.set()
        try:
            self.conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def observe(self):
        """What the kernel runs this connection with: its congestion control and DSCP."""
        try:
            cc = self.conn.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16)
            tos = self.conn.getsockopt(socket.IPPROTO_IP, socket.IP_TOS)
        except OSError:
            return
        self.rec["cc"].add(cc.split(b"\0", 1)[0].decode())
        self.rec["dscp"].add(tos >> 2)

    def run(self):
        h = self.h
        h.servings.add(self)
        h.set_nice(NICE_CONTROL)                 # the request and the hold are control
        try:
            line = b""
            while not line.endswith(b"\n"):
                part = self.conn.recv(4096)
                if not part:
                    return
                line += part
            req = json.loads(line)
            rec = {"t_served": time.time(), "cc": set(), "dscp": set(), "suspended": 0,
                   "killed": 0}
            with h.lock:
                self.rec = h.recs[req["fetch"]] = rec
            red, maps = req["reduce"], req["maps"]
            size = h.jobs[req["job"]][red]
            total = (size + HEADER_BYTES) * len(maps)
            if h.force_cc:
                self.conn.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, h.force_cc.encode())
            self.observe()
            if h.stub:
                self.register(req["job"], red, maps, total)
            rec["t_released"] = time.time()     # registration answered or timed out
            h.set_nice(NICE_DATA)
            zero = h.zero
            next_look = 1 << 20
            for m in maps:
                self.send(HEADER.pack(m, size))
                left = size
                while left > 0:
                    n = min(left, CHUNK)
                    self.send(zero[:n])
                    left -= n
                    if self.written >= next_look:
                        self.observe()
                        next_look += 1 << 20
            self.observe()
            self.end(True)
            # the reducer closes once it has every byte
            while self.conn.recv(4096):
                pass
        except (OSError, ConnectionError, ValueError, KeyError):
            pass
        finally:
            self.end(False)
            self.conn.close()
            h.servings.discard(self)

    def send(self, data):
        if not self.running.is_set():
            self.running.wait()
        if self.killed:
            raise ConnectionError("killed")
        self.conn.sendall(data)
        self.written += len(data)

    def register(self, job_id, red, maps, total):
        """RegisterFlow; the first byte waits for the answer at most REGISTER_TIMEOUT_S
        (here, in this thread); the answer is handled whenever it comes."""
        import grpc
        pb = self.h.pb
        src, dst = self.conn.getsockname(), self.conn.getpeername()
        reg = pb.FlowRegistration(job_id=job_id, reduce_id=red, map_ids=maps, bytes=total,
                                  source_address=src[0], source_port=src[1],
                                  destination_address=dst[0], destination_port=dst[1],
                                  subscriber_id=self.h.subscriber)
        self.t_reg = time.monotonic()
        call = self.h.stub.RegisterFlow.future(reg, timeout=10)
        try:
            call.result(timeout=REGISTER_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            self.rec["register_timeout"] = True
        except Exception:       # failed: handled with the answer
            pass
        call.add_done_callback(self.registered)

    def registered(self, call):
        """The agent's answer (gRPC's thread, or this one when it came in time)."""
        ms = round((time.monotonic() - self.t_reg) * 1e3, 2)
        pb, h = self.h.pb, self.h
        with h.lock:
            if call.cancelled() or call.exception() is not None:
                self.rec["registered"] = False
                self.rec["register_error"] = str(call.exception())[:200] \
                    if not call.cancelled() else "cancelled"
                return
            reply = call.result()
            self.rec["register_ms"] = ms
            self.flow_id = reply.flow_id
            p = reply.policy
            self.rec.update(registered=True, in_kernel=reply.in_kernel, epoch=reply.epoch,
                            policy={"mode": pb.FlowMode.Name(p.mode)
                                    .replace("FLOW_MODE_", "").lower(),
                                    "importance": p.importance, "phi": p.phi,
                                    "deadline_ms": p.deadline_nanos / 1e6
                                    if p.deadline_nanos else None,
                                    "quench": pb.QuenchMode.Name(p.quench_mode)
                                    .replace("QUENCH_MODE_", "").lower()})
            if self.ended:  # written before the answer came: end it now, as the plugin does
                self.send_end(self.end_reason)
                return
            h.flows[self.flow_id] = self
            early = h.early_orders.pop(self.flow_id, None)
            if early is not None:
                self.order(early)

    def end(self, written):
        pb, h = self.h.pb, self.h
        with h.lock:
            if self.ended:
                return
            self.ended = True
            self.end_reason = pb.FLOW_END_REASON_WRITTEN if written \
                else pb.FLOW_END_REASON_ABORTED
            if self.flow_id:
                self.send_end(self.end_reason)
                h.flows.pop(self.flow_id, None)

    def send_end(self, reason):
        pb = self.h.pb
        try:
            fut = self.h.stub.EndFlow.future(pb.FlowEnd(
                flow_id=self.flow_id, reason=reason, bytes_written=self.written), timeout=10)
        except (RuntimeError, ValueError):  # the channel is closed: the run is over
            return
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())


def main(argv):
    with open(argv[1]) as fh:
        conf = json.load(fh)
    sock = socket.socket(fileno=int(argv[2]))
    link = Link(sock)
    try:
        host = HostSide(conf, link)
        host.start()
    except Exception as e:
        traceback.print_exc()
        link.send({"ev": "failed", "error": str(e)[:2000]})
        return 1
    link.send({"ev": "ready"})
    host.serve_forever(sock.makefile("rb"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
