"""Registration latency from the NodeManagers' DatcpShuffleFlows counters (README.md here).

    python3 latency.py DIR/raw/round-1-shuffle-service.json DIR/raw/round-2-... ...

Each file is one round's JMX of every NodeManager (cumulative since the cluster started);
prints the sums per file and, from the second file on, the difference to the one before (that
round alone): counts, quantiles as the histogram bucket that holds them, and the buckets.
"""
import json
import sys

BOUNDS = [1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 1000, 2000]


def totals(path):
    tot = {}
    for beans in json.load(open(path)).values():
        for bean in (beans or {}).get("beans", []):
            for k, v in bean.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    tot[k] = tot.get(k, 0) + v
    return tot


def show(label, t):
    n = t["FlowsRegistered"]
    cum = [t["RegisterAnsweredWithin%dms" % b] for b in BOUNDS]

    def quantile(p):
        lo = 0
        for b, c in zip(BOUNDS, cum):
            if c >= p * n:
                return "(%d,%d]" % (lo, b)
            lo = b
        return ">2000"

    top, lo, prev = None, 0, 0
    for b, c in zip(BOUNDS, cum):
        if c > prev:
            top = "(%d,%d]" % (lo, b)
        prev, lo = c, b
    print("%s: registered %d, not registered %d, register timeouts %d, untagged %d; "
          "p50 %s p90 %s p99 %s max %s ms" % (label, n, t["FlowsNotRegistered"],
                                               t["RegisterTimeouts"], t["FlowsUntagged"],
                                               quantile(.5), quantile(.9), quantile(.99), top))
    print("  within N ms: " + " ".join("%d:%d" % (b, c) for b, c in zip(BOUNDS, cum)))


prev = None
for f in sys.argv[1:]:
    t = totals(f)
    show(f + " (cumulative)", t)
    if prev:
        show(f + " (this round)", {k: t[k] - prev.get(k, 0) for k in t})
    prev = t
