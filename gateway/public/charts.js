// Live charts of the gateway over the last few minutes, drawn with uPlot (served by the gateway from its own
// node_modules at /vendor/). Fed one /v1/stats body a second by app.js; history lives in this page only.
import uPlot from "/vendor/uPlot.esm.js";

const HISTORY_S = 300;
const HEIGHT = 150;
const TOTAL = "#1d232a";
const WORKER_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];
const workerColor = (i) => WORKER_COLORS[i % WORKER_COLORS.length];

/**
 * Each chart: its title, unit, the cluster-wide series and, where workers differ, one series per worker.
 * `worker(w)` reads a worker's value from its `perWorker` entry; workers are shown by position (1..N), so a
 * restarted worker continues its predecessor's line.
 */
const CHARTS = [
  {
    key: "connections",
    title: "Connections (WebSocket + SSE)",
    total: [{ label: "all", color: TOTAL, value: (s) => s.connections + s.sseStreams }],
    worker: (w) => w.connections + w.sseStreams,
  },
  {
    key: "publishes",
    title: "Publishes and drops /s",
    total: [
      { label: "publishes/s", color: "#1a7f37", value: (s) => s.rates?.publishesPerSec },
      { label: "dropped/s", color: "#c62828", value: (s) => s.rates?.droppedPerSec },
    ],
  },
  {
    key: "deliveries",
    title: "Deliveries /s (frames to sockets)",
    total: [{ label: "all", color: TOTAL, value: (s) => s.rates?.framesOutPerSec }],
    worker: (w) => w.rates?.framesOutPerSec,
  },
  {
    key: "latency",
    title: "Delivery latency, ms (broker → socket)",
    total: [
      { label: "p50", color: TOTAL, value: (s) => inWindow(s.latencyMs, "p50") },
      { label: "p99", color: "#c62828", value: (s) => inWindow(s.latencyMs, "p99") },
    ],
    worker: (w) => inWindow(w.latencyMs, "p99"),
    workerLabel: (i) => `p99 w${i + 1}`,
  },
];

/** Builds the charts inside `root` and returns `push(stats)` for each new /v1/stats body. */
export function liveCharts(root) {
  const t = [];
  const series = new Map(); // chart key -> arrays of values, one per series (total series first)
  const plots = new Map();
  const observers = [];
  let workers = 0;

  const build = () => {
    for (const p of plots.values()) p.destroy();
    for (const o of observers.splice(0)) o.disconnect();
    root.replaceChildren();
    for (const c of CHARTS) {
      const box = document.createElement("figure");
      box.className = "chart";
      box.dataset.chart = c.key;
      const cap = document.createElement("figcaption");
      cap.textContent = c.title;
      box.append(cap);
      root.append(box);
      const perWorker = c.worker && workers > 1 ? workers : 0;
      const arrays = series.get(c.key) ?? [];
      while (arrays.length < c.total.length + perWorker) arrays.push(t.map(() => null));
      series.set(c.key, arrays);
      const opts = {
        width: Math.max(box.clientWidth, 200),
        height: HEIGHT,
        legend: { live: true },
        cursor: { drag: { x: false, y: false } },
        scales: {
          x: { time: true, range: () => xRange(t) },
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.15 : 1] },
        },
        axes: [{ size: 30 }, { size: 44 }],
        series: [
          { label: "time", value: (_u, v) => (v == null ? "–" : new Date(v * 1000).toLocaleTimeString()) },
          ...c.total.map((s) => ({ label: s.label, stroke: s.color, width: 2, spanGaps: false })),
          ...Array.from({ length: perWorker }, (_, i) => ({
            label: c.workerLabel ? c.workerLabel(i) : `worker ${i + 1}`,
            stroke: workerColor(i),
            width: 1,
            dash: [4, 3],
          })),
        ],
      };
      const plot = new uPlot(opts, [t, ...arrays.slice(0, c.total.length + perWorker)], box);
      plots.set(c.key, plot);
      const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(box.clientWidth, 200), height: HEIGHT }));
      observer.observe(box);
      observers.push(observer);
    }
  };

  const push = (s) => {
    const now = Math.floor((s.at ?? Date.now()) / 1000);
    if (t.length > 0 && now <= t[t.length - 1]) return; // same second: keep one point per second
    const per = Array.isArray(s.perWorker) ? s.perWorker : [];
    t.push(now);
    for (const c of CHARTS) {
      const arrays = series.get(c.key) ?? [];
      series.set(c.key, arrays);
      c.total.forEach((def, i) => (arrays[i] ??= t.slice(0, -1).map(() => null)).push(num(def.value(s))));
      if (c.worker)
        for (let i = 0; i < Math.max(per.length, arrays.length - c.total.length); i++)
          (arrays[c.total.length + i] ??= t.slice(0, -1).map(() => null)).push(per[i] ? num(c.worker(per[i])) : null);
    }
    while (t.length > 0 && t[0] < now - HISTORY_S) {
      t.shift();
      for (const arrays of series.values()) for (const a of arrays) a.shift();
    }
    if (per.length > workers) {
      workers = per.length;
      build();
    }
    for (const c of CHARTS) {
      const plot = plots.get(c.key);
      plot.setData([t, ...series.get(c.key).slice(0, plot.series.length - 1)]);
      if (!(plot.cursor.left >= 0)) plot.setLegend({ idx: t.length - 1 }); // the latest values unless hovering
    }
  };

  build();
  return { push, plots, series: () => ({ t, ...Object.fromEntries(series) }) };
}

/** Latency of the last second only: with no message in it, the stats fall back to "since start", a gap here. */
const inWindow = (lat, q) => (lat?.over === "window" ? lat[q] : null);
const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
/** The last HISTORY_S seconds; while the page is younger, from its first sample (at least a minute). */
const xRange = (t) => {
  const last = t.length > 0 ? t[t.length - 1] : Math.floor(Date.now() / 1000);
  const first = t.length > 0 ? t[0] : last;
  return [Math.max(last - HISTORY_S, Math.min(first, last - 60)), last];
};
