// A reducer host's plan (from /api/v1/dashboard/hosts/{host}, polled every second): the job
// order the planner chose and a Gantt-like timeline of the flows on the host's downlink.
"use strict";

const POLL_MS = 1000;
const COLOURS = { met: "#3a9a4a", missed: "#c8423b", flying: "#0072b2", suspended: "#e69f00",
  killed: "#000000", window: "#9aa5b1", deadline: "#222222" };
let host = param("host");

function orderText(j) {
  return j.rank > 0 ? String(j.rank) : j.rank === 0 ? "waiting for maps" : "not planned";
}

function renderHosts(hosts) {
  const span = document.getElementById("hosts");
  span.replaceChildren();
  for (const h of hosts) {
    span.appendChild(hostLink(h));
    span.appendChild(document.createTextNode(" "));
  }
  if (!host && hosts.length > 0) {
    host = hosts[0];
  }
  document.getElementById("host-name").textContent = host || "(none shuffling)";
}

function renderOrder(page) {
  const body = document.querySelector("#order tbody");
  body.replaceChildren();
  for (const j of page.jobs) {
    const tr = document.createElement("tr");
    tr.dataset.job = j.jobId;
    tr.dataset.rank = String(j.rank);
    cell(tr, orderText(j), "rank");
    tr.appendChild(el("td")).appendChild(jobLink(j.jobId));
    cell(tr, (j.queue || "?") + " / " + (j.user || "?"));
    cell(tr, j.mapsDone + "/" + j.totalMaps);
    tr.appendChild(el("td")).appendChild(progressBar(j.progress, mb(j.fetchedBytes) + " of "
        + mb(j.fetchedBytes + j.remainingBytes)));
    const p = j.policy;
    cell(tr, p.deadlineUnixNanos > 0 ? "in " + seconds(p.deadlineUnixNanos - page.nowUnixNanos)
        : "none", "deadline");
    cell(tr, p.importance + ", " + p.phi + ", " + p.mode + " (quench " + p.quenchMode + ")");
    cell(tr, j.precedenceClass, "class");
    cell(tr, p.reason, "reason");
    body.appendChild(tr);
  }
}

/** The timeline's rows: flows in flight (in the planner's order), then ended ones, newest first. */
function ganttRows(page) {
  const rows = [];
  for (const j of page.jobs) {
    const start = j.firstFlowUnixNanos > 0 ? j.firstFlowUnixNanos : j.shuffleStartUnixNanos;
    for (const f of j.flows) {
      const deadline = f.policy.deadlineUnixNanos;
      const end = deadline > 0 ? deadline : page.nowUnixNanos;
      rows.push({ label: orderText(j) + ": " + j.jobId + " r" + f.reduceId + " \u2190 "
          + f.agentHost, kind: "flying", start: start, deadline: deadline,
      barEnd: start + j.progress * Math.max(0, end - start), quench: "none",
      cls: f.precedenceClass });
    }
  }
  for (const e of page.ended.slice().reverse()) {
    const o = e.outcome;
    rows.push({ label: o.jobId + " r" + o.reduceId + " \u2190 " + o.sourceHost,
      kind: o.met ? "met" : "missed", start: o.startUnixNanos, deadline: o.deadlineUnixNanos,
      barEnd: o.finishUnixNanos > 0 ? o.finishUnixNanos : page.nowUnixNanos, quench: o.quench,
      cls: e.words });
  }
  return rows;
}

function renderGantt(page) {
  const rows = ganttRows(page);
  const container = document.getElementById("gantt");
  container.dataset.rows = String(rows.length);
  container.dataset.inFlight = String(rows.filter(r => r.kind === "flying").length);
  container.dataset.met = String(rows.filter(r => r.kind === "met").length);
  container.dataset.missed = String(rows.filter(r => r.kind === "missed").length);
  container.dataset.suspended = String(rows.filter(r => r.quench === "suspended").length);
  container.dataset.killed = String(rows.filter(r => r.quench === "killed").length);
  const list = document.getElementById("gantt-rows");
  list.replaceChildren();
  rows.forEach(r => {
    const li = el("li", r.label + ": " + r.cls, r.kind);
    li.dataset.quench = r.quench;
    list.appendChild(li);
  });
  const n = rows.length;
  const y = i => n - i; // first row on top
  const s = t => t / NS_PER_S;
  const series = [{ label: "time" }];
  const points = [];
  const marks = { deadline: [], suspended: [], killed: [] };
  rows.forEach((r, i) => {
    if (r.deadline > 0) {
      series.push({ label: "window " + i, stroke: COLOURS.window, width: 2, spanGaps: true,
        points: { show: false } });
      points.push([[s(r.start), y(i)], [s(r.deadline), y(i)]]);
      marks.deadline.push([s(r.deadline), y(i)]);
    }
    series.push({ label: r.label, stroke: COLOURS[r.kind], width: 10, spanGaps: true,
      points: { show: false } });
    points.push([[s(r.start), y(i)], [s(Math.max(r.barEnd, r.start + 1e6)), y(i)]]);
    if (r.quench === "suspended" || r.quench === "killed") {
      marks[r.quench].push([s(r.barEnd), y(i)]);
    }
  });
  for (const [name, colour, size] of [["deadline", COLOURS.deadline, 7],
    ["suspended", COLOURS.suspended, 13], ["killed", COLOURS.killed, 13]]) {
    series.push({ label: name, stroke: colour, fill: colour, paths: () => null,
      points: { show: true, size: size } });
    points.push(marks[name]);
  }
  const u = chart(container, {
    height: Math.max(160, 26 * n + 60),
    legend: { show: false },
    scales: { x: { time: true }, y: { range: [0, n + 1] } },
    axes: [{}, { show: false }],
    series: series,
  }, aligned(points));
  const now = s(page.nowUnixNanos);
  container.dataset.now = String(now);
  return u;
}

async function refresh() {
  renderHosts((await getJson("/api/v1/dashboard/hosts")).hosts);
  if (!host) {
    return;
  }
  const page = await getJson("/api/v1/dashboard/hosts/" + encodeURIComponent(host));
  renderOrder(page);
  renderGantt(page);
  document.body.dataset.updated = String(page.nowUnixNanos);
}

poll(refresh, POLL_MS);
