// Where each TCP flow's time went (the Result's `time`, docs/scenario.md): a bar per flow,
// a segment per state, or, for many flows, one bar of their summed seconds and how many
// flows each state cost the most.
"use strict";
const tcpfrTime = (() => {
  const { el } = tcpfr;
  // [state, words, colour], in the order the bars stack (the pipe full first).
  const STATES = [
    ["busy", "busy: the pipe full", "#2ca02c"],
    ["receive_window", "receive window", "#1f6feb"],
    ["send_buffer", "send buffer", "#17becf"],
    ["ack_clock", "ACKs' way back", "#e377c2"],
    ["slow_start", "slow start", "#ff7f0e"],
    ["congestion_avoidance", "congestion avoidance", "#bcbd22"],
    ["recovery", "loss recovery", "#d62728"],
    ["timeout", "waiting for a timeout", "#7b241c"],
    ["application", "application idle", "#9e9e9e"],
    ["handshake", "handshake", "#9467bd"],
  ];
  const WORDS = Object.fromEntries(STATES.map(([s, w]) => [s, w]));
  const secs = (v) => `${v.toLocaleString(undefined, { maximumFractionDigits: v < 10 ? 2 : 1 })} s`;
  const pct = (part, whole) => `${whole > 0 ? Math.round((100 * part) / whole) : 0}%`;

  // The costliest state of a flow's time: [state, seconds], or null.
  function top(time) {
    if (!time || !(time.duration > 0)) return null;
    return STATES.map(([s]) => [s, time[s] || 0]).reduce((a, b) => (b[1] > a[1] ? b : a));
  }

  // "receive window 76%": a flow's costliest state, for a table cell.
  function most(time) {
    const t = top(time);
    return t ? `${WORDS[t[0]]} ${pct(t[1], time.duration)}` : "–";
  }

  function bar(time, label) {
    const total = STATES.reduce((a, [s]) => a + (time[s] || 0), 0);
    const segments = STATES.filter(([s]) => (time[s] || 0) > 0).map(([s, words, colour]) =>
      el("span", {
        class: "seg",
        "data-state": s,
        style: `width:${(100 * time[s]) / total}%;background:${colour}`,
        title: `${words}: ${secs(time[s])} (${pct(time[s], total)})`,
      }));
    return el("div", { class: "timebar", role: "img", "aria-label": label }, ...segments);
  }

  function legend() {
    return el("div", { class: "time-legend" }, ...STATES.map(([, words, colour]) =>
      el("span", {}, el("i", { style: `background:${colour}` }), words)));
  }

  // One row per flow: its name, its bar, and what cost it the most.
  function perFlow(flows) {
    return Object.entries(flows).filter(([, f]) => f.time).map(([fid, f]) => {
      const t = top(f.time);
      const words = t
        ? `${WORDS[t[0]]}: ${secs(t[1])} of ${secs(f.time.duration)}`
        : "never started";
      return el("div", { class: "time-row", "data-flow": fid },
        el("strong", { text: fid }), bar(f.time, `${fid}: ${words}`), el("em", { text: words }));
    });
  }

  // Many flows: the states' seconds summed over the flows, and per state the flows it cost
  // the most (the per-flow table below has each flow's own).
  function population(flows) {
    const timed = Object.values(flows).filter((f) => f.time);
    const sum = { duration: 0 };
    const costliest = {};
    for (const f of timed) {
      sum.duration += f.time.duration;
      for (const [s] of STATES) sum[s] = (sum[s] || 0) + (f.time[s] || 0);
      const t = top(f.time);
      if (t) costliest[t[0]] = (costliest[t[0]] || 0) + 1;
    }
    const words = STATES.filter(([s]) => costliest[s])
      .map(([s]) => `${WORDS[s]} for ${costliest[s].toLocaleString()}`).join(", ");
    return [
      el("div", { class: "time-row", "data-flow": "all" },
        el("strong", { text: `all ${timed.length.toLocaleString()}` }),
        bar(sum, `${timed.length} flows' time summed`),
        el("em", { text: `${secs(sum.duration)} of flow time` })),
      el("p", { class: "time-note", text: `The costliest state: ${words || "none"} flows.` }),
    ];
  }

  function render(box, flows, many) {
    box.replaceChildren(legend(), ...(many ? population(flows) : perFlow(flows)));
  }

  return { render, most };
})();
