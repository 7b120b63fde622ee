// Overview: finished jobs' completion times over time, their CDF and the deadline-met ratio
// over time (from /api/v1/dashboard/overview, filtered by queue, user and finish time), and the
// table of every job (from /api/v1/jobs).
"use strict";

const POLL_MS = 5000;

function fillSelect(select, values) {
  const chosen = select.value;
  const have = Array.from(select.options).map(o => o.value);
  for (const v of values) {
    if (!have.includes(v)) {
      select.appendChild(el("option", v)).value = v;
    }
  }
  select.value = chosen;
}

function overviewQuery() {
  const q = new URLSearchParams();
  const queue = document.getElementById("filter-queue").value;
  const user = document.getElementById("filter-user").value;
  const range = Number(document.getElementById("filter-range").value);
  if (queue) {
    q.set("queue", queue);
  }
  if (user) {
    q.set("user", user);
  }
  if (range > 0) {
    q.set("since", String(BigInt(Date.now()) * 1000000n - BigInt(range) * 1000000000n));
  }
  return "/api/v1/dashboard/overview?" + q.toString();
}

/** One points-only series per queue (or user): finish time against completion time. */
function drawCompletion(jobs) {
  const by = document.getElementById("group-by").value;
  const groups = Array.from(new Set(jobs.map(j => j[by] || "(unknown)"))).sort();
  const points = groups.map(g => jobs.filter(j => (j[by] || "(unknown)") === g)
      .map(j => [j.finishUnixNanos / NS_PER_S, j.completionSeconds]));
  const container = document.getElementById("completion-chart");
  container.dataset.points = String(jobs.length);
  container.dataset.series = groups.join(",");
  chart(container, {
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
    axes: [{}, { label: "completion time (s)" }],
    series: [{ label: "finished" }].concat(groups.map((g, i) => ({
      label: by + " " + g,
      stroke: PALETTE[i % PALETTE.length],
      fill: PALETTE[i % PALETTE.length],
      paths: () => null,
      points: { show: true, size: 8 },
    }))),
  }, aligned(points));
}

function drawCdf(cdf) {
  const container = document.getElementById("cdf-chart");
  container.dataset.points = String(cdf.length);
  container.dataset.median = cdf.length === 0 ? ""
      : String(cdf.find(p => p.fraction >= 0.5).completionSeconds);
  const xs = [0].concat(cdf.map(p => p.completionSeconds));
  const ys = [0].concat(cdf.map(p => p.fraction));
  chart(container, {
    scales: { x: { time: false }, y: { range: [0, 1] } },
    axes: [{ label: "completion time (s)" }, { label: "share of jobs" }],
    series: [{ label: "completion time (s)" }, {
      label: "jobs finished within",
      stroke: PALETTE[0],
      paths: uPlot.paths.stepped({ align: 1 }),
    }],
  }, [xs, ys]);
}

function drawMetRatio(points, bucketNanos) {
  const container = document.getElementById("met-chart");
  container.dataset.points = String(points.length);
  container.dataset.ratios = points.map(p => p.ratio.toFixed(3)).join(",");
  chart(container, {
    scales: { x: { time: true }, y: { range: [0, 1] } },
    axes: [{}, { label: "deadline-met ratio" }],
    series: [{ label: "interval of " + (bucketNanos / NS_PER_S) + " s from" }, {
      label: "flows met / flows",
      stroke: PALETTE[2],
      points: { show: true, size: 7 },
    }],
  }, [points.map(p => p.startUnixNanos / NS_PER_S), points.map(p => p.ratio)]);
}

function renderJobs(data) {
  document.getElementById("running-jobs").textContent = data.overall.runningJobs;
  document.getElementById("overall-flows").textContent = data.overall.flows;
  document.getElementById("overall-met-ratio").textContent = ratio(data.overall.deadlineMetRatio);
  const body = document.querySelector("#jobs tbody");
  body.replaceChildren();
  for (const job of data.jobs) {
    const tr = document.createElement("tr");
    tr.dataset.job = job.id;
    tr.appendChild(el("td")).appendChild(jobLink(job.id));
    cell(tr, job.name || "");
    cell(tr, job.user || "");
    cell(tr, job.queue || "");
    cell(tr, job.state, "state");
    cell(tr, job.mapsDone + "/" + job.totalMaps);
    cell(tr, seconds(job.shuffleTimeNanos), "shuffle-time");
    cell(tr, seconds(job.completionTimeNanos), "completion-time");
    cell(tr, job.flowsMet + "/" + job.flows);
    cell(tr, ratio(job.deadlineMetRatio), "met-ratio");
    const hosts = cell(tr, "");
    for (const h of Array.from(new Set(job.reduces.map(r => r.host))).sort()) {
      hosts.appendChild(hostLink(h));
      hosts.appendChild(document.createTextNode(" "));
    }
    body.appendChild(tr);
  }
}

async function refresh() {
  const [overview, jobs] = await Promise.all([getJson(overviewQuery()), getJson("/api/v1/jobs")]);
  fillSelect(document.getElementById("filter-queue"), overview.queues);
  fillSelect(document.getElementById("filter-user"), overview.users);
  document.getElementById("shown-jobs").textContent = overview.jobs.length + " finished jobs shown";
  drawCompletion(overview.jobs);
  drawCdf(overview.cdf);
  drawMetRatio(overview.metRatio, overview.bucketNanos);
  renderJobs(jobs);
  document.body.dataset.updated = String(overview.nowUnixNanos);
}

for (const id of ["filter-queue", "filter-user", "filter-range", "group-by"]) {
  document.getElementById(id).addEventListener("change", () => refresh().catch(setStatus));
}
poll(refresh, POLL_MS);
