"""The star testbed: N sender hosts, M receivers, one switch namespace with a Linux
bridge; every host hangs off the switch by a veth pair. Switch egress ports toward
receivers (and toward senders when ``symmetric``) are emulated switch ports:
HTB at the link rate + bfifo buffer + the AQM tc program (through kernel.py)."""
from __future__ import annotations

import os

from . import kernel
from .netns import Cleanup, log, sh

# receiver hosts are RECEIVER_NET + (j + 1)
RECEIVER_NET = "10.10.2."


class Testbed:
    def __init__(self, n_senders, n_receivers, link_mbps=100, switch=None,
                 cleanup: Cleanup | None = None, prefix=None, rto_min_ms=10):
        self.n_senders = n_senders
        self.n_receivers = n_receivers
        self.link_mbps = link_mbps
        self.rto_min_ms = rto_min_ms
        self.switch = dict(switch or {})
        self.prefix = prefix or f"db{os.getpid()}-"
        self.sw = self.prefix + "sw"
        self.senders = [self.prefix + f"s{i}" for i in range(n_senders)]
        self.receivers = [self.prefix + f"r{j}" for j in range(n_receivers)]
        self.cleanup = cleanup or Cleanup()
        self.switch_ports = []      # (ns, dev) emulated ports
        self.port_impl = None       # "datcpctl" or "tc"

    # addressing
    def sender_ip(self, i):
        return f"10.10.1.{i + 1}"

    def receiver_ip(self, j):
        return f"{RECEIVER_NET}{j + 1}"

    def all_hosts(self):
        return [(ns, self.sender_ip(i), f"s{i}") for i, ns in enumerate(self.senders)] + \
               [(ns, self.receiver_ip(j), f"r{j}") for j, ns in enumerate(self.receivers)]

    def _add_ns(self, ns):
        sh(["ip", "netns", "add", ns])
        self.cleanup.push(sh, ["ip", "netns", "del", ns], check=False)
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])

    def up(self):
        self._add_ns(self.sw)
        sh(["ip", "-n", self.sw, "link", "add", "br0", "type", "bridge",
            "stp_state", "0", "forward_delay", "0"])
        sh(["ip", "-n", self.sw, "link", "set", "br0", "up"])
        cmds = []
        for ns, ip, port in self.all_hosts():
            self._add_ns(ns)
            sh(["ip", "link", "add", "eth0", "netns", ns, "type", "veth",
                "peer", "name", port, "netns", self.sw])
            sh(["ip", "-n", self.sw, "link", "set", port, "master", "br0"])
            sh(["ip", "-n", self.sw, "link", "set", port, "up"])
            sh(["ip", "-n", ns, "addr", "add", f"{ip}/16", "dev", "eth0"])
            sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
            # rto_min 10 ms as in the DATCP paper (Table 1) unless the scenario says
            sh(["ip", "-n", ns, "route", "replace", "10.10.0.0/16", "dev", "eth0",
                "proto", "kernel", "scope", "link", "src", ip, "rto_min",
                f"{self.rto_min_ms}ms"])
            cmds.append((ns, "eth0"))
            cmds.append((self.sw, port))
            script = ("sysctl -qw net.ipv4.tcp_ecn=1 net.ipv4.tcp_no_metrics_save=1 "
                      "net.ipv4.tcp_min_tso_segs=1 && "
                      "ethtool -K eth0 tso off gso off gro off >/dev/null 2>&1 || true")
            sh(["ip", "netns", "exec", ns, "sh", "-c", script])
        ports = " ".join(p for _, _, p in self.all_hosts())
        sh(["ip", "netns", "exec", self.sw, "sh", "-c",
            f"for p in {ports}; do ethtool -K $p tso off gso off gro off >/dev/null 2>&1; done; true"])
        # emulated switch ports
        egress = [f"r{j}" for j in range(self.n_receivers)]
        if self.switch.get("symmetric"):
            egress += [f"s{i}" for i in range(self.n_senders)]
        for dev in egress:
            self.port_impl = kernel.switch_configure(self.sw, dev, self.link_mbps, self.switch)
            self.switch_ports.append((self.sw, dev))
            self.cleanup.push(kernel.switch_reset, self.sw, dev, self.port_impl)
        return self

    def counters(self):
        """Sum of counters over all emulated ports; peak is the max."""
        tot = {"bytes": 0, "packets": 0, "marks": 0, "drops": 0, "peak_queue_bytes": 0}
        per = {}
        for ns, dev in self.switch_ports:
            c = kernel.switch_counters(ns, dev, self.port_impl)
            per[dev] = c
            for k in ("bytes", "packets", "marks", "drops"):
                if c.get(k) is None:
                    tot[k] = None
                elif tot[k] is not None:
                    tot[k] += c[k]
            pk = c.get("peak_queue_bytes")
            if pk is None:
                tot["peak_queue_bytes"] = None
            elif tot["peak_queue_bytes"] is not None:
                tot["peak_queue_bytes"] = max(tot["peak_queue_bytes"], pk)
        tot["ports"] = per
        return tot

    def down(self):
        self.cleanup.run()
