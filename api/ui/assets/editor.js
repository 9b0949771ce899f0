// /ui/editor: a scenario in YAML, checked by the API as it changes (POST
// /v1/scenarios/validate: its 422 problem's errors inline at their JSON pointers, its dry-run
// facts beside), drawn as a topology, then saved, run, swept or handed to the advisor.
"use strict";
(() => {
  const { api, ApiError, el, si, bps, bytes, seconds, showError } = tcpfr;
  const BLANK = {
    name: "my-wan",
    duration: "600s",
    nodes: [
      { id: "client", kind: "host" }, { id: "branch", kind: "router" },
      { id: "hq", kind: "router" }, { id: "server", kind: "host" },
    ],
    links: [
      { id: "lan1", a: "client", b: "branch", rate: "100Mbps", delay: "0.1ms" },
      { id: "wan", a: "branch", b: "hq", rate: "2Mbps", delay: "40ms" },
      { id: "lan2", a: "hq", b: "server", rate: "100Mbps", delay: "0.1ms" },
    ],
    flows: [{ id: "transfer", kind: "tcp_bulk", src: "client", dst: "server", bytes: "10MB",
              tcp: { variant: "newreno", rcv_buf: "64KiB" } }],
  };

  let doc = null; // the YAML document last parsed (source ranges of its nodes)
  let scenario = null; // ...as plain data
  let valid = false;
  let checks = 0; // a later check's answer wins over an earlier one still in flight
  let saved = { text: null, id: null };
  let fieldNames = [];

  const cm = CodeMirror(document.getElementById("editor"), {
    mode: "yaml",
    lineNumbers: true,
    indentUnit: 2,
    tabSize: 2,
    matchBrackets: true,
    gutters: ["CodeMirror-lint-markers"],
    extraKeys: {
      "Ctrl-Space": "autocomplete",
      Tab: (ed) => ed.replaceSelection("  "), // YAML forbids tabs
    },
    hintOptions: { hint: complete, completeSingle: false },
    lint: { getAnnotations: check, async: true, delay: 500 },
  });
  window.tcpfrEditor = { cm };

  // Null is every optional field's default in the scenario language (none has another
  // default and also accepts null), so leaving nulls out of the canonical form changes
  // nothing and leaves what a person set.
  function withoutNulls(value) {
    if (Array.isArray(value)) return value.map(withoutNulls);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null)
        .map(([k, v]) => [k, withoutNulls(v)]));
    }
    return value;
  }

  function show(body, label) {
    cm.setValue(YAML.stringify(withoutNulls(body), { lineWidth: 0 }));
    cm.clearHistory();
    document.getElementById("saved").textContent = label;
  }

  async function load(source) {
    const [kind, ...rest] = source.split(":");
    const name = rest.join(":");
    if (kind === "preset") {
      const preset = await api(`/v1/presets/${encodeURIComponent(name)}`);
      saved = { text: null, id: null };
      show(preset.body, `preset ${name}, not saved yet`);
    } else if (kind === "run") {
      const body = await api(`/v1/runs/${encodeURIComponent(name)}/scenario`);
      saved = { text: null, id: null };
      show(body, `the scenario of run …${name.slice(-12)}, not saved yet`);
    } else if (kind === "scenario") {
      const stored = await api(`/v1/scenarios/${encodeURIComponent(name)}`);
      show(stored.scenario, "");
      saved = { text: cm.getValue(), id: stored.id };
      document.getElementById("saved").textContent = `saved scenario ${stored.id}`;
    } else {
      saved = { text: null, id: null };
      show(BLANK, "a blank template, not saved yet");
    }
  }

  async function fillSources() {
    const [presets, stored] = await Promise.all([
      api("/v1/presets"), api("/v1/scenarios?limit=50").catch(() => ({ items: [] })),
    ]);
    const select = document.getElementById("source");
    select.replaceChildren(
      el("option", { value: "blank", text: "a blank template" }),
      el("optgroup", { label: "Presets" }, presets.filter((p) => p.kind === "scenario")
        .map((p) => el("option", { value: `preset:${p.name}`, text: p.name }))),
      stored.items.length ? el("optgroup", { label: "Saved scenarios" }, stored.items
        .map((s) => el("option", { value: `scenario:${s.id}`, text: `${s.name} (…${s.id.slice(-8)})` }))) : null);
  }

  // --- checking ----------------------------------------------------------------------------
  const unescape = (part) => part.replace(/~1/g, "/").replace(/~0/g, "~");

  // The editor's range for a JSON pointer: its node's, or the nearest enclosing node's (a
  // missing field points into the object that lacks it).
  function rangeOf(pointer) {
    const path = (pointer || "").split("/").slice(1).map(unescape)
      .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
    for (let i = path.length; i >= 0; i--) {
      const node = i ? doc.getIn(path.slice(0, i), true) : doc.contents;
      if (node && node.range) {
        const from = cm.posFromIndex(node.range[0]);
        let to = cm.posFromIndex(node.range[1]);
        if (i < path.length || to.line > from.line) to = { line: from.line, ch: cm.getLine(from.line).length };
        return { from, to, exact: i === path.length };
      }
    }
    return { from: { line: 0, ch: 0 }, to: { line: 0, ch: cm.getLine(0).length }, exact: false };
  }

  function listProblems(items) {
    document.getElementById("problems").replaceChildren(...items.map((p) => el("li",
      { class: p.severity || "error", "data-pointer": p.pointer || "",
        onclick: () => { cm.setCursor(p.from); cm.focus(); } },
      p.pointer ? el("code", { text: p.pointer }) : null, p.pointer ? " " : null,
      p.message, el("span", { class: "where", text: ` (line ${p.from.line + 1})` }))));
  }

  function annotate(items) {
    listProblems(items);
    return items.map((p) => ({ from: p.from, to: p.to, message: (p.pointer ? p.pointer + ": " : "") + p.message,
                               severity: p.severity || "error" }));
  }

  async function check(text, update) {
    const mine = ++checks;
    const state = document.getElementById("dry-state");
    doc = YAML.parseDocument(text, { prettyErrors: true });
    valid = false;
    if (doc.errors.length) {
      state.textContent = "(the YAML does not parse)";
      document.getElementById("dry").classList.add("stale");
      update(annotate(doc.errors.map((e) => {
        const from = cm.posFromIndex(e.pos[0]);
        return { from, to: cm.posFromIndex(Math.max(e.pos[1], e.pos[0] + 1)), message: e.message.split("\n")[0] };
      })));
      return;
    }
    scenario = doc.toJS();
    try { tcpfrTopology.draw(document.getElementById("topology"), scenario || {}); } catch (err) { /* half-typed */ }
    fillFlows();
    state.textContent = "(checking…)";
    try {
      const facts = await api("/v1/scenarios/validate", { method: "POST", body: scenario });
      if (mine !== checks) return;
      valid = true;
      state.textContent = "";
      renderFacts(facts);
      document.getElementById("dry").classList.remove("stale");
      update(annotate(facts.warnings.map((w) => ({ from: { line: 0, ch: 0 }, to: { line: 0, ch: 0 },
                                                      message: w, severity: "warning" }))));
    } catch (err) {
      if (mine !== checks) return;
      if (!(err instanceof ApiError) || !err.problem) { showError(err); update([]); return; }
      const problem = err.problem;
      state.textContent = `(${problem.status}: ${problem.title}; the facts below are the last valid version's)`;
      document.getElementById("dry").classList.add("stale");
      const errors = problem.errors && problem.errors.length ? problem.errors
        : [{ pointer: "", msg: problem.detail || problem.title }];
      update(annotate(errors.map((e) => ({ ...rangeOf(e.pointer), pointer: e.pointer, message: e.msg }))));
    }
  }

  // "access1:branch>cloud" is a link in a direction: its name is enough here; "pvc:p1" is a PVC.
  const hop = (h) => (h.includes(">") ? h.split(":")[0] : h.replace(":", " "));

  function renderFacts(answer) {
    const flows = Object.entries((answer.facts || {}).flows || {});
    const rows = flows.map(([id, f]) => el("tr", {
      "data-flow": id, "data-window-bps": f.window_bps ?? "", "data-window-bytes": f.window_bytes ?? "",
      "data-bdp-bytes": f.bdp_bytes ?? "", "data-rtt": f.base_rtt ?? "" },
      el("th", {}, el("strong", { text: id }), el("div", { class: "path",
        text: (f.path || []).map(hop).join(" → ") })),
      el("td", { text: seconds(f.base_rtt) }),
      el("td", { text: f.bottleneck ? `${hop(f.bottleneck)} (${bps(f.bottleneck_rate_bps)})` : "–" }),
      el("td", { text: bytes(f.bdp_bytes) }),
      el("td", { text: f.window_bytes ? `${bytes(f.window_bytes)} → ${bps(f.window_bps)}` : "–" })));
    const cost = answer.cost || {};
    const est = cost.estimate || {};
    document.getElementById("dry").replaceChildren(
      el("table", { class: "figures", id: "dry-flows" },
        el("thead", {}, el("tr", {}, ["Flow and path", "RTT", "Bottleneck", "BDP", "Window → bound"]
          .map((h) => el("th", { text: h })))),
        el("tbody", {}, rows)),
      answer.warnings.length ? el("ul", { class: "warnings", id: "dry-warnings" },
        answer.warnings.map((w) => el("li", { text: w }))) : el("p", { class: "meta", text: "No warnings." }),
      el("p", { id: "dry-cost", class: cost.within_budget === false ? "error" : "meta",
                text: `Cost: about ${si(est.events)} events, ${si(est.packets)} packets, ` +
                      `${seconds(est.sim_time)} simulated, ~${seconds(est.seconds)} of a worker` +
                      (cost.within_budget === false ? `; over the budget of one run (${(cost.over || []).join(", ")})` : "; within the budget of one run") }),
      el("p", { class: "meta", text: `scenario hash ${answer.scenario_hash.slice(0, 12)}…` }));
  }

  // --- completions: the scenario schema's field names ------------------------------------
  async function loadFieldNames() {
    const spec = await fetch("/openapi.json").then((r) => r.json());
    const names = new Map();
    for (const schema of Object.values((spec.components || {}).schemas || {})) {
      for (const [name, prop] of Object.entries(schema.properties || {})) {
        if (!names.has(name)) names.set(name, (prop.description || "").split("\n")[0]);
      }
    }
    fieldNames = [...names].sort(([a], [b]) => a.localeCompare(b));
  }

  function complete(ed) {
    const cur = ed.getCursor();
    const before = ed.getLine(cur.line).slice(0, cur.ch);
    const m = /^(\s*(?:-\s+)?)([A-Za-z_]*)$/.exec(before);
    if (!m) return null;
    const word = m[2];
    const list = fieldNames.filter(([n]) => n.startsWith(word))
      .map(([n, d]) => ({ text: n + ": ", displayText: d ? `${n} — ${d.slice(0, 60)}` : n }));
    return { list, from: { line: cur.line, ch: cur.ch - word.length }, to: cur };
  }

  // --- save, run, sweep, advice --------------------------------------------------------------
  async function ensureSaved() {
    const text = cm.getValue();
    if (saved.id && saved.text === text) return saved.id;
    const body = YAML.parse(text);
    const row = await api("/v1/scenarios", { method: "POST", body });
    saved = { text, id: row.id };
    document.getElementById("saved").textContent = `saved scenario ${row.id}`;
    history.replaceState(null, "", `?scenario=${row.id}`);
    return row.id;
  }

  function fillFlows() {
    const select = document.getElementById("advice-flow");
    const ids = ((scenario && scenario.flows) || []).filter((f) => f && String(f.kind || "").startsWith("tcp"))
      .map((f) => String(f.id));
    if (ids.join() === [...select.options].map((o) => o.value).join()) return;
    select.replaceChildren(...ids.map((id) => el("option", { value: id, text: id })));
  }

  function sweepRow(path = "", values = "") {
    const remove = el("button", { type: "button", class: "plain", text: "×", title: "remove" });
    const row = el("div", { class: "sweep-row fix" },
      el("input", { name: "path", placeholder: "flows.backup.tcp.rcv_buf", size: 34, value: path }),
      el("input", { name: "values", placeholder: "8760, 64KiB, 256KiB", size: 40, value: values }),
      remove);
    remove.onclick = () => row.remove();
    document.getElementById("sweep-rows").append(row);
  }

  function sweepParameters() {
    const parameters = {};
    for (const row of document.querySelectorAll("#sweep-rows .sweep-row")) {
      const path = row.querySelector("[name=path]").value.trim();
      const raw = row.querySelector("[name=values]").value;
      if (!path) continue;
      // Each value read as YAML: 8760 is a number, T1 and 64KiB stay text for the API.
      parameters[path] = raw.split(",").map((v) => v.trim()).filter(Boolean).map((v) => YAML.parse(v));
    }
    return parameters;
  }

  // The sweep priced as it is filled in (dry run: nothing created): its runs and time, or
  // the API's objection with its field path.
  let pricing = null;
  let priced = 0;
  function pricePlan() {
    clearTimeout(pricing);
    pricing = setTimeout(async () => {
      const mine = ++priced;
      const out = document.getElementById("sweep-plan");
      const parameters = sweepParameters();
      if (!Object.keys(parameters).length || !valid) { out.textContent = ""; return; }
      try {
        const plan = await api("/v1/sweeps?dry_run=true", { method: "POST", body: {
          base: { scenario: YAML.parse(cm.getValue()) }, parameters, mode: "grid",
          replications: Number(document.querySelector("#sweep-form [name=replications]").value) } });
        if (mine !== priced) return;
        const est = plan.estimate;
        out.className = "meta";
        out.textContent = `${plan.point_count} points × ${plan.replications} = ${est.runs} runs` +
          (est.cached ? ` (${est.cached} from the cache)` : "") +
          `, about ${seconds(est.wall_seconds)} on ${est.workers} worker${est.workers === 1 ? "" : "s"}` +
          (plan.warnings.length ? `; ${plan.warnings.join("; ")}` : "");
      } catch (err) {
        if (mine !== priced) return;
        const p = err.problem;
        out.className = "error";
        out.textContent = p && p.errors && p.errors.length
          ? p.errors.map((e) => `${e.pointer || ""} ${e.msg}`).join("; ") : err.message;
      }
    }, 500);
  }

  const guard = (fn) => async (e) => {
    if (e) e.preventDefault();
    document.getElementById("error").hidden = true;
    try { await fn(e); } catch (err) { showError(err); }
  };

  document.getElementById("load").addEventListener("submit", guard(async (e) => {
    await load(e.target.source.value);
    history.replaceState(null, "", "?" + e.target.source.value.replace(":", "="));
  }));
  document.getElementById("save").addEventListener("click", guard(ensureSaved));
  document.getElementById("run").addEventListener("click", guard(async () => {
    const run = await api("/v1/runs", { method: "POST", body: { scenario_id: await ensureSaved() } });
    location.href = `/ui/runs/${run.id}`;
  }));
  document.getElementById("sweep-add").addEventListener("click", () => sweepRow());
  document.getElementById("sweep-form").addEventListener("input", pricePlan);
  document.getElementById("sweep-form").addEventListener("submit", guard(async (e) => {
    const body = { base: { scenario_id: await ensureSaved() }, parameters: sweepParameters(),
                   mode: "grid", replications: Number(e.target.replications.value) };
    const sweep = await api("/v1/sweeps", { method: "POST", body });
    location.href = `/ui/sweeps/${sweep.id}`;
  }));
  document.getElementById("advice-form").addEventListener("submit", guard(async (e) => {
    const f = e.target;
    let value = f.value.value.trim();
    if (/^[\d.]+$/.test(value)) value += f.metric.value === "completion_time" ? "s" : "kbps";
    const op = f.metric.value === "completion_time" ? "completion_time<=" : "goodput>=";
    const advice = await api("/v1/advice", { method: "POST", body: {
      scenario_id: await ensureSaved(), target: `${f.flow.value}.${op}${value}`,
      budget: Number(f.budget.value) } });
    location.href = `/ui/advice/${advice.id}`;
  }));

  (async () => {
    sweepRow();
    const params = new URLSearchParams(location.search);
    const kind = ["preset", "scenario", "run"].find((k) => params.has(k));
    const source = kind ? `${kind}:${params.get(kind)}` : "blank";
    await Promise.all([fillSources(), load(source), loadFieldNames().catch(() => {})]);
    if (kind !== "run") document.getElementById("source").value = source;
  })().catch(showError);
})();
