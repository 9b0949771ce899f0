// /ui/advice/{id}: an advice's progress (SSE), then its answer: the fixes that meet the
// target ranked cheapest first, the levers that cannot reach it and why, the curves (metric
// against each lever's value, measured beside the bound), and the runs it made.
"use strict";
(() => {
  const {
    api, stream, el, setBar, setHead, countsText, verdictPill, seconds, bps, si, showError, FINISHED,
  } = tcpfr;
  const adviceId = location.pathname.split("/").filter(Boolean).pop();
  const base = `/v1/advice/${adviceId}`;
  let metric = "completion_time";
  let refreshing = null;

  const show = (v) => (v === null || v === undefined ? "–" : metric === "goodput_bps" ? bps(v) : seconds(v));
  const cost = (c) => (c === 0 ? "free" : `${c.toLocaleString()} a month`);
  const interval = (m) => (m && m.ci95 ? ` (${show(m.ci95[0])} to ${show(m.ci95[1])})` : "");
  // A lever's value in its unit, from the last part of its path.
  function value(path, v) {
    if (typeof v !== "number") return String(v);
    const leaf = path.split(".").pop();
    if (["rate", "cir", "shaping_rate"].includes(leaf)) return bps(v);
    if (["rcv_buf", "snd_buf", "limit_bytes", "mss"].includes(leaf)) return si(v, "B");
    if (["be", "bc"].includes(leaf)) return si(v, "bit");
    if (leaf === "limit_packets") return si(v, "pkt");
    return si(v);
  }
  const changeText = (changes) => changes.map((c) =>
    `${c.path}: ${c.was === null || c.was === undefined ? "–" : value(c.path, c.was)} → ${value(c.path, c.value)}`).join("; ");
  const changesOf = (changes) => Object.entries(changes).map(([k, v]) => `${k} = ${value(k, v)}`).join(", ");

  function header(doc) {
    setHead(doc.name, doc.status);
    const kind = doc.kind === "remedy_check" ? "remedy check" : "advice";
    document.getElementById("meta").textContent = `${kind} · id ${doc.id}` +
      (doc.error ? ` · error: ${doc.error.type}: ${doc.error.message}` : "");
    progress(doc.progress, doc.status);
    const cancel = document.getElementById("cancel");
    cancel.hidden = FINISHED.includes(doc.status);
    cancel.onclick = () => api(`${base}/cancel`, { method: "POST" }).then(render).catch(showError);
    const link = document.getElementById("base-run");
    if (doc.links.base_run) {
      link.hidden = false;
      link.href = `/ui/runs/${doc.base.run_id}`;
      link.textContent = `the run it is about (${doc.base.scenario_name})`;
    }
  }

  function progress(p, status) {
    setBar(document.getElementById("progress"), p.fraction, status);
    const c = p.counts;
    document.getElementById("counts").textContent =
      `${p.runs} runs made of a budget of ${p.run_budget} (${p.cache_hits} from the cache): ` +
      countsText(c);
  }

  function fixes(report) {
    const rows = (report.fixes || []).map((f, i) => el("tr", { class: i === 0 ? "best" : "" },
      el("td", { text: String(i + 1) }),
      el("td", { text: changeText(f.changes) }),
      el("td", { text: cost(f.cost) }),
      el("td", { text: show(f.measured.mean) + interval(f.measured) }),
      el("td", { text: show(f.bound) }),
      el("td", { text: f.note || "" })));
    const empty = el("tr", {}, el("td", { colspan: 6, class: "empty",
      text: report.finished ? `None within these levers. Best measured: ${show(report.best && report.best.mean)}` +
        (report.best && Object.keys(report.best.changes).length ? ` with ${changesOf(report.best.changes)}` : "")
        : "None found yet." }));
    document.getElementById("fixes").replaceChildren(
      el("thead", {}, el("tr", {}, ["#", "Change", "Cost", "Measured", "Bound", ""].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.length ? rows : [empty]));
  }

  function rejected(report) {
    const rows = (report.rejected || []).map((r) => el("tr", {},
      el("td", { text: r.lever }),
      el("td", { text: r.reason }),
      el("td", { text: show(r.bound) + (r.limit ? ` (${r.limit})` : "") }),
      el("td", { text: r.measured ? show(r.measured.mean) : "not run" }),
      el("td", { text: r.text })));
    document.getElementById("rejected").replaceChildren(
      el("thead", {}, el("tr", {}, ["Lever", "Why", "Bound", "Measured", ""].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.length ? rows : [el("tr", {}, el("td", { colspan: 5, class: "empty", text: "–" }))]));
  }

  function checkItems(report) {
    // A remedy check: each remedy measured, in the fixes table's place.
    const rows = (report.items || []).map((i) => el("tr", {},
      el("td", { text: i.text }),
      el("td", { text: show(i.after && i.after.mean) + interval(i.after) }),
      el("td", {}, verdictPill(i))));
    document.getElementById("fixes").replaceChildren(
      el("thead", {}, el("tr", {}, ["Remedy", "Measured", "Verdict"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows));
  }

  // One chart per lever: x is the position of each value (tiers and variants are not
  // numbers), labelled with the value; the bound as a dashed line, the measured points as
  // dots with their interval, the target as a flat line.
  function curves(doc, target) {
    const box = document.getElementById("curves");
    box.replaceChildren();
    const byLever = new Map();
    for (const p of doc.points) byLever.set(p.lever, [...(byLever.get(p.lever) || []), p]);
    const C = tcpfrCharts.COLORS;
    // Every holder first, so the grid has its columns before a chart measures its width.
    const holders = [...byLever.keys()].map((lever) => {
      const holder = el("div", { class: "chart curve", "data-lever": lever });
      box.append(holder);
      return holder;
    });
    [...byLever.entries()].forEach(([lever, points], k) => {
      const holder = holders[k];
      const labels = points.map((p) => p.label);
      const every = Math.max(1, Math.ceil(labels.length / 6)); // room for the labels
      const dots = (w, color) => ({ stroke: color, width: 0, paths: () => null, points: { show: true, size: w, fill: color } });
      const withCi = points.some((p) => p.ci_low !== null);
      const series = [
        { label: lever },
        { label: "measured", ...dots(9, C[0]) },
        { label: "bound", stroke: C[2], width: 1.5, dash: [6, 4], spanGaps: true },
        { label: "target", stroke: C[1], width: 1 },
      ];
      const data = [points.map((_, i) => i), points.map((p) => p.measured),
                    points.map((p) => p.bound), points.map(() => target)];
      if (withCi) {
        series.push({ label: "95% interval", ...dots(4, "#8aa4d6") }, { label: "", ...dots(4, "#8aa4d6") });
        data.push(points.map((p) => p.ci_low), points.map((p) => p.ci_high));
      }
      const opts = {
        title: lever,
        width: Math.max(320, Math.floor(holder.getBoundingClientRect().width) - 8),
        height: 240,
        scales: { x: { time: false } },
        series,
        axes: [
          { values: (u, vals) => vals.map((v) => (Number.isInteger(v) && v % every === 0 ? labels[v] || "" : "")), size: 50 },
          { size: 78, values: (u, vals) => vals.map(show) },
        ],
        legend: { live: false },
      };
      new uPlot(opts, data, holder);
    });
    box.dataset.ready = "true";
  }

  async function runs() {
    const page = await api(`${base}/runs?limit=200`);
    const rows = page.items.map((r) => el("tr", {},
      el("td", { text: String(r.round) }),
      el("td", { text: Object.keys(r.changes).length ? changesOf(r.changes) : "the scenario itself" }),
      el("td", { text: String(r.seed) }),
      el("td", {}, el("span", { class: "pill " + r.status, text: r.status + (r.cache_hit ? " (cached)" : "") })),
      el("td", {}, el("a", { href: `/ui/runs/${r.id}`, text: "…" + r.id.slice(-12) }))));
    document.getElementById("runs").replaceChildren(
      el("thead", {}, el("tr", {}, ["Round", "Changes", "Seed", "Status", "Run"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows));
  }

  async function render(doc) {
    header(doc);
    const report = doc.report;
    if (!report) return;
    document.getElementById("results").hidden = false;
    document.getElementById("partial").hidden = FINISHED.includes(doc.status);
    metric = report.metric || (report.target && report.target.metric) || "completion_time";
    document.getElementById("conclusion").replaceChildren(...(report.text || []).map((t) => el("li", { text: t })));
    if (doc.kind === "remedy_check") {
      checkItems(report);
    } else {
      fixes(report);
      rejected(report);
      curves(await api(`${base}/curves`), report.target.value);
    }
    await runs();
    if (FINISHED.includes(doc.status)) document.getElementById("results").dataset.done = "true";
  }

  // While it runs: the report again as runs end (at most once a second).
  function refreshSoon() {
    if (refreshing) return;
    refreshing = setTimeout(() => {
      refreshing = null;
      api(base).then(render).catch(showError);
    }, 1000);
  }

  async function main() {
    const doc = await api(base);
    await render(doc);
    if (FINISHED.includes(doc.status)) return;
    stream(`${base}/stream`, {
      progress: (p) => {
        progress(p, p.status);
        window.tcpfrAdviceProgress = (window.tcpfrAdviceProgress || []).concat([p.fraction]);
      },
      status: refreshSoon,
      done: () => api(base).then(render).catch(showError),
      error: (status) => showError(`stream: HTTP ${status}`),
    });
  }

  main().catch(showError);
})();
