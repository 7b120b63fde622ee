"""Network-namespace plumbing: creation, setns() from Python, cleanup.

Every namespace this package creates carries a run prefix ``db<pid>-`` so stale ones
from a crashed run can be recognised (their pid is dead) and removed, and concurrent
runs never collide.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import sys
import threading

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/var/run/netns"
_libc = ctypes.CDLL("libc.so.6", use_errno=True)
_tls = threading.local()


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(cmd, check=True, quiet=False, timeout=30):
    """Run a command (list), return stdout. Raises with stderr on failure."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def _setns_fd(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"setns: {os.strerror(e)}")


@contextlib.contextmanager
def in_netns(name):
    """Switch the *calling thread* into netns ``name`` for the block. Sockets created
    inside keep that namespace after the block ends."""
    if not hasattr(_tls, "home"):
        _tls.home = os.open(f"/proc/thread-self/ns/net", os.O_RDONLY)
    fd = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY)
    try:
        _setns_fd(fd)
        try:
            yield
        finally:
            _setns_fd(_tls.home)
    finally:
        os.close(fd)


def list_netns():
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def reap_stale():
    """Delete namespaces left by dead bench runs (prefix db<pid>-)."""
    n = 0
    for ns in list_netns():
        m = re.match(r"^db(\d+)-", ns)
        if m and not pid_alive(int(m.group(1))):
            sh(["ip", "netns", "del", ns], check=False)
            n += 1
    return n


class Cleanup:
    """Stack of cleanup callbacks run once, also on SIGINT/SIGTERM."""

    def __init__(self):
        self._stack = []
        self._done = False
        self._lock = threading.Lock()

    def push(self, fn, *a, **kw):
        self._stack.append((fn, a, kw))

    def run(self):
        with self._lock:
            if self._done:
                return
            self._done = True
            while self._stack:
                fn, a, kw = self._stack.pop()
                try:
                    fn(*a, **kw)
                except Exception as e:  # keep cleaning
                    log(f"cleanup: {fn.__name__}: {e}")


def kill_procs(procs):
    """Kill and reap the processes of the list that still run (a Cleanup callback: the
    list may grow after it is pushed)."""
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def install_signal_handlers():
    """Turn SIGTERM (and SIGINT, SIGHUP) into exceptions so ``finally`` blocks run."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            signal.signal(s, handler)
        except ValueError:  # not main thread
            pass
