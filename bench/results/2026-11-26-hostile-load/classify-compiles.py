import re, sys, collections
log, t0, t1 = sys.argv[1], float(sys.argv[2]) * 1000, float(sys.argv[3]) * 1000
pk = collections.Counter(); deopt = collections.Counter(); lvl = collections.Counter()
datcp = collections.Counter()
for line in open(log, errors="replace"):
    m = re.match(r"\s*(\d+)\s+\d+\s+([%sbn!]*)\s*(\d)\s+(\S+)", line)
    if not m:
        continue
    t = int(m.group(1))
    if not (t0 <= t < t1):
        continue
    meth = m.group(4)
    cls = meth.split("::")[0]
    parts = cls.split(".")
    key = ".".join(parts[:3]) if parts[0] in ("io", "com", "org") else ".".join(parts[:2])
    if "made not entrant" in line:
        deopt[key] += 1
        continue
    if "made zombie" in line:
        continue
    pk[key] += 1
    lvl[m.group(3)] += 1
    if cls.startswith("io.datcp"):
        datcp[cls.rsplit(".", 1)[0]] += 1
print("compiles", sum(pk.values()), "by level", dict(lvl))
for k, v in pk.most_common(15):
    print(f"{v:6d} {k}")
print("made not entrant", sum(deopt.values()))
for k, v in deopt.most_common(8):
    print(f"{v:6d} {k}")
print("io.datcp by package")
for k, v in datcp.most_common(12):
    print(f"{v:6d} {k}")
