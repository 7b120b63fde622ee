import re, sys, collections
log, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
text = open(log, errors='replace').read()
# uncommon traps (with their first jvms line) and not-entrant events in the window
trap_re = re.compile(r"<uncommon_trap thread='\d+' reason='([^']*)' action='([^']*)'[^>]*?compile_id='(\d+)'[^>]*?stamp='([\d.]+)'>\s*<jvms bci='(\d+)' method='([^']*)'")
reasons = collections.Counter(); where = collections.Counter()
for m in trap_re.finditer(text):
    r, a, cid, st, bci, meth = m.groups()
    if t0 <= float(st) <= t1:
        reasons[(r, a)] += 1
        where[(r, meth.split(' ')[0] + ' ' + meth.split(' ')[1] if ' ' in meth else meth, bci)] += 1
print("traps by reason/action:")
for k, v in reasons.most_common(): print(f"  {v:4d} {k}")
print("traps by place:")
for k, v in where.most_common(60): print(f"  {v:4d} {k}")
