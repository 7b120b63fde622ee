import json,sys,re
res=sys.argv[1]
d=json.load(open(res+"/ab-diag.json"))  # written by sample-on.sh
IP={"10.213.3.10":"nm1","10.213.4.10":"nm2","10.213.5.10":"nm3"}
def samples(fn):
    t=None
    for line in open(fn):
        line=line.strip()
        if line.startswith("T "): t=int(line[2:]); continue
        if line.startswith("[") or line.startswith("{"):
            try: yield t, json.loads(line)
            except Exception: pass
jobs=list(samples(res+"/jobs.log")); flows=list(samples(res+"/flows.log"))
only=[int(x) for x in sys.argv[2:]]
for i,r in enumerate(d["rounds"]):
    if only and i+1 not in only: continue
    rel=r["releasedAtMillis"]*1_000_000
    A,B=r["jobA"]["jobId"],r["jobB"]["jobId"]
    print(f"=== round {i+1} B={B[-4:]} Bcopy={r['jobB']['copyMillis']} Bff={r['jobB']['reduces'][0]['firstFetchMillis']} Aff={r['jobA']['reduces'][0]['firstFetchMillis']} Bmaps={[ (m['host'],m['finishMillis']) for m in r['jobB']['maps']]} Amaps={[ (m['host'],m['finishMillis']) for m in r['jobA']['maps']]}")
    last={}
    for t,j in jobs:
        ms=(t-rel)/1e6
        if ms< -500 or ms>4000: continue
        for job in j["jobs"]:
            if job["id"] not in (A,B): continue
            tag="B" if job["id"]==B else "A"
            rd=job["reduces"][0]
            st=(job["mapsDone"],rd["remainingBytes"]//1000000,rd["deadlineReason"][:110])
            if last.get(tag)!=st:
                print(f"  {ms:7.0f} sched {tag} maps {job['mapsDone']}/{job['totalMaps']} rem {rd['remainingBytes']/1e6:.1f}MB fetched {rd['fetchedBytes']/1e6:.1f} dl {(rd['deadlineUnixNanos']-t)/1e6 if rd['deadlineUnixNanos'] else None} | {rd['deadlineReason'][:150]}")
                last[tag]=st
    lastf={}
    for t,fl in flows:
        ms=(t-rel)/1e6
        if ms< -500 or ms>4000: continue
        for f in fl:
            src=f["src"].split(":")[0]; key=IP.get(src,src)+">"+f["dst"].split(":")[-1]
            if not f["dst"].startswith("10.213.6.10"): continue
            s=f.get("stats",{})
            st=(f.get("epoch"),f.get("importance"),f.get("phi"),f.get("size_bytes"),f.get("mode"),f.get("quench_mode"), s.get("finished"), s.get("quench"))
            if lastf.get(key)!=st or int(ms)//250!=lastf.get(key+"t"):
                print(f"  {ms:7.0f} flow {key} ep {f.get('epoch')} I {f.get('importance')} phi {f.get('phi')} size {f.get('size_bytes')} dl {f.get('deadline_in_ms')} acked {s.get('bytes_acked',0)/1e6:.1f}MB U {s.get('urgency')} P {s.get('precedence')} cwnd {s.get('cwnd')} r {s.get('r_avg_bps',0)/1e6:.0f}M q {s.get('quench')} fin {s.get('finished')}")
                lastf[key]=st; lastf[key+"t"]=int(ms)//250
