"""Trace replay: the coflows of a workload spec on the emulated data center, with the real
scheduler (one JVM in its own namespace) and a real agent per host (one JVM in each host's
namespace, its own Unix socket, state dir and node token), once per mode.

The replay driver plays the shuffle plugin's part over each host's agent socket with the
proto messages the plugin sends (see shuffle-plugin/). This process's asyncio loop runs the
control path: when jobs start and maps end, what each reduce fetches, the reduces' reports
(Forward of ReduceStarted, MapCompleted, FetchStarted / FetchFinished around each map
output's copy, ShuffleFinished) and the maps' (MapOutputIndexed when a map ends). One
process per host (datcpbench/replayhost.py, in the host's namespace) runs what a
NodeManager's plugin does on the map side (RegisterFlow per fetch response, the first byte
held for the answer at most REGISTER_TIMEOUT_S as datcp.shuffle.register.timeout-ms,
EndFlow, the Orders stream: suspend / resume / kill) and moves the bytes of the fetches of
the reduces on that host, in data threads with blocking sockets: no byte waits for this
loop, the loop never waits for a byte. There is no ResourceManager, so the driver also
reports JobFinished from the job's first reduce host when its last byte is read (on the
cluster the scheduler learns the end from YARN). Real TCP carries the bytes: every map host
serves on the shuffle port 13562 (so the sockops program puts the sockets on datcp when a
mode asks for it), reducers connect, send the request and read a ShuffleHeader-sized header
plus the partition for each map.
"""
from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

from . import kernel
from .netns import Cleanup, in_netns, install_signal_handlers, log, reap_stale
from .topo import Testbed

SHUFFLE_PORT = 13562
GRPC_PORT = 9090
HTTP_PORT = 8080
LINK_MBPS = 100
# Hadoop's serialized ShuffleHeader before each map output in a response (map attempt id,
# two vlongs, a vint): part of the registered body bytes, as in the plugin
HEADER_BYTES = 40
HEADER = struct.Struct("!iq28x")          # map id, partition bytes; padded to HEADER_BYTES
PARALLEL_COPIES = 5                       # mapreduce.reduce.shuffle.parallelcopies
MAX_MAPS_PER_FETCH = 20                   # Hadoop's Fetcher: maps of one host per request
REGISTER_TIMEOUT_S = 0.005                # datcp.shuffle.register.timeout-ms
REFETCH_DELAY_S = 0.2                     # a killed or failed fetch is retried after this
WARMUP_REGISTRATIONS = 300
# thread priorities (nice) relative to the driver's, which the JVMs run at: the control path
# (the loop; a response's hold for the agent's answer) above the JVMs, so that it wakes on
# time; the bytes' copying (replayhost) below them, so that the data threads do not take the
# agents' CPU
NICE_CONTROL = -5
NICE_DATA = 5
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TOR_DSCP_MAP = "34=0,0=1,8=2"             # kmod's precedence classes AF41, CS0, CS1 -> bands
RED = {"buffer_bytes": 200000, "mark": "red", "red_min": 80000, "red_max": 120000,
       "red_maxp": 1.0}                   # DATCP Table 1
STEP = {"buffer_bytes": 200000, "mark": "step", "k": 30000}   # bench's dctcp baseline, K
KMOD_DSCPS = {0, 8, 34}

# mode -> ToR port, whether agents / scheduler run, their default flow mode, scheduler keys
MODES = {
    "off": {"switch": dict(RED), "agents": False, "scheduler": False},
    "dctcp": {"switch": dict(STEP), "agents": True, "scheduler": False,
              "agent_mode": "dctcp"},
    "prio": {"switch": dict(STEP, dscp_map=TOR_DSCP_MAP), "agents": True, "scheduler": True,
             "agent_mode": "dctcp",
             "scheduler_conf": {"planner.policy": "order", "policy.defaultMode": "dctcp"}},
    "on": {"switch": dict(RED, dscp_map=TOR_DSCP_MAP), "agents": True, "scheduler": True,
           "agent_mode": "datcp", "scheduler_conf": {}},
    # diagnostic, not a baseline: off's network with agents registering every flow but
    # sockops on another port, so the sockets stay cubic: what the JVMs' CPU costs the run
    "off-agents": {"switch": dict(RED), "agents": True, "scheduler": False,
                   "agent_mode": "dctcp", "agent_port": SHUFFLE_PORT + 1},
}


class ModeCheckError(RuntimeError):
    """A mode's shuffle connections were not what the mode defines."""


class ReplayError(RuntimeError):
    pass


def jars():
    return {"scheduler": os.environ.get("DATCP_SCHEDULER_JAR", os.path.join(
                kernel.REPO, "scheduler", "target", "scheduler.jar")),
            "agent": os.environ.get("DATCP_AGENT_JAR", os.path.join(
                kernel.REPO, "agent", "target", "datcp-agent.jar")),
            "libdatcp": os.environ.get("DATCP_LIBDATCP", os.path.join(
                os.path.dirname(kernel.DATCPCTL), "libdatcp.so"))}


# ---------------------------------------------------------------- jobs and the limit

def host_name(i):
    return f"h{i}"


def partition(job, r):
    """Bytes each map writes for reduce r."""
    rb = job.get("reduce_bytes")
    return rb[r] if rb is not None else job["partition_bytes"]


def map_delay(job, m):
    """When map m ends, seconds after submit: the last slow_maps maps take map_seconds."""
    slow = job.get("slow_maps", job["maps"])
    return job.get("map_seconds", 0.0) if m >= job["maps"] - slow else 0.0


def job_bytes(job):
    return job["maps"] * sum(partition(job, r) for r in range(job["reduces"]))


