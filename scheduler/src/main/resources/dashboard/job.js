// Job page: per-reduce shuffle progress with the planner's deadline and reason, and every flow:
// those in flight with the policy they are told now (deadline, importance, phi, mode, class,
// reason), those ended with their outcome in words (from /api/v1/dashboard/jobs/{id}).
"use strict";

const POLL_MS = 2000;
const jobId = param("id");

function renderHeader(page) {
  const job = page.job;
  document.getElementById("job-id").textContent = job.id + (job.name ? " (" + job.name + ")" : "");
  document.getElementById("job-state").textContent = job.state;
  document.getElementById("job-maps").textContent = job.mapsDone + "/" + job.totalMaps + " done";
  document.getElementById("job-shuffle").textContent = seconds(job.shuffleTimeNanos);
  document.getElementById("job-completion").textContent = seconds(job.completionTimeNanos);
  document.getElementById("job-met").textContent = job.flowsMet + "/" + job.flows + " ("
      + ratio(job.deadlineMetRatio) + ")";
  const p = job.policy;
  document.getElementById("job-policy").textContent = "Queue " + (job.queue || "?") + ", user "
      + (job.user || "?") + ". Operator policy: " + (p.rule ? "rule '" + p.rule + "'" : "defaults")
      + ": importance " + p.importance + ", \u03c6 " + p.phi + ", mode " + p.mode + ", quench "
      + p.quenchMode + ".";
}

function renderReduces(job, now) {
  const body = document.querySelector("#reduces tbody");
  body.replaceChildren();
  for (const r of job.reduces) {
    const tr = document.createElement("tr");
    tr.dataset.reduce = String(r.id);
    cell(tr, r.id);
    tr.appendChild(el("td")).appendChild(hostLink(r.host));
    const total = r.fetchedBytes + r.remainingBytes;
    const share = r.shuffleFinishUnixNanos > 0 ? 1 : total > 0 ? r.fetchedBytes / total : 0;
    tr.appendChild(el("td")).appendChild(progressBar(share, r.shuffleFinishUnixNanos > 0
        ? "finished" : mb(r.fetchedBytes) + " of " + mb(total)));
    cell(tr, mb(r.remainingBytes));
    cell(tr, r.deadlineUnixNanos > 0 ? "in " + seconds(Math.max(1, r.deadlineUnixNanos - now))
        : "-", "deadline");
    cell(tr, r.deadlineReason || (r.shuffleFinishUnixNanos > 0 ? "shuffle finished" : ""),
        "reason");
    body.appendChild(tr);
  }
}

function flowRow(cls, reduceId, from, bytes) {
  const tr = document.createElement("tr");
  tr.className = cls;
  cell(tr, reduceId);
  cell(tr, from);
  cell(tr, mb(bytes));
  return tr;
}

function renderFlows(page) {
  const body = document.querySelector("#flows tbody");
  body.replaceChildren();
  for (const plan of page.plans) {
    for (const f of plan.flows) {
      const p = f.policy;
      const tr = flowRow("in-flight", f.reduceId, f.agentHost, f.bytes);
      tr.dataset.importance = String(p.importance);
      tr.dataset.phi = String(p.phi);
      tr.dataset.mode = p.mode;
      cell(tr, plan.firstFlowUnixNanos > 0 ? clock(plan.firstFlowUnixNanos) : "-");
      cell(tr, p.deadlineUnixNanos > 0 ? clock(p.deadlineUnixNanos) : "none");
      cell(tr, p.importance);
      cell(tr, p.phi);
      cell(tr, p.mode + ", quench " + p.quenchMode);
      cell(tr, f.precedenceClass, "class");
      cell(tr, "in flight to " + plan.host + " (" + (plan.rank > 0 ? "rank " + plan.rank
          : plan.rank === 0 ? "waiting for maps" : "not planned") + ")", "outcome");
      cell(tr, p.reason, "reason");
      body.appendChild(tr);
    }
  }
  // ended flows, newest first
  for (const e of page.flows.slice().reverse()) {
    const o = e.outcome;
    const tr = flowRow("ended " + (o.met ? "met" : "missed"), o.reduceId, o.sourceHost, o.bytes);
    tr.dataset.quench = o.quench;
    cell(tr, clock(o.startUnixNanos));
    cell(tr, o.deadlineUnixNanos > 0 ? seconds(o.deadlineUnixNanos - o.startUnixNanos)
        + " after start" : "none");
    // The scheduler keeps the agent's report of an ended flow, not the policy it was told: show
    // what its job's flows get now (the host's plan while it shuffles, else the rules' decision).
    const plan = page.plans.find(p => p.reduces.includes(o.reduceId));
    const p = plan ? plan.policy : page.job.policy;
    cell(tr, p.importance, "now");
    cell(tr, p.phi, "now");
    cell(tr, p.mode + ", quench " + p.quenchMode, "now");
    cell(tr, plan ? plan.precedenceClass : "", "class now");
    cell(tr, e.words, "outcome");
    cell(tr, plan ? plan.policy.reason : "", "reason");
    body.appendChild(tr);
  }
}

/** Maps done against time: a step per completion reported by a reduce, from the job's start. */
function drawMaps(page) {
  const job = page.job;
  const times = page.mapCompletionsUnixNanos;
  const container = document.getElementById("maps-chart");
  container.dataset.points = String(times.length);
  document.getElementById("maps-note").textContent = times.length > 0
      ? times.length + " of " + job.totalMaps + " maps reported completed by a reduce"
      : job.state === "running" ? "no map reported completed yet"
      : "per-map times are released when a job ends (" + job.mapsDone + " of " + job.totalMaps
          + " were done)";
  container.hidden = times.length === 0;
  if (times.length === 0) {
    return;
  }
  // from the job's start, a step per completion, flat until now
  const xs = [job.startUnixNanos / NS_PER_S].concat(Array.from(times, t => t / NS_PER_S),
      [page.nowUnixNanos / NS_PER_S]);
  const ys = xs.map((x, i) => Math.min(i, times.length));
  chart(container, {
    height: 200,
    scales: { x: { time: true }, y: { range: [0, Math.max(1, job.totalMaps)] } },
    axes: [{}, { label: "maps done" }],
    series: [{ label: "time" }, { label: "maps done", stroke: PALETTE[0],
      paths: uPlot.paths.stepped({ align: 1 }), points: { show: true, size: 6 } }],
  }, [xs, ys]);
}

async function refresh() {
  const page = await getJson("/api/v1/dashboard/jobs/" + encodeURIComponent(jobId));
  renderHeader(page);
  drawMaps(page);
  renderReduces(page.job, page.nowUnixNanos);
  renderFlows(page);
  document.body.dataset.updated = String(page.nowUnixNanos);
}

poll(refresh, POLL_MS);
