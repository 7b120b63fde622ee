// Dashboard for the DATCP scheduler: polls the read-only REST views and renders jobs, deadline-met
// ratios and a timeline of the selected job's flows. Data is inserted with textContent only.
"use strict";

const NS_PER_S = 1e9;
const SVG_NS = "http://www.w3.org/2000/svg";
const POLL_MS = 2000;
let selectedJob = null;

function seconds(nanos) {
  return nanos > 0 ? (nanos / NS_PER_S).toFixed(2) + " s" : "-";
}

function ratio(r) {
  return r < 0 ? "-" : (100 * r).toFixed(1) + " %";
}

function cell(tr, text) {
  const td = document.createElement("td");
  td.textContent = text;
  tr.appendChild(td);
  return td;
}

async function getJson(path) {
  const res = await fetch(path, { headers: { Accept: "application/json" } });
  if (!res.ok) {
    throw new Error(path + ": HTTP " + res.status);
  }
  return res.json();
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
    if (job.id === selectedJob) {
      tr.classList.add("selected");
    }
    cell(tr, job.id);
    cell(tr, job.name || "");
    cell(tr, job.user || "");
    cell(tr, job.queue || "");
    cell(tr, job.state);
    cell(tr, job.mapsDone + "/" + job.totalMaps);
    cell(tr, seconds(job.shuffleTimeNanos)).className = "shuffle-time";
    cell(tr, seconds(job.completionTimeNanos)).className = "completion-time";
    cell(tr, job.flowsMet + "/" + job.flows);
    cell(tr, ratio(job.deadlineMetRatio)).className = "met-ratio";
    tr.addEventListener("click", () => select(job.id));
    body.appendChild(tr);
  }
}

function renderReduces(job) {
  const ul = document.getElementById("reduces");
  ul.replaceChildren();
  for (const r of job.reduces) {
    const li = document.createElement("li");
    li.textContent = "reduce " + r.id + " on " + r.host + ": "
        + (r.deadlineReason ? r.deadlineReason : "shuffle finished");
    ul.appendChild(li);
  }
}

function renderTimeline(flows) {
  const svg = document.getElementById("timeline");
  svg.replaceChildren();
  const rowH = 16;
  const left = 150;
  const width = Math.max(600, svg.clientWidth || 900);
  svg.setAttribute("height", String(Math.max(40, flows.length * rowH + 30)));
  if (flows.length === 0) {
    return;
  }
  const ends = flows.map(f => Math.max(f.finishUnixNanos || f.startUnixNanos, f.deadlineUnixNanos));
  const t0 = Math.min(...flows.map(f => f.startUnixNanos));
  const t1 = Math.max(...ends);
  const scale = (width - left - 20) / Math.max(1, t1 - t0);
  const x = t => left + (t - t0) * scale;
  flows.forEach((f, i) => {
    const y = 10 + i * rowH;
    const label = document.createElementNS(SVG_NS, "text");
    label.setAttribute("x", "4");
    label.setAttribute("y", String(y + 11));
    label.textContent = "r" + f.reduceId + " \u2190 " + f.sourceHost;
    svg.appendChild(label);
    const end = f.finishUnixNanos || t1;
    const bar = document.createElementNS(SVG_NS, "rect");
    bar.setAttribute("class", "flow " + (f.met ? "met" : "missed"));
    bar.setAttribute("x", String(x(f.startUnixNanos)));
    bar.setAttribute("y", String(y));
    bar.setAttribute("width", String(Math.max(2, x(end) - x(f.startUnixNanos))));
    bar.setAttribute("height", String(rowH - 4));
    const title = document.createElementNS(SVG_NS, "title");
    title.textContent = (f.bytes / 1e6).toFixed(1) + " MB, took "
        + seconds(f.finishUnixNanos ? f.finishUnixNanos - f.startUnixNanos : 0)
        + ", deadline " + seconds(f.deadlineUnixNanos ? f.deadlineUnixNanos - f.startUnixNanos : 0)
        + (f.quench !== "none" ? ", " + f.quench : "");
    bar.appendChild(title);
    svg.appendChild(bar);
    if (f.deadlineUnixNanos > 0) {
      const dl = document.createElementNS(SVG_NS, "line");
      dl.setAttribute("class", "deadline");
      dl.setAttribute("x1", String(x(f.deadlineUnixNanos)));
      dl.setAttribute("x2", String(x(f.deadlineUnixNanos)));
      dl.setAttribute("y1", String(y - 1));
      dl.setAttribute("y2", String(y + rowH - 3));
      svg.appendChild(dl);
    }
  });
  const axis = document.createElementNS(SVG_NS, "text");
  axis.setAttribute("x", String(left));
  axis.setAttribute("y", String(flows.length * rowH + 25));
  axis.textContent = "0 s \u2026 " + seconds(t1 - t0) + " from the first flow's start";
  svg.appendChild(axis);
}

async function select(jobId) {
  selectedJob = jobId;
  document.querySelectorAll("#jobs tbody tr").forEach(
      tr => tr.classList.toggle("selected", tr.dataset.job === jobId));
  await refreshDetail();
}

async function refreshDetail() {
  if (selectedJob === null) {
    return;
  }
  const id = encodeURIComponent(selectedJob);
  const [job, flows] = await Promise.all([
    getJson("/api/v1/jobs/" + id),
    getJson("/api/v1/flows?limit=500&job=" + id),
  ]);
  document.getElementById("detail").hidden = false;
  document.getElementById("detail-job").textContent = job.id;
  renderReduces(job);
  renderTimeline(flows.flows);
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    renderJobs(await getJson("/api/v1/jobs"));
    await refreshDetail();
    status.textContent = "";
  } catch (e) {
    status.textContent = "update failed: " + e.message;
  }
}

refresh();
setInterval(refresh, POLL_MS);
