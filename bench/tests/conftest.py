import json
import os
import subprocess
import sys

import pytest

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(BENCH, "run")
sys.path.insert(0, BENCH)

from datcpbench import kernel  # noqa: E402

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
needs_kmod = pytest.mark.skipif(not kernel.available(),
                                reason=f"{kernel.DATCPCTL} missing (make -C kmod)")


def bench_json(*args, timeout=240):
    # the CPU is shared with builds: keep softirq processing (the emulated ports) from
    # being starved; restored by the run's cleanup
    env = dict(os.environ, DATCPBENCH_BOOST_SOFTIRQ="1")
    r = subprocess.run([RUN, *args, "--json"], capture_output=True, text=True, timeout=timeout,
                       env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    assert len(lines) == 1, f"--json must print exactly one object, got: {r.stdout[:500]}"
    return json.loads(lines[0])


def our_netns():
    try:
        return [n for n in os.listdir("/var/run/netns") if n.startswith("db")]
    except FileNotFoundError:
        return []


@pytest.fixture(autouse=True)
def no_leftover_netns():
    before = set(our_netns())
    yield
    left = set(our_netns()) - before
    assert not left, f"namespaces left behind: {left}"


def bench_until(pred, *args, tries=2):
    """Run up to `tries` times until pred(result) holds (a contended CPU can spoil one
    run); returns the last result."""
    for _ in range(tries):
        r = bench_json(*args)
        if pred(r):
            break
    return r
