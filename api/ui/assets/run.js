// /ui/runs/{id}: live progress (SSE), then the diagnosis, the summary and the charts.
"use strict";
(() => {
  const {
    api, revalidate, poll, stream, download, el, setBar, setHead, setStatus, bytes, bps, seconds, si, showError,
    FINISHED,
  } = tcpfr;
  const runId = location.pathname.split("/").filter(Boolean).pop();
  const base = `/v1/runs/${runId}`;
  const packets = (v) => si(v, "pkt");
  let run = null;
  let index = [];
  let charts = [];
  let range = { start: null, end: null };
  let live = null; // the charts' poller while the run is queued or running

  function header(doc) {
    setHead(doc.preset || doc.scenario_name, doc.status,
            doc.status + (doc.cache_hit ? " (served from the cache)" : ""));
    const bits = [`seed ${doc.seed}`, `engine ${doc.engine_version}`, `id ${doc.id}`];
    if (doc.error) bits.push(`error: ${doc.error.type}: ${doc.error.message}`);
    const meta = document.getElementById("meta");
    meta.textContent = bits.join(" · ") + " · ";
    // The editor starts from what this run simulated (its stored scenario when it has one).
    const from = doc.scenario_id ? `scenario=${doc.scenario_id}` : `run=${doc.id}`;
    meta.append(el("a", { id: "edit-scenario", href: `/ui/editor?${from}`, text: "edit a copy in the editor" }));
    setBar(document.getElementById("progress"), doc.progress, doc.status);
  }

  function history(event) {
    const text = [event.event, event.attempt ? `attempt ${event.attempt}` : null,
                  event.worker ? `on ${event.worker}` : null].filter(Boolean).join(" ");
    document.getElementById("history").append(
      el("li", {}, el("time", { text: new Date(event.at).toLocaleTimeString() }), " ", text));
  }

  // Past this many flows a run is read as a population: the diagnosis by limit, the
  // summary a row per flow under totals.
  const MANY = 8;
  const limitText = (limit) => String(limit).replace(/_/g, " ");

  // What limits each flow (`why`); its remedies are candidates the remedies panel measures
  // (fix.js), so the diagnosis recommends nothing. Results stored before `why` existed
  // show their `advice`.
  function diagnosis(doc) {
    const box = document.getElementById("diagnosis");
    const line = ([flow, d]) => el("p", { class: "diagnosis" },
      el("strong", { text: `${flow}: limited by ${limitText(d.limit)}. ` }), d.why || d.advice || "");
    const entries = Object.entries(doc.diagnosis || {});
    if (entries.length <= MANY) {
      box.replaceChildren(...entries.map(line));
      return;
    }
    // One group per limit, the commonest first; each flow's own words inside.
    const groups = new Map();
    for (const entry of entries) {
      const limit = entry[1].limit;
      groups.set(limit, [...(groups.get(limit) || []), entry]);
    }
    const sorted = [...groups.entries()].sort((a, b) => b[1].length - a[1].length);
    box.replaceChildren(...sorted.map(([limit, members]) =>
      el("details", { class: "diagnosis-group", "data-limit": limit },
        el("summary", {},
          el("strong", { text: `${members.length} of ${entries.length} flows limited by ${limitText(limit)}` }),
          ` (${members.slice(0, 5).map(([flow]) => flow).join(", ")}${members.length > 5 ? ", …" : ""})`),
        ...members.map(line))));
  }

  // The run to take away: the export bundle (request, result, series as CSV and Parquet,
  // captures), the scenario as simulated, and each packet capture for Wireshark.
  function downloads(doc) {
    const item = (label, path, filename, note) =>
      el("li", {},
        el("a", { href: path, download: filename, onclick: (e) => {
          e.preventDefault();
          download(path, filename).catch(showError);
        } }, label),
        note ? ` ${note}` : "");
    const items = [
      item("Export bundle", `${base}/export`, `tcpfr-run-${doc.id}.zip`,
           "(zip: request, result, series as CSV and Parquet)"),
      item("Scenario", `${base}/scenario`, `tcpfr-scenario-${doc.id}.json`, "(JSON, as simulated)"),
      ...(doc.captures || []).map((c) =>
        item(`Capture ${c.link} ${c.direction.replace(/_/g, " ")}`, c.href,
             `tcpfr-${doc.id}-${c.link}-${c.direction}.pcap`,
             `(${c.packets.toLocaleString()} packets${c.missed ? `, ${c.missed.toLocaleString()} not kept` : ""}; libpcap for Wireshark)`)),
    ];
    document.getElementById("downloads").replaceChildren(...items);
  }

  function summary(doc) {
    const flows = doc.summary.flows;
    const rows = [
      ["completed", (f) => (f.completed ? "yes" : "no")],
      ["bytes delivered", (f) => bytes(f.bytes_delivered)],
      ["completion time", (f) => seconds(f.completion_time)],
      ["goodput", (f) => bps(f.goodput_bps)],
      ["segments sent", (f) => f.segments_sent],
      ["retransmissions", (f) => f.retransmissions],
      ["timeouts", (f) => f.timeouts],
      ["packets dropped", (f) => f.packets_dropped],
      ["RTT mean / min / max", (f) => [f.rtt_mean, f.rtt_min, f.rtt_max].map(seconds).join(" / ")],
      ["cwnd max", (f) => bytes(f.cwnd_max)],
      ["most time", (f) => tcpfrTime.most(f.time)],
    ];
    const names = Object.keys(flows);
    const table = document.getElementById("summary");
    const simulated = `${seconds(doc.summary.sim_time)} in ${seconds(doc.summary.wall_time)} of wall time, ${doc.summary.events.toLocaleString()} events`;
    if (names.length > MANY) {
      manyFlows(table, flows, names, rows, simulated);
      return;
    }
    document.getElementById("summary-flows-box")?.remove();
    table.replaceChildren(
      el("thead", {}, el("tr", {}, el("th", { text: "flow" }), names.map((n) => el("th", { text: n })))),
      el("tbody", {}, rows.map(([label, fn]) => el("tr", {}, el("th", { text: label }),
        names.map((n) => el("td", { text: String(fn(flows[n]) ?? "–") }))))),
      el("tfoot", {}, el("tr", {}, el("th", { text: "simulated" }),
        el("td", { colspan: names.length, text: simulated }))));
  }

  // Many flows: totals and spread first (Jain's index for how evenly the goodput is
  // shared), then one row per flow, scrolling within the page.
  function manyFlows(table, flows, names, rows, simulated) {
    const all = names.map((n) => flows[n]);
    const goodput = all.map((f) => f.goodput_bps || 0);
    const total = goodput.reduce((a, b) => a + b, 0);
    const squares = goodput.reduce((a, b) => a + b * b, 0);
    const sum = (key) => all.reduce((a, f) => a + (f[key] || 0), 0);
    const facts = [
      ["flows", `${names.length} (${all.filter((f) => f.completed).length} completed)`],
      ["goodput total", bps(total)],
      ["goodput mean / min / max",
       [total / names.length, Math.min(...goodput), Math.max(...goodput)].map(bps).join(" / ")],
      ["fairness (Jain's index)", squares > 0 ? (total * total / (names.length * squares)).toFixed(3) : "–"],
      ["retransmissions, timeouts, packets dropped",
       [sum("retransmissions"), sum("timeouts"), sum("packets_dropped")].map((v) => v.toLocaleString()).join(", ")],
      ["simulated", simulated],
    ];
    table.replaceChildren(el("tbody", {}, facts.map(([label, text]) =>
      el("tr", {}, el("th", { text: label }), el("td", { text })))));
    const perFlow = el("table", { id: "summary-flows", class: "figures per-flow" },
      el("thead", {}, el("tr", {}, el("th", { text: "flow" }), rows.map(([label]) => el("th", { text: label })))),
      el("tbody", {}, names.map((n) =>
        el("tr", {}, el("th", { text: n }), rows.map(([, fn]) => el("td", { text: String(fn(flows[n]) ?? "–") }))))));
    document.getElementById("summary-flows-box")?.remove();
    table.after(el("div", { id: "summary-flows-box", class: "scroll" }, perFlow));
  }

  // Where each flow's time went: a bar per flow, or their sum for many.
  function timeBars(doc) {
    const flows = Object.fromEntries(Object.entries(doc.summary.flows).filter(([, f]) => f.kind === "tcp"));
    tcpfrTime.render(document.getElementById("time"), flows, Object.keys(flows).length > MANY);
  }

  // Each PVC's counters: what entered it, what its policer marked and discarded, what the
  // switches marked (FECN, BECN) and dropped.
  function pvcs(doc) {
    const entries = Object.entries(doc.summary.pvcs || {});
    const table = document.getElementById("pvcs");
    table.hidden = document.getElementById("pvcs-title").hidden = !entries.length;
    const n = (v) => (v ?? 0).toLocaleString();
    const cols = [
      ["frames", (p) => n(p.frames)],
      ["DE-marked", (p) => n(p.de_marked)],
      ["discarded by the policer", (p) => n(p.excess_dropped)],
      ["DE dropped", (p) => n(p.de_dropped)],
      ["FECN", (p) => n(p.fecn_marked)],
      ["BECN", (p) => n(p.becn_marked)],
      ["shaper dropped", (p) => n(p.shaper_dropped)],
      ["residual errors", (p) => `${((p.residual_error_rate || 0) * 100).toFixed(3)}%`],
    ];
    table.replaceChildren(
      el("thead", {}, el("tr", {}, el("th", { text: "PVC" }), cols.map(([c]) => el("th", { text: c })))),
      el("tbody", {}, entries.map(([id, p]) => el("tr", { "data-pvc": id }, el("th", { text: id }),
        cols.map(([, fn]) => el("td", { text: fn(p) }))))));
  }

  // The link direction where packets were dropped or waited most (then the busiest one).
  function busiest(doc) {
    const links = Object.entries((doc.summary || {}).links || {}); // none while it runs
    const rank = (l) => [l.drops || 0, l.queue_mean || 0, l.utilization || 0];
    links.sort((a, b) => {
      const [x, y] = [rank(a[1]), rank(b[1])];
      return (y[0] - x[0]) || (y[1] - x[1]) || (y[2] - x[2]);
    });
    return links.length ? links[0][0] : null;
  }

  const linkBase = (name) => { const [id, dir] = name.split(":"); return `link.${id}.${dir}`; };

  // The bottleneck the diagnosis names for `flow` ("<link>:<from>><to>" or "pvc:<id>") and
  // its queue and delay series, those the run has: a link direction's queue and its
  // shaper's, a PVC's shaping queues (each direction). A bottleneck without a queue of its
  // own (a policed PVC) shows the busiest link direction's, saying so.
  function bottleneck(doc, flow, have) {
    const named = ((doc.diagnosis || {})[flow] || {}).bottleneck || null;
    let queue = [], delay = [];
    if (named && named.startsWith("pvc:")) {
      const p = `pvc.${named.slice(4)}.`;
      queue = [`${p}queue_packets`, `${p}queue_packets_reverse`].filter((k) => have.has(k));
      delay = [`${p}queue_delay`, `${p}queue_delay_reverse`].filter((k) => have.has(k));
    } else if (named) {
      const b = linkBase(named);
      queue = [`${b}.queue_packets`, `${b}.shaper_queue_packets`].filter((k) => have.has(k));
      delay = [`${b}.shaper_delay`].filter((k) => have.has(k));
    }
    if (queue.length) return { title: named, queue, delay };
    const link = busiest(doc);
    if (!link) return null;
    const fallback = [`${linkBase(link)}.queue_packets`].filter((k) => have.has(k));
    const title = named ? `${named} (no queue of its own: the busiest link direction, ${link})` : link;
    return { title, queue: fallback, delay };
  }

  function label(k) {
    const last = k.split(".").pop();
    if (k.startsWith("pvc.")) {
      const [, id, what] = k.split(".");
      const words = { discards: "policer discards", queue_packets: "queue", queue_packets_reverse: "queue (reverse)",
        queue_delay: "queueing delay", queue_delay_reverse: "queueing delay (reverse)" };
      return `PVC ${id} ${words[what] || what}`;
    }
    if (last === "queue_packets") return "queue";
    if (last === "shaper_queue_packets") return "shaper queue";
    if (last === "shaper_delay") return "shaper delay";
    if (k.startsWith("link.")) return k.slice(5).replace(/\.drops$/, " drops");
    return last;
  }

  function chartSpecs(flow) {
    const have = new Set(index.map((s) => s.key));
    const pick = (keys) => keys.filter((k) => have.has(k));
    const neck = bottleneck(run, flow, have);
    const keys = index.map((s) => s.key);
    // Losses side by side: the flow's retransmissions, each link direction's queue and
    // line drops, each PVC's policer discards.
    const drops = keys.filter((k) => k.startsWith("link.") && k.endsWith(".drops"));
    const discards = keys.filter((k) => k.startsWith("pvc.") && k.endsWith(".discards"));
    return [
      // uPlot draws in series order: the bytes in flight first, as a pale area, then the
      // windows over it as lines; ssthresh last and dashed, so that where cwnd runs along it
      // (congestion avoidance) both still show.
      { id: "cwnd", title: `${flow}: congestion window, ssthresh, in flight`, stepped: true,
        keys: pick([`flow.${flow}.inflight`, `flow.${flow}.rwnd`, `flow.${flow}.cwnd`, `flow.${flow}.ssthresh`]), format: bytes,
        styles: {
          inflight: { stroke: "rgba(44, 160, 44, 0.45)", fill: "rgba(44, 160, 44, 0.16)", width: 1 },
          rwnd: { stroke: "#ff7f0e", width: 1.5, dash: [2, 3] },
          cwnd: { stroke: "#1f6feb", width: 2 },
          ssthresh: { stroke: "#d62728", width: 2, dash: [7, 5] },
        } },
      { id: "goodput", title: `${flow}: goodput`, keys: pick([`flow.${flow}.goodput_bps`]), format: bps },
      { id: "rtt", title: `${flow}: smoothed RTT and RTO`, stepped: true,
        keys: pick([`flow.${flow}.srtt`, `flow.${flow}.rto`]), format: seconds },
      { id: "queue", title: `Bottleneck queue: ${neck ? neck.title : "–"}`, stepped: true,
        keys: neck ? neck.queue : [], format: packets },
      { id: "queue-delay", title: `Bottleneck queueing delay: ${neck ? neck.title : "–"}`, stepped: true,
        keys: neck ? neck.delay : [], format: seconds },
      { id: "losses", title: `Drops${discards.length ? ", policer discards" : ""} and retransmissions (cumulative)`, stepped: true,
        keys: pick([`flow.${flow}.retransmissions`, ...drops, ...discards]), format: packets },
    ].filter((s) => s.keys.length).map((s) => ({ ...s, labels: s.keys.map(label) }));
  }

  // The frame of `keys` in the zoomed range: {etag, body}, or null while `etag` is current.
  async function frame(keys, etag = null) {
    const q = new URLSearchParams({ keys: keys.join(","), max_points: "800" });
    if (range.start !== null) q.set("start", String(range.start));
    if (range.end !== null) q.set("end", String(range.end));
    return revalidate(`${base}/frame?${q}`, etag);
  }

  // What a chart's holder says of its data (for tests and the curious): rows, last time.
  function mark(holder, data) {
    const t = data[0];
    holder.dataset.points = String(t.length);
    holder.dataset.tEnd = String(t.length ? t[t.length - 1] : 0);
  }

  // One chart's new frame drawn, keeping its ETag.
  function show(entry, got) {
    entry.etag = got.etag;
    const data = tcpfrCharts.columns(got.body, entry.spec.keys);
    entry.chart.setData(data, true);
    mark(entry.holder, data);
  }

  async function zoom(min, max) {
    range = min === null ? { start: null, end: null } : { start: Math.max(0, min), end: max };
    await Promise.all(charts.map(async (entry) => {
      const got = await frame(entry.spec.keys);
      entry.chart.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false); // synced boxes too
      show(entry, got);
      if (min !== null) entry.chart.setScale("x", { min: range.start, max: range.end });
    }));
  }

  // The charts of `flow`: the final series, or with `partial` those stored so far (each
  // title says so; `data-partial` on the box, `data-ready` only once they are final).
  async function drawCharts(flow, partial = false) {
    const box = document.getElementById("charts");
    box.replaceChildren();
    delete box.dataset.ready;
    charts = [];
    for (const spec of chartSpecs(flow)) {
      const holder = el("div", { class: "chart", id: `chart-${spec.id}`, "data-keys": spec.keys.join(",") });
      box.append(holder);
      const got = await frame(spec.keys);
      const title = partial ? { ...spec, title: `${spec.title} (so far)` } : spec;
      const data = tcpfrCharts.columns(got.body, spec.keys);
      const chart = tcpfrCharts.make(holder, title, data, (a, b) => zoom(a, b).catch(showError));
      mark(holder, data);
      charts.push({ spec, chart, holder, etag: got.etag });
    }
    if (partial) box.dataset.partial = "true";
    else {
      delete box.dataset.partial;
      box.dataset.ready = "true";
    }
    note(partial);
  }

  // Under the charts' heading, while they are partial: how far the run has got.
  function note(partial) {
    const box = document.getElementById("charts-note");
    box.hidden = !partial;
    if (!partial) return;
    const reached = Math.max(0, ...charts.map(({ chart }) => {
      const t = chart.data[0];
      return t.length ? t[t.length - 1] : 0;
    }));
    box.textContent = `So far: the run is still going. The charts show its series up to ` +
      `${seconds(reached)} of simulated time, as the worker stored them, and are redrawn as ` +
      `more arrive; the final series replace them when it finishes.`;
  }

  // The flows of a running run, from the series it has stored (its summary comes at the end).
  function flowsOf(keys) {
    return [...new Set(keys.filter((k) => k.startsWith("flow.")).map((k) => k.split(".")[1]))];
  }

  function picker(flows, draw) {
    const select = document.getElementById("flow");
    const chosen = select.value;
    select.replaceChildren(...flows.map((f) => el("option", { value: f, text: f })));
    if (flows.includes(chosen)) select.value = chosen;
    document.getElementById("flow-picker").hidden = flows.length < 2;
    select.onchange = () => draw(select.value).catch(showError);
    return select.value || flows[0];
  }

  // While the run is queued or running: its series as far as they go, polled (every 2 s,
  // the worker's snapshot interval, backing off while nothing changes) with each chart's
  // ETag, so an unchanged frame costs a 304. A queued run's series answer 409: not yet
  // (the poller backs off, and looks again when the stream says the run started).
  function watchSeries() {
    let drawn = false;
    async function step() {
      if (!drawn) {
        index = (await api(`${base}/series`)).series;
        const flows = flowsOf(index.map((s) => s.key));
        if (!flows.length) return true; // running, its first snapshot due within 2 s
        document.getElementById("chart-section").hidden = false;
        // Another flow picked: drawn by the next step, never beside one under way.
        const redraw = async () => { drawn = false; handle.now(); };
        await drawCharts(picker(flows, redraw), true);
        drawn = true;
        return true;
      }
      let fresh = false;
      for (const entry of charts) {
        const got = await frame(entry.spec.keys, entry.etag);
        if (got) {
          show(entry, got);
          fresh = true;
        }
      }
      if (fresh) note(true);
      return fresh;
    }
    const quiet = (err) => !(err instanceof tcpfr.ApiError && err.status === 409) && showError(err);
    const handle = poll(step, { min: 2000, max: 10000, onError: quiet });
    return handle;
  }

  async function results() {
    if (live) await live.stop(); // its last poll ends before the final charts are drawn
    live = null;
    run = await api(base);
    header(run);
    if (run.status !== "succeeded") {
      // A run that did not succeed has no series: nothing partial stays on the page.
      document.getElementById("chart-section").hidden = true;
      document.getElementById("charts").replaceChildren();
      return;
    }
    document.getElementById("results").hidden = false;
    document.getElementById("chart-section").hidden = false;
    diagnosis(run);
    document.dispatchEvent(new CustomEvent("tcpfr:run", { detail: run })); // fix.js
    timeBars(run);
    summary(run);
    pvcs(run);
    downloads(run);
    index = (await api(`${base}/series`)).series;
    const flow = picker(Object.keys(run.summary.flows), (f) => drawCharts(f));
    await drawCharts(flow);
  }

  async function main() {
    run = await api(base);
    header(run);
    const finished = FINISHED.includes(run.status);
    if (finished) {
      (await api(`${base}/events`)).events.forEach(history);
      return results();
    }
    // Live: every step of the run's history and its progress, and its series so far,
    // until done.
    live = watchSeries();
    stream(`${base}/stream`, {
      status: (event) => {
        history(event);
        if (event.event === "started" && live) live.now();
      },
      progress: (p) => {
        setBar(document.getElementById("progress"), p.progress, p.status);
        setStatus(p.status);
        window.tcpfrProgressSeen = (window.tcpfrProgressSeen || []).concat([p.progress]);
      },
      done: () => results().catch(showError),
      error: (status) => showError(`stream: HTTP ${status}`),
    });
  }

  document.getElementById("reset-zoom").onclick = () => zoom(null, null).catch(showError);
  main().catch(showError);
})();
