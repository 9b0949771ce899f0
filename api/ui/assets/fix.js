// The run page's "What would fix it?": a target box that asks the advisor (POST /v1/advice
// from this run) and opens its page; and the run's remedies, predicted by the bounds, with a
// check that measures them by simulation (POST /v1/runs/{id}/remedies/check, started at once) and shows each
// one's measured effect. Shown once run.js has the finished run (event "tcpfr:run").
"use strict";
(() => {
  const { api, el, verdictPill, seconds, bps, showError, FINISHED } = tcpfr;

  // A target the transfer does not meet yet: half its time, or twice its goodput.
  function suggestion(flow, metric) {
    if (metric === "completion_time") {
      const t = flow.completion_time;
      return flow.completed && t ? +(t / 2).toPrecision(2) : 60;
    }
    return +((2 * (flow.goodput_bps || 1e5)) / 1e3).toPrecision(2);
  }

  function targetForm(run) {
    const flows = Object.entries(run.summary.flows).filter(([, f]) => f.kind === "tcp");
    if (!flows.length) return null;
    const flowSelect = el("select", { name: "flow", id: "fix-flow" },
      flows.map(([id]) => el("option", { value: id, text: id })));
    const metric = el("select", { name: "metric", id: "fix-metric" },
      el("option", { value: "completion_time", text: "completes within" }),
      el("option", { value: "goodput", text: "gets a goodput of at least" }));
    const value = el("input", { name: "value", id: "fix-target", type: "number", min: "0",
                                step: "any", required: true, size: 8 });
    const unit = el("span", { id: "fix-unit" });
    const budget = el("input", { name: "budget", id: "fix-budget", type: "number", min: "1",
                                 max: "200", value: "30", size: 4 });
    // Sure: a configuration meets the target only when its whole 95% interval does.
    const sure = el("input", { name: "sure", id: "fix-sure", type: "checkbox" });
    const refill = () => {
      const flow = run.summary.flows[flowSelect.value];
      if (!flow.completed && metric.value === "completion_time") metric.value = "goodput";
      value.value = suggestion(flow, metric.value);
      unit.textContent = metric.value === "completion_time" ? "s" : "kbit/s";
    };
    flowSelect.onchange = metric.onchange = refill;
    const form = el("form", { id: "fix-form", class: "fix" },
      el("label", {}, "Make ", flowSelect), " ", metric, " ", value, " ", unit,
      el("label", {}, " using at most ", budget, " runs"), " ",
      el("label", { title: "Over several seeds, count a change as meeting the target only when its whole 95% interval does, not just its mean" },
         sure, " sure (whole interval)"), " ",
      el("button", { type: "submit", text: "What would fix it?" }));
    form.onsubmit = async (e) => {
      e.preventDefault();
      const op = metric.value === "completion_time" ? "completion_time<=" : "goodput>=";
      const target = `${flowSelect.value}.${op}${value.value}${unit.textContent === "s" ? "s" : "kbps"}`;
      try {
        const advice = await api("/v1/advice", {
          method: "POST",
          body: { run_id: run.id, target, budget: Number(budget.value),
                  assurance: sure.checked ? "interval" : "mean" },
        });
        location.href = `/ui/advice/${advice.id}`;
      } catch (err) { showError(err); }
    };
    refill();
    return form;
  }

  const effect = (metric, m) => (m && m.mean !== null && m.mean !== undefined
    ? (metric === "completion_time" ? seconds(m.mean) : bps(m.mean)) : "–");

  function predicted(doc) {
    const rows = [];
    for (const [flow, remedies] of Object.entries(doc.predicted || {})) {
      for (const r of remedies) {
        rows.push(el("li", { class: r.helps ? "helps" : "wont" }, el("strong", { text: `${flow}: ` }), r.text));
      }
    }
    return rows.length ? el("ul", { class: "remedies", id: "remedies-predicted" }, rows) : null;
  }

  function measured(check) {
    const report = check.report;
    if (!report || !report.items) return el("p", { class: "meta", text: `Check ${check.status}…` });
    const rows = report.items.map((i) => el("tr", { class: "verdict-" + i.verdict.replace(/ /g, "-") },
      el("td", { text: i.text }),
      el("td", { text: effect(report.metric, i.before) }),
      el("td", { text: effect(report.metric, i.after) }),
      el("td", { text: i.pct === null || i.pct === undefined ? "–" : `${i.pct > 0 ? "+" : ""}${i.pct.toFixed(0)}%` }),
      el("td", {}, verdictPill(i))));
    const table = el("table", { id: "remedies-checked", class: "figures" },
      el("thead", {}, el("tr", {}, ["Remedy, measured", "Before", "After", "Change", "Verdict"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows));
    // The check's conclusion once finished: the cheapest remedy nearly as good as the best.
    const last = report.finished && report.text && report.text[report.text.length - 1];
    return last ? el("div", {}, table, el("p", { id: "remedies-conclusion", text: last })) : table;
  }

  async function showRemedies(run) {
    const box = document.getElementById("remedies");
    const doc = await api(`/v1/runs/${run.id}/remedies`);
    const parts = [];
    if (doc.check) {
      parts.push(measured(doc.check));
      if (!FINISHED.includes(doc.check.status)) setTimeout(() => showRemedies(run).catch(showError), 1000);
      else box.dataset.checked = "true";
    } else {
      // Nothing is recommended before it is measured: the remedies the bounds suggest are
      // shown as candidates while the check simulates each (the same seeds, through the
      // result cache), and the measured table replaces them.
      const list = predicted(doc);
      if (list) {
        parts.push(el("p", { class: "meta", id: "remedies-measuring",
                             text: "Candidates from the bounds, being measured by simulation…" }), list);
        api(`/v1/runs/${run.id}/remedies/check`, { method: "POST", body: {} })
          .then(() => setTimeout(() => showRemedies(run).catch(showError), 500))
          .catch(showError);
      }
    }
    box.replaceChildren(...parts);
  }

  document.addEventListener("tcpfr:run", (e) => {
    const run = e.detail;
    const panel = document.getElementById("fix");
    if (!panel || run.status !== "succeeded") return;
    const form = targetForm(run);
    if (!form) return;
    panel.hidden = false;
    document.getElementById("fix-box").replaceChildren(form);
    showRemedies(run).catch(showError);
  });
})();
