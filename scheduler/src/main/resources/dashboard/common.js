// Shared by the dashboard's pages: JSON from the scheduler's read-only REST views, formatting,
// and uPlot charts that record what they draw in data attributes (read by the browser test).
// Data is inserted with textContent only.
"use strict";

const NS_PER_S = 1e9;
// Colour-blind-safe palette (Okabe-Ito), one colour per queue or user.
const PALETTE = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442",
  "#000000"];

function seconds(nanos) {
  return nanos > 0 ? (nanos / NS_PER_S).toFixed(2) + " s" : "-";
}

function ratio(r) {
  return r < 0 ? "-" : (100 * r).toFixed(1) + " %";
}

function mb(bytes) {
  return (bytes / 1e6).toFixed(1) + " MB";
}

function clock(nanos) {
  return nanos > 0 ? new Date(nanos / 1e6).toLocaleTimeString() : "-";
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) {
    e.textContent = String(text);
  }
  if (cls) {
    e.className = cls;
  }
  return e;
}

function cell(tr, text, cls) {
  const td = el("td", text, cls);
  tr.appendChild(td);
  return td;
}

function link(href, text) {
  const a = el("a", text);
  a.href = href;
  return a;
}

function jobLink(id) {
  return link("/dashboard/job.html?id=" + encodeURIComponent(id), id);
}

function hostLink(host) {
  return link("/dashboard/host.html?host=" + encodeURIComponent(host), host);
}

function param(name) {
  return new URLSearchParams(window.location.search).get(name) || "";
}

async function getJson(path) {
  const res = await fetch(path, { headers: { Accept: "application/json" } });
  if (!res.ok) {
    throw new Error(path + ": HTTP " + res.status);
  }
  return res.json();
}

/** A progress bar (a div whose width is the share) with the share in data-progress. */
function progressBar(share, label) {
  const outer = el("div", null, "progress");
  outer.dataset.progress = share.toFixed(3);
  const inner = el("div", null, "bar");
  inner.style.width = (100 * Math.min(1, Math.max(0, share))).toFixed(1) + "%";
  outer.appendChild(inner);
  outer.appendChild(el("span", label));
  return outer;
}

/**
 * Draws (or redraws) a uPlot chart in `container`; `charts` keeps one per container id, so a
 * poll replaces the data instead of stacking charts.
 */
const charts = {};
function chart(container, opts, data) {
  const width = Math.max(300, container.clientWidth || 600);
  const old = charts[container.id];
  const key = opts.series.map(s => s.label).join("\n");
  if (old && old.datcpKey === key) {
    old.setData(data);
    return old;
  }
  if (old) {
    old.destroy();
  }
  container.replaceChildren();
  const u = new uPlot(Object.assign({ width: width, height: 260 }, opts), data, container);
  u.datcpKey = key;
  charts[container.id] = u;
  return u;
}

/** Aligned data for uPlot from per-series [x, y] points: one sorted x array, nulls elsewhere. */
function aligned(seriesPoints) {
  const xs = Array.from(new Set(seriesPoints.flat().map(p => p[0]))).sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const data = [xs];
  for (const points of seriesPoints) {
    const ys = new Array(xs.length).fill(null);
    for (const [x, y] of points) {
      ys[index.get(x)] = y;
    }
    data.push(ys);
  }
  return data;
}

function setStatus(error) {
  document.getElementById("status").textContent = error ? "update failed: " + error.message : "";
}

/** Runs `refresh` now and every `ms` milliseconds (short polling), reporting failures. */
function poll(refresh, ms) {
  const run = async () => {
    try {
      await refresh();
      setStatus(null);
    } catch (e) {
      setStatus(e);
    }
  };
  run();
  setInterval(run, ms);
}
