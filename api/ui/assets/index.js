// /ui/: the tenant's sweeps and runs (refreshed while any is active), and the start forms.
"use strict";
(() => {
  const { api, el, progressBar, bps, seconds, showError } = tcpfr;
  const figures = new Map(); // run id -> {completion, goodput, limit} of a succeeded run
  const ACTIVE = new Set(["queued", "running"]);
  let presets = [];

  const when = (iso) => (iso ? new Date(iso).toLocaleString() : "–");
  // Ids are UUIDv7: the first digits are the time, alike for runs made together.
  const shortId = (id) => "…" + id.slice(-12);

  async function loadPresets() {
    presets = await api("/v1/presets");
    const fill = (select, kind) => {
      select.replaceChildren(...presets.filter((p) => p.kind === kind)
        .map((p) => el("option", { value: p.name, text: p.name })));
    };
    fill(document.getElementById("scenario-presets"), "scenario");
    fill(document.getElementById("study-presets"), "study");
    describe(document.getElementById("scenario-presets").value);
  }

  function describe(name) {
    const p = presets.find((x) => x.name === name);
    document.getElementById("preset-description").textContent = p ? p.description : "";
    if (p && p.kind === "scenario") document.getElementById("open-editor").href = `/ui/editor?preset=${encodeURIComponent(name)}`;
  }

  async function keyFigures(run) {
    if (run.status !== "succeeded") return null;
    if (!figures.has(run.id)) {
      const doc = await api(`/v1/runs/${run.id}`);
      const flows = Object.entries(doc.summary ? doc.summary.flows : {});
      const [name, flow] = flows[0] || [null, {}];
      const diagnosis = (doc.diagnosis || {})[name] || {};
      figures.set(run.id, {
        completion: flow.completion_time, goodput: flow.goodput_bps,
        limit: diagnosis.limit ? `${name}: ${diagnosis.limit.replace(/_/g, " ")}` : "–",
      });
    }
    return figures.get(run.id);
  }

  async function refresh() {
    const [runs, sweeps] = await Promise.all([
      api("/v1/runs?limit=30"), api("/v1/sweeps?limit=20"),
    ]);
    const sweepRows = sweeps.items.map((s) => el("tr", { "data-id": s.id, class: "status-" + s.status },
      el("td", {}, el("a", { href: `/ui/sweeps/${s.id}`, text: s.name })),
      el("td", {}, el("span", { class: "pill " + s.status, text: s.status })),
      el("td", {}, progressBar(s.progress.fraction, s.status)),
      el("td", { text: `${s.progress.finished}/${s.run_count}` + (s.cache_hits ? ` (${s.cache_hits} cached)` : "") }),
      el("td", { text: s.progress.eta_seconds === null ? "–" : seconds(s.progress.eta_seconds) }),
      el("td", { text: when(s.created_at) })));
    document.querySelector("#sweeps tbody").replaceChildren(
      ...(sweepRows.length ? sweepRows : [el("tr", {}, el("td", { colspan: 6, class: "empty", text: "No sweeps yet: start a study above." }))]));

    const runRows = [];
    for (const r of runs.items) {
      const f = await keyFigures(r).catch(() => null);
      runRows.push(el("tr", { "data-id": r.id, class: "status-" + r.status },
        el("td", {}, el("a", { href: `/ui/runs/${r.id}`, text: shortId(r.id) })),
        el("td", { text: r.preset || r.scenario_name }),
        el("td", {}, el("span", { class: "pill " + r.status, text: r.status + (r.cache_hit ? " (cached)" : "") })),
        el("td", {}, progressBar(r.progress, r.status)),
        el("td", { text: f ? seconds(f.completion) : "–" }),
        el("td", { text: f ? bps(f.goodput) : "–" }),
        el("td", { text: f ? f.limit : "–" }),
        el("td", { text: when(r.created_at) })));
    }
    document.querySelector("#runs tbody").replaceChildren(
      ...(runRows.length ? runRows : [el("tr", {}, el("td", { colspan: 8, class: "empty", text: "No runs yet: run a preset above." }))]));
    const busy = runs.items.some((r) => ACTIVE.has(r.status)) ||
      sweeps.items.some((s) => ACTIVE.has(s.status));
    setTimeout(() => refresh().catch(showError), busy ? 1000 : 5000);
  }

  document.getElementById("scenario-presets").addEventListener("change", (e) => describe(e.target.value));
  document.getElementById("study-presets").addEventListener("change", (e) => describe(e.target.value));
  document.getElementById("start-run").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const run = await api("/v1/runs", { method: "POST", body: { preset: e.target.preset.value } });
      location.href = `/ui/runs/${run.id}`;
    } catch (err) { showError(err); }
  });
  document.getElementById("start-study").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const sweep = await api(`/v1/presets/${encodeURIComponent(e.target.preset.value)}/sweep`,
                              { method: "POST", body: {} });
      location.href = `/ui/sweeps/${sweep.id}`;
    } catch (err) { showError(err); }
  });
  // The one version (the package's) and the engine's beside it, as /healthz says them.
  fetch("/healthz").then((r) => r.json()).then((h) => {
    document.getElementById("version").textContent = `tcpfr ${h.version} · engine ${h.engine_version}`;
  }).catch(() => {});
  loadPresets().then(refresh).catch(showError);
})();