def alone_s(job, link_mbps=LINK_MBPS):
    """The job alone on the empty fabric: its busiest port (mapper uplink or reducer
    downlink) carrying that port's bytes at the link rate, not before its last map ends.
    Map and reduce on one host do not cross the fabric."""
    up, down = {}, {}
    for m, hm in enumerate(job["map_hosts"]):
        for r, hr in enumerate(job["reduce_hosts"]):
            if hm != hr:
                b = partition(job, r)
                up[hm] = up.get(hm, 0) + b
                down[hr] = down.get(hr, 0) + b
    busiest = max(list(up.values()) + list(down.values()) + [0])
    last_map = max(map_delay(job, m) for m in range(job["maps"]))
    return max(busiest * 8 / (link_mbps * 1e6), last_map)


def select(spec, sel):
    """--select START:COUNT: jobs[START:START+COUNT], submit times shifted to start at 0."""
    if not sel:
        return spec
    try:
        start, count = (int(x) for x in sel.split(":"))
    except ValueError:
        raise SystemExit(f"--select: '{sel}' is not START:COUNT")
    jobs = spec["jobs"][start:start + count]
    if start < 0 or count < 1 or not jobs:
        raise SystemExit(f"--select {sel}: the spec has {len(spec['jobs'])} jobs")
    t0 = min(j["submit_s"] for j in jobs)
    return dict(spec, jobs=[dict(j, submit_s=j["submit_s"] - t0) for j in jobs])


def check_placement(spec):
    if spec.get("link_mbit", LINK_MBPS) != LINK_MBPS:
        raise SystemExit(f"link_mbit: the replay's fabric runs at {LINK_MBPS} Mbit/s, the spec "
                         f"was scaled for {spec['link_mbit']:g}")
    for i, j in enumerate(spec["jobs"]):
        for k in ("map_hosts", "reduce_hosts"):
            if k not in j:
                raise SystemExit(f"jobs[{i}].{k}: the trace replay needs placement "
                                 "(top-level hosts, map_hosts, reduce_hosts per job)")


# ---------------------------------------------------------------- the mode check

def check_mode(mode, cc_seen, dscp_seen, kernel_modes):
    """Raises ModeCheckError when what the kernel ran is not what the mode defines."""
    cc, dscp, km = set(cc_seen), set(dscp_seen), set(kernel_modes)
    if mode == "off-agents":
        mode = "off"      # its kernel entries sit on sockets sockops left alone
        km = set()
    want = {"off": "cubic"}.get(mode, "datcp")
    problems = []
    if cc != {want}:
        problems.append(f"cc_seen {sorted(cc)}, expected ['{want}']")
    if mode in ("off", "dctcp") and dscp != {0}:
        problems.append(f"dscp_seen {sorted(dscp)}, expected [0] (one band)")
    if mode in ("prio", "on") and not dscp <= KMOD_DSCPS:
        problems.append(f"dscp_seen {sorted(dscp)}, expected within {sorted(KMOD_DSCPS)}")
    if mode == "off" and km:
        problems.append(f"kernel flow entries of modes {sorted(km)} on the shuffle port, "
                        "expected none (no agent)")
    if mode in ("dctcp", "prio") and km != {"dctcp"}:
        problems.append(f"kernel flow modes {sorted(km)}, expected ['dctcp']")
    if mode == "on" and "datcp" not in km:
        problems.append(f"kernel flow modes {sorted(km)}, expected datcp among them")
    if problems:
        raise ModeCheckError(f"mode {mode}: " + "; ".join(problems))


# ---------------------------------------------------------------- processes

class Jvm:
    """A JVM started in a namespace; stopped with SIGTERM (then SIGKILL) at cleanup."""

    def __init__(self, name, ns, args, log_path, ready, cleanup):
        self.name, self.log_path, self.ready = name, log_path, ready
        self.fh = open(log_path, "w")
        # nsenter, not `ip netns exec`, which mounts a sysfs of its own and so hides bpffs;
        # JVM_NICE: the driver's priority by default (on a cluster, agents do not wait for
        # the data path's CPU)
        nice = int(os.environ.get("DATCP_REPLAY_JVM_NICE", os.getpriority(os.PRIO_PROCESS, 0)))
        self.proc = subprocess.Popen(["nsenter", f"--net=/var/run/netns/{ns}", "java", *args],
                                     stdout=self.fh, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, nice))
        cleanup.push(self.stop)

    def wait_ready(self, deadline):
        while time.time() < deadline:
            with open(self.log_path) as fh:
                text = fh.read()
            if self.ready in text:
                return
            if self.proc.poll() is not None:
                raise ReplayError(f"{self.name} exited ({self.proc.returncode}) before it was "
                                  f"ready:\n{text[-2000:]}")
            time.sleep(0.2)
        raise ReplayError(f"{self.name} not ready in time; log {self.log_path}")

    def usage(self):
        return proc_usage(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.fh.close()


JVM_SMALL = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k",
             "-XX:ReservedCodeCacheSize=32m", "-XX:MaxMetaspaceSize=96m"]


def write_props(path, props):
    with open(path, "w") as fh:
        for k, v in props.items():
            fh.write(f"{k}={v}\n")


def http(ns, method, url, ca, token=None):
    """An HTTPS call made from inside namespace ns (the scheduler's), trusting the CA file ca."""
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with in_netns(ns):
        with urllib.request.urlopen(req, timeout=10,
                                    context=ssl.create_default_context(cafile=ca)) as r:
            return json.loads(r.read() or b"null")


def pki(work, *args):
    """scripts/tls-pki.sh in work/pki (a throwaway CA for the run); returns that directory."""
    d = os.path.join(work, "pki")
    subprocess.run([os.path.join(kernel.REPO, "scripts", "tls-pki.sh"), d, *args], check=True)
    return d


# ---------------------------------------------------------------- the driver

def host_cc(s):
    """The hosts run cubic, the Linux default Hadoop ships on (this machine's root namespace
    may default to another, and a namespace other than the first may only default to one in
    tcp_allowed_congestion_control). Accepted sockets inherit the listener's; the sockops
    program replaces it with datcp on the shuffle port when a mode loads it there."""
    s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, b"cubic")


