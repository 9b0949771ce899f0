// /ui/sweeps/{id}: live progress (SSE), then the comparison table, the conclusion and an
// overlay of one series over the points (one run per point, on a common time axis).
"use strict";
(() => {
  const { api, stream, el, setBar, setHead, setStatus, countsText, si, seconds, showError } = tcpfr;
  const sweepId = location.pathname.split("/").filter(Boolean).pop();
  const base = `/v1/sweeps/${sweepId}`;
  let overlayChart = null;

  function header(s) {
    setHead(s.name, s.status);
    document.getElementById("meta").textContent =
      `${s.run_count} runs · ${s.cache_hits} from the cache · id ${s.id}`;
    progress(s.progress, s.status);
  }

  function progress(p, status) {
    setBar(document.getElementById("progress"), p.fraction, status);
    const c = p.counts;
    document.getElementById("counts").textContent =
      countsText(c) +
      (p.eta_seconds !== null && p.eta_seconds !== undefined ? ` · about ${seconds(p.eta_seconds)} left` : "");
  }

  const fmtValue = (v, unit) => (typeof v === "number" ? si(v, unit === "ratio" ? "" : unit) : String(v));

  function table(summary) {
    const paths = summary.design.factors.flatMap((f) => f.paths);
    const flow = summary.metrics.length ? summary.metrics[0].flow : null;
    const metrics = summary.metrics.filter((m) => m.flow === flow).slice(0, 3);
    const head = el("tr", {}, el("th", { text: "#" }), paths.map((p) => el("th", { text: p })),
      metrics.map((m) => el("th", { text: `${m.label}` })), el("th", { text: `${flow}: limited by` }),
      el("th", { text: "run" }));
    const rows = summary.points.map((p) => el("tr", { class: p.is_baseline ? "baseline" : "" },
      el("td", { text: p.index + (p.is_baseline ? " (baseline)" : "") }),
      paths.map((path) => el("td", { text: String(p.parameters[path]) })),
      metrics.map((m) => {
        const stat = ((p.metrics[m.flow] || {})[m.metric]) || {};
        const delta = stat.delta && stat.delta.pct !== null ? ` (${stat.delta.pct > 0 ? "+" : ""}${stat.delta.pct.toFixed(1)}%)` : "";
        return el("td", { text: stat.mean === null || stat.mean === undefined ? "–" : fmtValue(stat.mean, m.unit) + delta });
      }),
      el("td", { text: p.limits[flow] ? p.limits[flow].limit.replace(/_/g, " ") : "–" }),
      el("td", {}, p.run_ids.length ? el("a", { href: `/ui/runs/${p.run_ids[0]}`, text: "…" + p.run_ids[0].slice(-12) }) : "–")));
    document.getElementById("points").replaceChildren(el("thead", {}, head), el("tbody", {}, rows));
    return flow;
  }

  async function overlay(summary, key) {
    const points = summary.points.filter((p) => p.run_ids.length && p.succeeded);
    if (!points.length) return;
    const runs = points.map((p) => p.run_ids[0]);
    const data = await api(`/v1/compare/series?${new URLSearchParams({ runs: runs.join(","), key, max_points: "1200" })}`);
    const paths = summary.design.factors.flatMap((f) => f.paths);
    const labels = points.map((p) => `#${p.index} ` + paths.map((k) => `${k.split(".").pop()}=${p.parameters[k]}`).join(" "));
    const cols = [data.columns.t, ...runs.map((id) => data.columns[id])];
    const box = document.getElementById("overlay");
    box.replaceChildren();
    const format = (v) => si(v, data.unit === "ratio" ? "" : data.unit);
    overlayChart = tcpfrCharts.make(box, { title: `${key} by point`, labels, format, height: 320, sync: "sweep" }, cols, null);
    document.getElementById("overlay-key").textContent = `(${key}, ${data.unit}; one run per point)`;
    box.dataset.ready = "true";
  }

  async function results() {
    const [sweep, summary] = await Promise.all([api(base), api(`${base}/summary`)]);
    header(sweep);
    document.getElementById("results").hidden = false;
    document.getElementById("partial").hidden = !summary.partial;
    document.getElementById("conclusion").textContent = summary.text;
    const flow = table(summary);
    if (!flow || !summary.points.some((p) => p.run_ids.length && p.succeeded)) return;
    const choices = ["ack", "goodput_bps", "cwnd", "srtt"].map((m) => `flow.${flow}.${m}`);
    const select = document.getElementById("overlay-metric");
    select.replaceChildren(...choices.map((k) => el("option", { value: k, text: k })));
    select.onchange = () => overlay(summary, select.value).catch(showError);
    await overlay(summary, choices[0]);
  }

  async function main() {
    const sweep = await api(base);
    header(sweep);
    if (!["queued", "running"].includes(sweep.status)) return results();
    stream(`${base}/stream`, {
      progress: (p) => {
        progress(p, p.status);
        setStatus(p.status);
      },
      status: () => {},
      done: () => results().catch(showError),
      error: (status) => showError(`stream: HTTP ${status}`),
    });
  }

  main().catch(showError);
})();
