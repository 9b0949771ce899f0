// tcpfr's browser client: the public API with an optional key, an SSE reader, helpers.
// The key (when the API asks for one) lives in sessionStorage: gone when the tab closes.
"use strict";
const tcpfr = (() => {
  const KEY = "tcpfr.apiKey";
  let asking = null;

  function authHeaders() {
    const key = sessionStorage.getItem(KEY);
    return key ? { Authorization: "Bearer " + key } : {};
  }

  // A small modal form; resolves once the user gave a key.
  function askKey(message) {
    if (asking) return asking;
    asking = new Promise((resolve) => {
      const dialog = document.createElement("dialog");
      dialog.className = "key-dialog";
      dialog.innerHTML =
        '<form method="dialog"><h2>API key</h2><p class="why"></p>' +
        '<input name="key" type="password" autocomplete="off" placeholder="tcpfr_..." required>' +
        '<p class="hint">Kept in this tab only (sessionStorage). Issue one with ' +
        "<code>python -m api.keys create --tenant NAME --name WHAT</code>.</p>" +
        '<button type="submit">Use key</button></form>';
      dialog.querySelector(".why").textContent = message || "This API needs a key.";
      document.body.appendChild(dialog);
      dialog.addEventListener("close", () => {
        const value = dialog.querySelector("input").value.trim();
        dialog.remove();
        asking = null;
        if (value) sessionStorage.setItem(KEY, value);
        resolve(value);
      });
      dialog.showModal();
    });
    return asking;
  }

  class ApiError extends Error {
    constructor(status, problem) {
      super((problem && (problem.detail || problem.title)) || "HTTP " + status);
      this.status = status;
      this.problem = problem;
    }
  }

  // fetch() with the tab's key; on a 401 the key is asked for and the request sent again.
  // Any other error status is an ApiError carrying the problem document.
  async function fetchWithKey(path, init = {}) {
    for (;;) {
      const resp = await fetch(path, { ...init, headers: { ...authHeaders(), ...init.headers } });
      if (resp.status === 401) {
        const problem = await resp.json().catch(() => null);
        sessionStorage.removeItem(KEY);
        await askKey(problem && problem.detail);
        continue;
      }
      if (!resp.ok && resp.status !== 304) {
        throw new ApiError(resp.status, await resp.json().catch(() => null));
      }
      return resp;
    }
  }

  async function api(path, { method = "GET", body, headers = {} } = {}) {
    const init = { method, headers: { Accept: "application/json", ...headers } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const resp = await fetchWithKey(path, init);
    return resp.status === 204 ? null : resp.json();
  }

  // A GET of a document that may change, sent with the ETag of the copy held: null while
  // that copy is current (the API's 304), else {etag, body}. Given an If-None-Match of its
  // own, fetch() hands the 304 to us instead of answering from the browser's cache.
  async function revalidate(path, etag = null) {
    const headers = { Accept: "application/json" };
    if (etag) headers["If-None-Match"] = etag;
    const resp = await fetchWithKey(path, { headers });
    if (resp.status === 304) return null;
    return { etag: resp.headers.get("ETag"), body: await resp.json() };
  }

  // Calls `step()` (async; true when it found something new, or wants to look again soon)
  // until stopped: again after `min` ms while it does, backing off to `max` ms while it
  // does not, and not at all while the tab is hidden. now() looks at once (something
  // happened elsewhere); stop() resolves once a step under way has ended, so the caller
  // can draw over what it drew.
  function poll(step, { min = 2000, max = 10000, onError = null } = {}) {
    let stopped = false, timer = null, delay = min, busy = false, soon = false;
    let current = Promise.resolve(false);
    async function tick() {
      timer = null;
      if (stopped) return;
      let fresh = false;
      if (!document.hidden) {
        busy = true;
        current = step().catch((err) => { onError && onError(err); return false; });
        fresh = await current;
        busy = false;
      }
      if (stopped) return;
      delay = fresh || soon ? min : Math.min(max, Math.round(delay * 1.5));
      soon = false;
      timer = setTimeout(tick, delay);
    }
    tick();
    return {
      now() {
        if (stopped) return;
        if (busy) { soon = true; return; }
        clearTimeout(timer);
        delay = min;
        tick();
      },
      stop() { stopped = true; clearTimeout(timer); return current; },
    };
  }

  // A file from the API saved by the browser: fetched with the key (a plain link could not
  // send it), then handed to the browser's download as `filename`.
  async function download(path, filename) {
    const resp = await fetchWithKey(path);
    const url = URL.createObjectURL(await resp.blob());
    const a = Object.assign(document.createElement("a"), { href: url, download: filename });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  }

  // Server-Sent Events over fetch (EventSource cannot send the Authorization header):
  // handlers.progress/status/done get each event's parsed data; reconnects after a drop
  // with Last-Event-ID, so nothing is missed and nothing repeats. Returns {close()}.
  function stream(path, handlers) {
    let last = null;
    let closed = false;
    let controller = null;
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

    function dispatch(block) {
      let id = null, event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const at = line.indexOf(":");
        const field = at < 0 ? line : line.slice(0, at);
        const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
        if (field === "id") id = value;
        else if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      if (id !== null) last = id;
      if (!data.length) return;
      const handler = handlers[event];
      if (handler) handler(JSON.parse(data.join("\n")), id);
      if (event === "done") closed = true;
    }

    (async () => {
      while (!closed) {
        controller = new AbortController();
        let wait = 2000;
        try {
          const headers = { Accept: "text/event-stream", ...authHeaders() };
          if (last !== null) headers["Last-Event-ID"] = last;
          const resp = await fetch(path, { headers, signal: controller.signal });
          if (resp.status === 401) {
            sessionStorage.removeItem(KEY);
            await askKey();
            continue;
          }
          if (!resp.ok) {
            wait = 1000 * Number(resp.headers.get("Retry-After") || 5);
            if (resp.status === 404) { handlers.error && handlers.error(resp.status); return; }
          } else {
            const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
            let buffer = "";
            for (;;) {
              const { value, done } = await reader.read();
              if (done) break;
              buffer += value.replace(/\r\n?/g, "\n");
              let cut;
              while ((cut = buffer.indexOf("\n\n")) >= 0) {
                dispatch(buffer.slice(0, cut));
                buffer = buffer.slice(cut + 2);
              }
            }
          }
        } catch (err) {
          if (closed) return;
        }
        if (!closed) await sleep(wait);
      }
    })();
    return { close() { closed = true; controller && controller.abort(); } };
  }

  // --- formatting -------------------------------------------------------------------------
  function si(value, unit = "", digits = 3) {
    if (value === null || value === undefined || Number.isNaN(value)) return "–";
    const abs = Math.abs(value);
    const steps = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [size, prefix] of steps) {
      if (abs >= size) return +(value / size).toPrecision(digits) + " " + prefix + unit;
    }
    if (abs !== 0 && abs < 1 && unit === "s") return +(value * 1000).toPrecision(digits) + " ms";
    return (Number.isInteger(value) ? String(value) : String(+value.toPrecision(digits))) + (unit ? " " + unit : "");
  }
  const bytes = (v) => si(v, "B");
  const bps = (v) => si(v, "bit/s");
  const seconds = (v) => si(v, "s");

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v !== null && v !== undefined && v !== false) node.setAttribute(k, v);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function progressBar(fraction, status) {
    const pct = Math.round((fraction || 0) * 100);
    return el("div", { class: "bar " + (status || ""), role: "progressbar",
                       "aria-valuenow": pct, "aria-valuemin": 0, "aria-valuemax": 100 },
      el("span", { style: `width:${pct}%` }), el("em", { text: pct + "%" }));
  }

  function setBar(node, fraction, status) {
    const pct = Math.round((fraction || 0) * 100);
    node.className = "bar " + (status || "");
    node.setAttribute("aria-valuenow", pct);
    node.querySelector("span").style.width = pct + "%";
    node.querySelector("em").textContent = pct + "%";
  }

  // The states in which a run or an advice has finished.
  const FINISHED = ["succeeded", "failed", "cancelled"];

  // The head of a run's, sweep's or advice's page: the tab's title, the heading and the
  // status pill (`text`: the pill's words, where they say more than the status).
  function setHead(name, status, text = status) {
    document.title = `tcpfr — ${name} (${status})`;
    document.getElementById("title").textContent = name;
    setStatus(status, text);
  }

  function setStatus(status, text = status) {
    const pill = document.getElementById("status");
    pill.textContent = text;
    pill.className = "pill " + status;
  }

  // A sweep's or an advice's runs by status, as its progress line says them.
  function countsText(c) {
    return `${c.succeeded} succeeded, ${c.running} running, ${c.queued} queued` +
      (c.failed ? `, ${c.failed} failed` : "") + (c.cancelled ? `, ${c.cancelled} cancelled` : "");
  }

  // A checked remedy's verdict: recommended (as a success), worse (as a failure), or as measured.
  function verdictPill(item) {
    return el("span", { class: "pill " + (item.recommended ? "succeeded" : item.verdict === "worse" ? "failed" : ""),
                        text: item.recommended ? "recommended" : item.verdict });
  }

  function showError(err) {
    const box = document.getElementById("error");
    if (!box) return;
    box.hidden = false;
    box.textContent = err instanceof Error ? err.message : String(err);
  }

  return {
    api, revalidate, poll, stream, download, askKey, ApiError, si, bytes, bps, seconds, el, progressBar, setBar,
    FINISHED, setHead, setStatus, countsText, verdictPill, showError,
  };
})();