class Forwarder:
    """The plugin's EventForwarder: events to the agent's Forward rpc in batches with this
    reporter's id and increasing batch ids; a failed batch is retried with the same id."""

    def __init__(self, pb, stub, host):
        self.pb, self.stub, self.host = pb, stub, host
        self.reporter_id = str(uuid.uuid4())
        self.batch_id = 1
        self.q: asyncio.Queue = asyncio.Queue()
        self.failures = 0
        self.task = asyncio.ensure_future(self.run())

    def offer(self, t_ns=None, **event):
        """t_ns: when it happened (a host process's fetch), else now."""
        self.q.put_nowait(self.pb.ShuffleEvent(time_unix_nanos=t_ns or time.time_ns(),
                                               **event))

    async def run(self):
        while True:
            batch = [await self.q.get()]
            while not self.q.empty() and len(batch) < 500:
                batch.append(self.q.get_nowait())
            report = self.pb.ShuffleReport(reporter_host=self.host, reporter_id=self.reporter_id,
                                           batch_id=self.batch_id, events=batch)
            while True:
                try:
                    await self.stub.Forward(report, timeout=5)
                    break
                except Exception:
                    self.failures += 1
                    await asyncio.sleep(0.2)
            self.batch_id += 1

    async def drain(self, timeout=5.0):
        end = time.time() + timeout
        while not self.q.empty() and time.time() < end:
            await asyncio.sleep(0.05)


