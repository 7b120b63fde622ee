#!/usr/bin/env python3
"""Writes tests/vectors/*.csv: the expected values of dcudp_core.h computed
independently from the paper's formulas (shared/seeds/dcudp.txt) with exact
fractions, so that the C core is checked against a second reading of the
text, not against itself. Run it after changing a formula; commit its output.
"""
from fractions import Fraction as F
from math import floor
import os

OUT = os.path.join(os.path.dirname(__file__), "vectors")
NS = 10**9
Q = 1024
K = 4


def write(name, comment, cols, rows):
    with open(os.path.join(OUT, name), "w") as f:
        f.write("# " + comment + "\n")
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join(str(v) for v in r) + "\n")


def line_rate(bps, pkt):
    # Rate_data = C * 10^6 / (8 * PktSize), at least 1
    return max(1, bps // (8 * pkt))


def rate_floor(rtt):
    return max(1, NS // max(rtt, 1))


def ecn_cut(rate, rate_data, n_ecn, n_ack, rtt):
    # Eq. 1/2: rate / (1 + n_ecn / (n_ack * Rate_data * RTT)), RTT in seconds
    w = F(rate_data * rtt, NS) * max(n_ack, 1)
    if w == 0 and n_ecn == 0:
        return rate
    return floor(F(rate) / (1 + F(n_ecn) / w))


def clamp(r, lo, hi):
    return min(max(r, lo), hi)


class Rate:
    def __init__(self, line):
        self.line = line
        self.data = self.max = line
        self.n_ack = self.n_ecn = 0
        self.freeze = False

    def ack(self, ece, rtt):
        fl = rate_floor(rtt)
        self.n_ack += 1
        if ece:
            self.n_ecn += 1
            if not self.freeze:
                d = self.data
                self.data = ecn_cut(self.data, d, self.n_ecn, self.n_ack, rtt)
                self.max = ecn_cut(self.max, d, self.n_ecn, self.n_ack, rtt)
                self.max = clamp(self.max, fl, self.line)
                self.data = clamp(self.data, fl, self.line)
                self.freeze = True
            return
        if self.data >= self.max:  # the reading taken: Rate_max += 1/RTT; Rate_data = Rate_max
            self.max = clamp(self.max + fl, fl, self.line)
            self.data = self.max
        else:  # doubling up to Rate_max
            self.data = clamp(min(self.data * 2, self.max), fl, self.line)

    def nak(self, rtt):
        fl = rate_floor(rtt)
        self.n_ack += 1
        self.n_ecn += 1
        if self.freeze:
            return
        self.data = clamp(fl, fl, self.line)
        self.max = clamp(self.max // 2, fl, self.line)
        self.freeze = True


def rtt_update(rtt, sample):
    if rtt == 0:
        return sample
    return rtt - (rtt >> 3) + (sample >> 3)


def trend(samples):
    # Eq. 3/4 over the last K samples, oldest first
    w = samples[-K:]
    if len(w) < 2:
        return 0
    le = sum(1 for i in range(1, len(w)) if w[i] <= w[i - 1])
    return le * Q // (len(w) - 1)


def exit_step(rtts, pecns, cond1):
    if len(rtts) < K or len(pecns) < K or pecns[-1] != 0:
        return 0
    pr, pe = trend(rtts), trend(pecns)
    if cond1 and pr == Q and pe == Q:
        return 2
    if pe >= Q // 2 and pr >= Q // 5:  # theta_ecn 0.5, theta_RTT 0.2
        return 1
    return 0


def th_max(qmax, n, rtt_idle, delay, interval):
    # th + N (RTT_idle + th Delay) / Interval - (RTT_idle + th Delay) / Delay <= Max_qsize
    for th in range(qmax, 0, -1):
        t = F(rtt_idle + th * delay)
        if th + n * t / interval - t / delay <= qmax:
            return th
    return 0


def main():
    os.makedirs(OUT, exist_ok=True)
    write("line_rate.csv", "Rate_data = C * 10^6 / (8 PktSize) packets/s (section IV-A.3)",
          ["link_bps", "pkt_bytes", "expected_pps"],
          [(b, p, line_rate(b, p)) for b, p in [(100_000_000, 1500), (1_000_000_000, 1500), (10_000_000_000, 1500),
                                                (50_000_000, 1500), (100_000_000, 9000), (1000, 1500)]])
    write("interval.csv", "Interval_data = 1 / Rate_data in ns (120 us is 100 Mbit/s of 1500 B)",
          ["rate_pps", "expected_ns"],
          [(r, NS // max(r, 1)) for r in [8333, 83333, 1, 0, 10000, 3]])
    write("rate_floor.csv", "1/RTT packets/s: one packet per RTT", ["rtt_ns", "expected_pps"],
          [(r, rate_floor(r)) for r in [100_000, 1_000_000, 30_000_000, 0, 2 * NS, 333_333]])
    cuts = [(8333, 8333, 1, 1, 100_000), (8333, 8333, 1, 1, 1_000_000), (8333, 8333, 10, 10, 1_000_000),
            (8333, 8333, 5, 10, 10_000_000), (4000, 2000, 3, 4, 500_000), (100, 100, 1, 1, 1_000_000),
            (10, 10, 1, 1, 100_000), (833333, 833333, 7, 9, 100_000)]
    write("ecn_cut.csv", "Eq. 1/2: rate / (1 + n_ecn / (n_ack Rate_data RTT)), floored",
          ["rate", "rate_data", "n_ecn", "n_ack", "rtt_ns", "expected"],
          [c + (ecn_cut(*c),) for c in cuts])
    rows = []
    # scenario: op per row; the state after the op
    scen = {
        1: (8333, [("ack_ece", 1_000_000), ("ack_ece", 1_000_000), ("sent", 0), ("ack_ece", 1_000_000),
                   ("sent", 0), ("ack", 1_000_000), ("ack", 1_000_000), ("ack", 1_000_000)]),
        2: (8333, [("ack", 2_000_000), ("nak", 2_000_000), ("nak", 2_000_000), ("sent", 0), ("ack", 2_000_000),
                   ("ack", 2_000_000), ("ack", 2_000_000), ("ack", 2_000_000), ("ack", 2_000_000), ("ack", 2_000_000),
                   ("ack", 2_000_000), ("ack", 2_000_000), ("ack", 2_000_000), ("ack", 2_000_000)]),
        3: (8333, [("nak", 100_000_000), ("sent", 0), ("ack_ece", 100_000_000), ("sent", 0), ("nak", 100_000_000)]),
        4: (200, [("ack_ece", 1_000_000), ("sent", 0), ("ack_ece", 1_000_000), ("sent", 0), ("ack_ece", 1_000_000),
                  ("sent", 0), ("ack", 1_000_000), ("ack", 1_000_000)]),
    }
    for sid, (line, ops) in scen.items():
        r = Rate(line)
        for op, rtt in ops:
            if op == "ack":
                r.ack(False, rtt)
            elif op == "ack_ece":
                r.ack(True, rtt)
            elif op == "nak":
                r.nak(rtt)
            else:
                r.freeze = False
            rows.append((sid, line, op, rtt, r.data, r.max, r.n_ack, r.n_ecn, int(r.freeze)))
    write("rate_law.csv", "Fig. 4 in sequence: each scenario starts at Rate_data = Rate_max = line (entering "
          "Congestion Mode); op ack|ack_ece|nak|sent; the state after it",
          ["scenario", "line_pps", "op", "rtt_ns", "rate_data", "rate_max", "n_ack", "n_ecn", "freeze"], rows)
    pairs = [(0, 500_000), (1_000_000, 1_000_000), (1_000_000, 2_000_000), (8_000_000, 0), (123_456, 654_321)]
    write("rtt.csv", "RTT = (1 - 0.125) RTT + 0.125 RTT_current (first sample taken as is)",
          ["rtt_ns", "sample_ns", "expected_ns"], [(a, b, rtt_update(a, b)) for a, b in pairs])
    seqs = [[5], [5, 4], [5, 6], [4, 3, 2, 1], [1, 2, 3, 4], [1, 1, 1, 1], [9, 1, 5, 5, 4, 3], [3, 1, 2, 4, 4, 9],
            [0, 512, 256, 0]]
    write("trend.csv", "Eq. 3/4: fraction (Q10) of the K=4 latest samples not above their predecessor; "
          "samples s1.. pushed in order (n of them), 0 = no trend",
          ["n", "s1", "s2", "s3", "s4", "s5", "s6", "expected_q", "latest"],
          [(len(s),) + tuple(s + [0] * (6 - len(s))) + (trend(s), s[-1]) for s in seqs])
    ex = [([400, 350, 300, 250], [512, 256, 0, 0], False), ([400, 350, 300, 250], [512, 256, 0, 0], True),
          ([400, 450, 300, 500], [512, 256, 0, 0], False), ([400, 450, 500, 550], [512, 256, 0, 0], False),
          ([400, 350, 300, 250], [512, 256, 128, 256], False), ([400, 350, 300, 250], [0, 256, 0, 0], True),
          ([300, 300, 300, 300], [0, 0, 0, 0], True), ([400, 350, 300], [512, 256, 0, 0], True),
          ([400, 350, 360, 250], [512, 256, 0, 0], True), ([400, 450, 460, 250], [0, 256, 512, 0], False)]
    write("exit.csv", "Conditions 1 (1: Interval_ACK = beta RTT_idle) and 2 (2: quit) of section IV-C, "
          "windows of RTT samples r1.. and p_ecn (Q10) p1..p4, oldest first",
          ["nr", "r1", "r2", "r3", "r4", "p1", "p2", "p3", "p4", "cond1", "expected"],
          [(len(r),) + tuple(r + [0] * (4 - len(r))) + tuple(p) + (int(c), exit_step(r, p, c)) for r, p, c in ex])
    th = [(2796, 20, 100_000, 12_000, 7_500),     # paper V-A: 4 MB, 20 senders of 1.6 Gbit/s into 1 Gbit/s
          (2796, 1, 100_000, 12_000, 7_500),
          (133, 20, 1_000_000, 120_000, 75_000),  # 100 Mbit/s, 200 KB, scaled 10x slower
          (133, 4, 1_000_000, 120_000, 120_000),
          (10, 20, 100_000, 12_000, 1_000)]
    write("th_max.csv", "section IV-A.1: the largest th_max (packets) with th + N (RTT_idle + th Delay)/Interval "
          "- (RTT_idle + th Delay)/Delay <= Max_qsize; times in ns",
          ["max_qsize", "n", "rtt_idle_ns", "delay_ns", "interval_ns", "expected"],
          [t + (th_max(*t),) for t in th])
    write("p_ecn.csv", "CE fraction of K data packets, Q10", ["ce", "packets", "expected_q"],
          [(c, p, min(c, p) * Q // p if p else 0) for c, p in [(0, 4), (1, 4), (4, 4), (3, 0), (5, 4)]])


if __name__ == "__main__":
    main()