class Host:
    """One host: its process (datcpbench/replayhost.py, in the host's namespace: the map
    side and the bytes of the fetches of reduces on this host) and, here on the loop, the
    reports of the host's reduces and maps to its agent."""

    def __init__(self, replay, idx, ns, ip, sock_path):
        self.r, self.idx, self.ns, self.ip = replay, idx, ns, ip
        self.name = host_name(idx)
        self.sock_path = sock_path
        self.stub = self.fwd = self.channel = None
        self.pending = {}         # fetch id -> future of its result
        self.records = None       # the map side's records, at the end
        self.proc = None

    async def start(self, work, logs):
        """Starts the host's process; returns once it is ready (its agent warmed up)."""
        import grpc
        pb, pbg = self.r.pb, self.r.pbg
        if self.sock_path:
            self.channel = grpc.aio.insecure_channel("unix:" + self.sock_path)
            self.stub = pbg.LocalAgentServiceStub(self.channel)
            self.fwd = Forwarder(pb, self.stub, self.name)
        conf = os.path.join(work, f"replayhost-{self.name}.json")
        with open(conf, "w") as fh:
            json.dump({"name": self.name, "ip": self.ip, "sock_path": self.sock_path,
                       "subscriber": f"replay-{self.name}/{os.getpid()}",
                       "force_cc": self.r.force_cc,
                       "jobs": {j["id"]: [partition(j, r) for r in range(j["reduces"])]
                                for j in self.r.jobs.values()}}, fh)
        mine, theirs = socket.socketpair()
        bench = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        nice = self.r.nice        # the driver's, as the JVMs (this thread runs above it)
        with open(os.path.join(logs, f"replayhost-{self.name}.log"), "w") as log_fh:
            self.proc = subprocess.Popen(
                ["nsenter", f"--net=/var/run/netns/{self.ns}", sys.executable, "-m",
                 "datcpbench.replayhost", conf, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=log_fh,
                stderr=subprocess.STDOUT, start_new_session=True,
                env=dict(os.environ, PYTHONPATH=bench),
                preexec_fn=lambda: os.setpriority(os.PRIO_PROCESS, 0, nice))
        theirs.close()
        self.reader, self.writer = await asyncio.open_connection(sock=mine, limit=1 << 26)
        msg = json.loads(await asyncio.wait_for(self.reader.readline(), 300) or b"{}")
        if msg.get("ev") != "ready":
            raise ReplayError(f"host {self.name}'s process did not start: "
                              f"{msg.get('error', 'it exited')} (log: logs/.../replayhost-"
                              f"{self.name}.log)")
        self.reading = asyncio.ensure_future(self.read())

    async def read(self):
        pb = self.r.pb
        while True:
            line = await self.reader.readline()
            if not line:
                break
            msg = json.loads(line)
            ev = msg.pop("ev")
            if ev == "fwd":
                if self.fwd:
                    kind, t = msg.pop("kind"), msg.pop("t")
                    cls = pb.FetchStarted if kind == "fetch_started" else pb.FetchFinished
                    self.fwd.offer(t_ns=t, **{kind: cls(**msg)})
            elif ev == "fetched":
                fut = self.pending.pop(msg["fetch"], None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
            elif ev == "records":
                self.records = msg
        for fut in self.pending.values():      # the process is gone
            if not fut.done():
                fut.set_exception(ReplayError(f"host {self.name}'s process ended"))

    async def fetch(self, **msg):
        """Runs a fetch in the host's process; returns its result."""
        fut = asyncio.get_running_loop().create_future()
        self.pending[msg["fetch"]] = fut
        self.writer.write(json.dumps(dict(msg, op="fetch")).encode() + b"\n")
        return await fut

    async def stop(self):
        """Asks the process to end (it aborts what is open and sends its records)."""
        if self.proc is None:
            return
        try:
            self.writer.write(b'{"op": "stop"}\n')
            await asyncio.wait_for(self.reading, 60)
        except (OSError, asyncio.TimeoutError, AttributeError):
            pass
        try:
            await asyncio.get_running_loop().run_in_executor(None, self.proc.wait, 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.fwd:
            self.fwd.task.cancel()
        if self.channel:
            await self.channel.close()


class Reduce:
    """One reduce task: Hadoop's Fetcher threads, PARALLEL_COPIES of them, each fetching all
    ready maps (up to MAX_MAPS_PER_FETCH) of one host per connection. Decided here, on the
    loop; each fetch's bytes move in its host's process."""

    def __init__(self, replay, job, r):
        self.rp, self.job, self.r = replay, job, r
        self.host = replay.hosts[job["reduce_hosts"][r]]
        self.pending = {}            # map host index -> [map ids]
        self.busy = set()
        self.left = job["maps"]
        self.wake = asyncio.Event()
        self.first = self.last = None
        self.received = 0

    def fwd(self, **ev):
        if self.host.fwd:
            self.host.fwd.offer(**ev)

    def map_done(self, m):
        pb = self.rp.pb
        hm = self.job["map_hosts"][m]
        self.fwd(map_completed=pb.MapCompleted(
            job_id=self.job["id"], reduce_id=self.r, map_id=m, host=host_name(hm),
            run_time_nanos=0, output_bytes=-1, maps_running=-1))
        self.pending.setdefault(hm, []).append(m)
        self.wake.set()

    async def run(self):
        pb, job = self.rp.pb, self.job
        self.fwd(reduce_started=pb.ReduceStarted(
            job_id=job["id"], reduce_id=self.r, host=self.host.name, total_maps=job["maps"],
            total_reduces=job["reduces"], queue=job.get("queue", "default"),
            user=job.get("user", "replay"), job_name=job["name"],
            priority=pb.JOB_PRIORITY_NORMAL))
        running = set()
        while self.left > 0:
            ready = [h for h, ms in self.pending.items() if ms and h not in self.busy]
            while ready and len(running) < PARALLEL_COPIES:
                hm = ready.pop(0)
                ms = self.pending[hm][:MAX_MAPS_PER_FETCH]
                del self.pending[hm][:len(ms)]
                self.busy.add(hm)
                running.add(asyncio.ensure_future(self.fetch(hm, ms)))
            self.wake.clear()
            waits = set(running) | {asyncio.ensure_future(self.wake.wait())}
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            for t in waits - set(running):
                t.cancel()
            running -= done
            for t in done:
                t.result()
        self.fwd(shuffle_finished=pb.ShuffleFinished(job_id=job["id"], reduce_id=self.r))

    async def fetch(self, hm, maps):
        """One connection to map host hm for `maps`; maps not received are fetched again."""
        job = self.job
        src = self.rp.hosts[hm]
        fid = len(self.rp.flows)
        rec = self.rp.flows[fid] = {
            "job": job["name"], "job_id": job["id"], "reduce": self.r, "src": src.name,
            "dst": self.host.name, "maps": list(maps),
            "bytes": sum(partition(job, self.r) for _ in maps) + HEADER_BYTES * len(maps),
            "t_request": time.time(), "t_first": None, "t_end": None, "cc": set(),
            "dscp": set(), "suspended": 0, "killed": 0, "complete": False}
        request = json.dumps({"fetch": fid, "job": job["id"], "reduce": self.r,
                              "maps": maps}) + "\n"
        res = await self.host.fetch(fetch=fid, src_ip=src.ip, src_name=src.name,
                                    job_id=job["id"], reduce=self.r, maps=maps,
                                    request=request)
        for k in ("t_connected", "t_first", "t_end", "complete", "error"):
            if res.get(k) is not None:
                rec[k] = res[k]
        if res["first"] is not None and (self.first is None or res["first"] < self.first):
            self.first = res["first"]
        if res["last"] is not None and (self.last is None or res["last"] > self.last):
            self.last = res["last"]
        self.received += res["received"]
        self.busy.discard(hm)
        lost = [m for m in maps if m not in res["got"]]
        self.left -= len(res["got"])
        if lost:        # Hadoop's Fetcher puts the host back with these maps after a pause
            await asyncio.sleep(REFETCH_DELAY_S)
            self.pending.setdefault(hm, [])[:0] = lost
            self.wake.set()


class Replay:
    """One mode's replay on a testbed whose hosts (and agents) are up."""

    def __init__(self, spec, tb, agent_socks, work, logs, force_cc=None, timeout_s=900.0,
                 jvms=()):
        from . import protos
        self.pb, self.pbg = protos.load()
        self.spec, self.tb, self.force_cc, self.timeout_s = spec, tb, force_cc, timeout_s
        self.work, self.logs = work, logs
        self.jvms = list(jvms)
        self.agent_socks = agent_socks
        self.flows = {}
        stamp = int(time.time() * 1000)
        self.jobs = {}
        for k, j in enumerate(spec["jobs"]):
            j = dict(j, id=f"job_{stamp}_{k + 1:04d}")
            self.jobs[j["id"]] = j
        self.kernel_modes = set()
        self.nice = os.getpriority(os.PRIO_PROCESS, 0)
        self.hosts = []
        self.data_threads = 0     # the host processes' data threads (connections at once)
        self.cpu_s = self.wait_s = None
        self.lag_ms = []

    def usage(self):
        """(CPU seconds, seconds waiting for a CPU) so far per part: the driver (this
        process and the hosts' processes, with the emulated links' work the kernel does in
        their syscalls), the agents, the scheduler."""
        parts = {"driver": [proc_usage(os.getpid())] + [proc_usage(h.proc.pid)
                                                       for h in self.hosts]}
        for j in self.jvms:
            parts.setdefault("agents" if j.name.startswith("agent") else "scheduler",
                             []).append(j.usage())
        return {k: [sum(u[i] for u in us if u) for i in (0, 1)] for k, us in parts.items()}

    @staticmethod
    def used(a, b, i):
        return {k: round(b[k][i] - a[k][i], 2) if k in a else None
                for k in ("driver", "agents", "scheduler")}

    async def sample_kernel(self):
        """datcpctl flow list once a second: the flow modes the kernel holds for shuffle
        flows of this testbed's hosts."""
        prefix = "10.10.1."
        while True:
            p = await asyncio.create_subprocess_exec(
                kernel.DATCPCTL, "flow", "list", "--json", stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL)
            try:
                out, _ = await p.communicate()
                for f in json.loads(out or b"[]"):
                    if f.get("src", "").startswith(prefix) and \
                            f["src"].endswith(f":{SHUFFLE_PORT}") and f.get("mode"):
                        self.kernel_modes.add(f["mode"])
            except (ValueError, OSError):
                pass
            finally:
                if p.returncode is None:
                    p.kill()
                    await p.wait()
            await asyncio.sleep(1.0)

    async def watch_lag(self):
        """How late the driver's loop wakes up (every 50 ms): a busy loop delays the
        reduces' decisions and reports."""
        while True:
            t = time.monotonic()
            await asyncio.sleep(0.05)
            self.lag_ms.append(round((time.monotonic() - t - 0.05) * 1e3, 2))

    async def run_job(self, j, t0):
        pb = self.pb
        await asyncio.sleep(max(0.0, t0 + j["submit_s"] - time.time()))
        submit = time.time()
        reduces = [Reduce(self, j, r) for r in range(j["reduces"])]
        tasks = [asyncio.ensure_future(rd.run()) for rd in reduces]

        async def map_ends(m):
            await asyncio.sleep(map_delay(j, m))
            hm = self.hosts[j["map_hosts"][m]]
            if hm.fwd:   # the map side reports the index when the map's container stops
                hm.fwd.offer(map_output_indexed=pb.MapOutputIndexed(
                    job_id=j["id"], map_id=m, host=hm.name,
                    partition_bytes=[partition(j, r) + HEADER_BYTES
                                     for r in range(j["reduces"])]))
            for rd in reduces:
                rd.map_done(m)

        maps = [asyncio.ensure_future(map_ends(m)) for m in range(j["maps"])]
        await asyncio.gather(*maps)
        await asyncio.gather(*tasks)
        end = max(rd.last for rd in reduces if rd.last) if any(rd.last for rd in reduces) \
            else time.time()
        first = min((rd.first for rd in reduces if rd.first), default=end)
        rh = reduces[0].host
        if rh.fwd:
            rh.fwd.offer(job_finished=pb.JobFinished(job_id=j["id"], succeeded=True))
        received = sum(rd.received for rd in reduces)
        jct = end - submit
        return j["name"], {"jct_s": round(jct, 4), "copy_s": round(end - first, 4),
                           "deadline_met": None if j.get("deadline_s") is None
                           else jct <= j["deadline_s"],
                           "bytes": received, "rounds": [round(jct, 4)]}

    async def main(self, progress=None):
        # the control path above the JVMs and the hosts' data threads, so that it wakes on
        # time (the hosts' processes start at the driver's priority)
        try:
            os.setpriority(os.PRIO_PROCESS, 0, max(-20, self.nice + NICE_CONTROL))
        except OSError:
            pass
        try:
            return await self.replay(progress)
        finally:
            os.setpriority(os.PRIO_PROCESS, 0, self.nice)

    async def replay(self, progress):
        self.hosts = [Host(self, i, ns, self.tb.sender_ip(i), self.agent_socks.get(i))
                      for i, ns in enumerate(self.tb.senders)]
        try:
            await asyncio.gather(*(h.start(self.work, self.logs) for h in self.hosts))
        except BaseException:
            await asyncio.gather(*(h.stop() for h in self.hosts), return_exceptions=True)
            raise
        use0 = self.usage()
        sampler = asyncio.ensure_future(self.sample_kernel())
        lag = asyncio.ensure_future(self.watch_lag())
        t0 = time.time() + 0.5
        jobs = list(self.jobs.values())
        tasks = [asyncio.ensure_future(self.run_job(j, t0)) for j in jobs]
        last_submit = max(j["submit_s"] for j in jobs)
        pending = set(tasks)
        try:
            while pending:
                left = t0 + last_submit + self.timeout_s - time.time()
                if left <= 0:
                    break
                done, pending = await asyncio.wait(pending, timeout=min(left, 10.0))
                if progress:
                    progress(len(tasks) - len(pending), len(tasks), time.time() - t0)
            results = {}
            for t in tasks:
                if t.done():
                    name, res = t.result()
                    results[name] = res
            for h in self.hosts:
                if h.fwd:
                    await h.fwd.drain()
            self.duration_s = time.time() - t0
            use1 = self.usage()
            self.cpu_s, self.wait_s = self.used(use0, use1, 0), self.used(use0, use1, 1)
            return results
        finally:
            for t in pending:
                t.cancel()
            sampler.cancel()
            lag.cancel()
            await asyncio.gather(*(h.stop() for h in self.hosts), return_exceptions=True)

    def flow_records(self):
        """Every fetch: the reduce side's record with the map side's (its host's process)."""
        for h in self.hosts:
            if not h.records:
                continue
            self.data_threads += h.records["data_threads"]
            for fid, r in h.records["recs"].items():
                f = self.flows.get(int(fid))
                if f is not None:
                    cc, dscp = f["cc"] | set(r.pop("cc")), f["dscp"] | set(r.pop("dscp"))
                    f.update(r, cc=cc, dscp=dscp)
            h.records = None
        out = []
        for fid, f in sorted(self.flows.items()):
            f = dict(f, id=fid, cc=sorted(f["cc"]), dscp=sorted(f["dscp"]))
            f["fct_s"] = round(f["t_end"] - f["t_request"], 4) if f["t_end"] else None
            out.append(f)
        return out

    def forward_failures(self):
        return sum(h.fwd.failures for h in self.hosts if h.fwd)


# ---------------------------------------------------------------- one mode

def proc_usage(pid):
    """(CPU seconds, seconds its threads waited for a CPU) of process pid, None once it is
    gone. CPU from /proc/PID/stat (user + system, all its threads ever); the wait summed
    over its threads' schedstat (the threads that still run)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            f = fh.read().rsplit(")", 1)[1].split()
        cpu = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        wait = 0
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/schedstat") as fh:
                    wait += int(fh.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
        return cpu, wait / 1e9
    except (OSError, IndexError, ValueError):
        return None


def run_mode(spec, mode, out_dir, force_cc=None, timeout_s=900.0, progress=None, logs_sub=""):
    """One mode (one round of it) on a fresh testbed; returns the mode's results entry, its
    flows and the raw samples behind the entry's quantiles (for merging rounds). Raises
    ModeCheckError when its connections were not the mode's, ReplayError when a job did not
    complete; either carries the flows (.flows) when the replay ran."""
    m = MODES[mode]
    hosts = spec["hosts"]
    cleanup = Cleanup()
    work = tempfile.mkdtemp(prefix=f"datcp-replay-{mode}-")
    cleanup.push(shutil.rmtree, work, ignore_errors=True)
    logs = os.path.join(out_dir, "logs", mode, logs_sub)
    os.makedirs(logs, exist_ok=True)
    tb = Testbed(hosts, 1, LINK_MBPS, dict(m["switch"], symmetric=True), cleanup)
    ctl = tb.receivers[0]          # the scheduler's namespace, behind its own switch port
    ports_before = set((kernel.status() or {}).get("ports") or [])
    jv = jars()
    try:
        tb.up()
        for ns in tb.senders:
            kernel.line_rate_set(ns, LINK_MBPS)
            cleanup.push(kernel.line_rate_set, ns, 0)
        if m["agents"]:
            port = m.get("agent_port", SHUFFLE_PORT)
            if port not in ports_before:
                cleanup.push(kernel._ctl, "ports", "del", port, check=False)
            cleanup.push(delete_leftover_flows, tb)
            for k in ("scheduler", "agent", "libdatcp"):
                if not os.path.isfile(jv[k]):
                    raise ReplayError(f"{jv[k]} missing: build it (mvn -q package -DskipTests "
                                      "-pl proto,scheduler,agent -am; make -C kmod)")
        tokens, jvms = {}, []
        if m["scheduler"]:
            tokens = start_scheduler(jv, ctl, work, logs, m["scheduler_conf"], hosts, cleanup,
                                     jvms, tb.receiver_ip(0))
        socks = {}
        if m["agents"]:
            socks = start_agents(jv, tb, work, logs, m["agent_mode"], m.get("agent_port"),
                                 tb.receiver_ip(0) if m["scheduler"] else "", tokens, cleanup,
                                 jvms)
        rp = Replay(spec, tb, socks, work, logs, force_cc=force_cc, timeout_s=timeout_s,
                    jvms=jvms)
        counters0 = tb.counters()
        jobs = asyncio.run(rp.main(progress))
        counters1 = tb.counters()
        if m["scheduler"]:
            try:
                with open(os.path.join(logs, "scheduler-jobs.json"), "w") as fh:
                    json.dump(http(ctl, "GET", f"https://127.0.0.1:{HTTP_PORT}/api/v1/jobs",
                                   os.path.join(work, "pki", "ca.pem")), fh)
            except OSError as e:
                log(f"  scheduler jobs view not saved: {e}")
    finally:
        cleanup.run()
    flows = rp.flow_records()
    samples = {"register_ms": [f["register_ms"] for f in flows if "register_ms" in f],
               # the map side's hold of a response's first byte for the agent's answer
               "hold_ms": [round((f["t_released"] - f["t_served"]) * 1e3, 2) for f in flows
                           if f.get("t_released") and f.get("registered") is not None],
               "driver_lag_ms": list(rp.lag_ms)}
    cc_seen = sorted(set().union(*(set(f["cc"]) for f in flows))) if flows else []
    dscp_seen = sorted(set().union(*(set(f["dscp"]) for f in flows))) if flows else []
    entry = {"jobs": jobs, "cc_seen": cc_seen, "dscp_seen": dscp_seen,
             "kernel_modes_seen": sorted(rp.kernel_modes),
             "duration_s": round(rp.duration_s, 2),
             "flows": len(flows),
             "registered": sum(1 for f in flows if f.get("registered")),
             "register_timeouts": sum(1 for f in flows if f.get("register_timeout")),
             "register_ms": quantiles(samples["register_ms"]),
             "hold_ms": quantiles(samples["hold_ms"]),
             "in_kernel": sum(1 for f in flows if f.get("in_kernel")),
             "suspended": sum(f["suspended"] for f in flows),
             "killed": sum(f["killed"] for f in flows),
             "forward_failures": rp.forward_failures(),
             "driver_lag_ms": quantiles(samples["driver_lag_ms"]),
             "data_threads": rp.data_threads,
             "process_cpu_s": rp.cpu_s,
             "runqueue_wait_s": rp.wait_s,
             "switch": switch_delta(counters0, counters1)}
    missing = [j["name"] for j in spec["jobs"] if j["name"] not in jobs]
    short = [n for n, r in jobs.items()
             if r["bytes"] != job_bytes(next(j for j in spec["jobs"] if j["name"] == n))]
    try:
        if missing or short:
            raise ReplayError(f"mode {mode}: {len(missing)} jobs not completed within "
                              f"{timeout_s:.0f} s after the last submit ({missing[:5]}), "
                              f"{len(short)} with bytes missing ({short[:5]})")
        check_mode(mode, cc_seen, dscp_seen, rp.kernel_modes)
    except (ModeCheckError, ReplayError) as e:
        e.entry, e.flows = entry, flows
        raise
    return entry, flows, samples


def quantiles(xs):
    """p50 / p95 / max of a list, None when empty."""
    if not xs:
        return None
    xs = sorted(xs)
    return {"p50": xs[len(xs) // 2], "p95": xs[min(len(xs) - 1, int(0.95 * len(xs)))],
            "max": xs[-1]}


def switch_delta(a, b):
    out = {}
    for k in ("bytes", "packets", "marks", "drops"):
        if a.get(k) is not None and b.get(k) is not None:
            out[k] = b[k] - a[k]
    out["peak_queue_bytes"] = b.get("peak_queue_bytes")
    return out


def delete_leftover_flows(tb):
    """Kernel entries of this testbed's shuffle flows an agent left (they hand live flows
    to their next start on SIGTERM; there is none), each deleted in its sender's namespace."""
    ns_of = {tb.sender_ip(i): ns for i, ns in enumerate(tb.senders)}
    for f in kernel.flow_list() or []:
        ip, _, port = f.get("src", "").rpartition(":")
        if ip in ns_of and port == str(SHUFFLE_PORT):
            kernel.flow_delete(ns_of[ip], f["src"], f["dst"])


def start_scheduler(jv, ctl, work, logs, extra, hosts, cleanup, jvms, ip):
    """The scheduler in namespace ctl at ip, with mutual TLS from a throwaway CA (as on the
    Docker cluster); returns a node token per host (minted over REST)."""
    data = os.path.join(work, "scheduler")
    os.makedirs(data)
    admin = secrets.token_hex(16)
    pki(work, "ca")
    d = pki(work, "server", "scheduler", f"IP:{ip}", "IP:127.0.0.1")
    props = {"auth.token": admin, "auth.nodes.required": "true",
             "tls.certFile": os.path.join(d, "scheduler.pem"),
             "tls.keyFile": os.path.join(d, "scheduler.key"),
             "tls.clientCaFile": os.path.join(d, "ca.pem"), "tls.clientAuth": "require",
             "jobs.attributesFrom": "reports", "yarn.rm.webappAddress": "",
             "planner.downlinkBitsPerSecond": LINK_MBPS * 1_000_000, "server.eventLoops": 1}
    props.update(extra)
    conf = os.path.join(work, "scheduler.properties")
    write_props(conf, props)
    write_props(os.path.join(logs, "scheduler.properties"),
                dict(props, **{"auth.token": "(generated for the run)"}))
    s = Jvm("scheduler", ctl, ["-Xmx192m", *JVM_SMALL,
                               f"-Xlog:gc:file={os.path.join(logs, 'scheduler-gc.log')}", "-jar", jv["scheduler"], "--data-dir",
                               data, "--grpc-port", str(GRPC_PORT), "--http-port",
                               str(HTTP_PORT), "--config", conf],
            os.path.join(logs, "scheduler.log"), "datcp scheduler ready", cleanup)
    jvms.append(s)
    try:
        s.wait_ready(time.time() + 120)
    except ReplayError as e:
        refused = [ln for ln in str(e).splitlines() if "planner.policy" in ln]
        if refused:
            raise ReplayError("the scheduler refuses planner.policy=order, the prio mode's "
                              f"planner (is it built from a main with it?): {refused[0][:300]}")
        raise
    tokens = {}
    for i in range(hosts):
        r = http(ctl, "POST", f"https://127.0.0.1:{HTTP_PORT}/api/v1/nodes/{host_name(i)}/token",
                 os.path.join(d, "ca.pem"), admin)
        tokens[i] = r["token"]
    return tokens


def start_agents(jv, tb, work, logs, mode, port, sched_ip, tokens, cleanup, jvms):
    socks, agents = {}, []
    for i, ns in enumerate(tb.senders):
        d = os.path.join(work, host_name(i))
        os.makedirs(os.path.join(d, "state"))
        tok, tls = "", {}
        if i in tokens:
            tok = os.path.join(d, "token")
            with open(tok, "w") as fh:
                fh.write(tokens[i])
            os.chmod(tok, 0o600)
            certs = pki(work, "client", host_name(i))
            tls = {"scheduler.caFile": os.path.join(certs, "ca.pem"),
                   "scheduler.certFile": os.path.join(certs, f"{host_name(i)}.pem"),
                   "scheduler.keyFile": os.path.join(certs, f"{host_name(i)}.key")}
        socks[i] = os.path.join(d, "agent.sock")
        props = {"agent.role": "host", "agent.host": host_name(i),
                 "local.socketPath": socks[i], "local.socketMode": "0600",
                 "kernel.enabled": "true", "kernel.library": jv["libdatcp"],
                 "kernel.shufflePorts": port or SHUFFLE_PORT,
                 "kernel.lineRateBitsPerSecond": LINK_MBPS * 1_000_000,
                 "scheduler.target": f"{sched_ip}:{GRPC_PORT}" if sched_ip else "",
                 "scheduler.tokenFile": tok, "policy.defaultMode": mode,
                 "state.dir": os.path.join(d, "state"), "state.journalBytes": 1 << 22,
                 "metrics.port": -1, **tls}
        conf = os.path.join(d, "agent.properties")
        write_props(conf, props)
        if i == 0:
            shutil.copy(conf, os.path.join(logs, "agent-h0.properties"))
        agents.append(Jvm(f"agent {host_name(i)}", ns,
                          ["-Xmx96m", *JVM_SMALL,
                           f"-Xlog:gc:file={os.path.join(logs, f'agent-{host_name(i)}-gc.log')}",
                           "-jar", jv["agent"], "--config", conf],
                          os.path.join(logs, f"agent-{host_name(i)}.log"), "datcp agent ready",
                          cleanup))
    jvms += agents
    deadline = time.time() + 180
    for a in agents:
        a.wait_ready(deadline)
    return socks


# ---------------------------------------------------------------- the whole run

def summary_line(mode, entry):
    jcts = sorted(r["jct_s"] for r in entry["jobs"].values())
    p95 = jcts[min(len(jcts) - 1, int(round(0.95 * (len(jcts) - 1))))]
    return (f"{mode:>6}: {len(jcts)} jobs, mean JCT {statistics.mean(jcts):.3f} s, "
            f"p95 {p95:.3f} s, cc {entry['cc_seen']}, dscp {entry['dscp_seen']}, "
            f"kernel modes {entry['kernel_modes_seen']}")


ADDED = ("flows", "registered", "register_timeouts", "in_kernel", "suspended", "killed",
         "forward_failures")
SAMPLED = ("register_ms", "hold_ms", "driver_lag_ms")


def merge_rounds(entries, samples, deadlines):
    """One mode's results entry from its rounds' entries (and their raw samples): per job
    the medians over the rounds of jct_s and copy_s, the rounds' jct_s in `rounds`, bytes
    (equal in every round: a round is only kept when its jobs have all their bytes) and
    deadline_met of the median jct_s, as the Docker runner's merge; the union of what the
    kernel was seen running; counts added up; the quantiles of the rounds' samples pooled;
    each round's own entry (without its jobs) under `per_round`."""
    jobs = {}
    for name in entries[0]["jobs"]:
        per = [e["jobs"][name] for e in entries]
        jct = statistics.median(p["jct_s"] for p in per)
        copies = [p["copy_s"] for p in per if p["copy_s"] is not None]
        deadline = deadlines.get(name)
        jobs[name] = {"jct_s": round(jct, 4),
                      "copy_s": round(statistics.median(copies), 4) if copies else None,
                      "deadline_met": None if deadline is None else jct <= deadline,
                      "bytes": per[0]["bytes"],
                      "rounds": [p["jct_s"] for p in per]}
    out = {"jobs": jobs}
    for k in ("cc_seen", "dscp_seen", "kernel_modes_seen"):
        out[k] = sorted(set().union(*(e[k] for e in entries)))
    out["duration_s"] = round(statistics.median(e["duration_s"] for e in entries), 2)
    for k in ADDED:
        out[k] = sum(e[k] for e in entries)
    for k in SAMPLED:
        out[k] = quantiles([x for s in samples for x in s[k]])
    out["data_threads"] = max(e.get("data_threads") or 0 for e in entries)
    for key in ("process_cpu_s", "runqueue_wait_s"):
        got = [e[key] for e in entries if e.get(key)]
        if got:
            out[key] = {k: round(statistics.median(c[k] for c in got), 2)
                        if all(c.get(k) is not None for c in got) else None for k in got[0]}
    sw = [e["switch"] for e in entries]
    out["switch"] = {k: sum(s[k] for s in sw) for k in ("bytes", "packets", "marks", "drops")
                     if all(s.get(k) is not None for s in sw)}
    peaks = [s["peak_queue_bytes"] for s in sw if s.get("peak_queue_bytes") is not None]
    out["switch"]["peak_queue_bytes"] = max(peaks) if peaks else None
    out["per_round"] = [{k: v for k, v in e.items() if k != "jobs"} for e in entries]
    return out


def run(spec, modes, out_dir, force_cc=None, timeout_s=900.0, rounds=1):
    """Every mode in turn, `rounds` times (round by round: round 1 of every mode, then round
    2, ..., so that the machine's load drifts over all modes alike), each round on a fresh
    testbed; writes out_dir/results.json after every round (and flows-MODE.json, logs/).
    A mode that fails a round is listed under failed_modes and not run again. Returns 0
    when every mode ran every round and passed its check, 1 otherwise."""
    for md in modes:
        if md not in MODES:
            raise SystemExit(f"--modes: unknown mode '{md}'; accepted: {', '.join(MODES)}")
    if rounds < 1:
        raise SystemExit(f"--rounds: must be an integer >= 1, not {rounds}")
    if not kernel.available():
        raise SystemExit(f"the trace replay needs {kernel.DATCPCTL} (make -C kmod)")
    check_placement(spec)
    os.makedirs(out_dir, exist_ok=True)
    install_signal_handlers()
    reap_stale()
    from .runner import boost_priority
    boost_priority()
    res = {"spec": spec["name"], "rounds": rounds, "generated_by": "bench/run trace",
           "hosts": spec["hosts"], "link_mbps": LINK_MBPS, "modes": {},
           # a job whose maps all sit on its reduces' hosts has no fabric limit: left out
           "alone": {j["name"]: round(alone_s(j), 4) for j in spec["jobs"] if alone_s(j) > 0}}
    failed = {}
    path = os.path.join(out_dir, "results.json")

    def progress(done, total, t):
        log(f"  {done}/{total} jobs done at t={t:.0f} s")

    deadlines = {j["name"]: j.get("deadline_s") for j in spec["jobs"]}
    entries = {md: [] for md in modes}
    samples = {md: [] for md in modes}
    flows = {md: [] for md in modes}

    def keep_flows(md, k, fl):
        flows[md] += [dict(f, round=k) for f in fl] if rounds > 1 else fl
        with open(os.path.join(out_dir, f"flows-{md}.json"), "w") as fh:
            json.dump(flows[md], fh)

    with kernel.Loaded():
        for k in range(1, rounds + 1):
            for md in modes:
                if md in failed:
                    continue
                log(f"trace replay: mode {md}" + (f", round {k}/{rounds}" if rounds > 1 else "")
                    + f", {len(spec['jobs'])} jobs on {spec['hosts']} hosts")
                try:
                    entry, fl, smp = run_mode(spec, md, out_dir, force_cc, timeout_s, progress,
                                              f"round-{k}" if rounds > 1 else "")
                    keep_flows(md, k, fl)
                    entries[md].append(entry)
                    samples[md].append(smp)
                    res["modes"][md] = merge_rounds(entries[md], samples[md], deadlines)
                    log(summary_line(md, entry))
                except (ModeCheckError, ReplayError) as e:
                    if getattr(e, "flows", None):
                        keep_flows(md, k, e.flows)
                    failed[md] = {"error": str(e)}
                    if rounds > 1:
                        failed[md]["round"] = k
                    if getattr(e, "entry", None):
                        failed[md].update({x: v for x, v in e.entry.items() if x != "jobs"})
                    res["modes"].pop(md, None)
                    log(f"mode {md} FAILED: {e}")
                if failed:
                    res["failed_modes"] = failed
                with open(path, "w") as fh:
                    json.dump(res, fh, indent=1)
    log(f"wrote {path}")
    return 1 if failed else 0
