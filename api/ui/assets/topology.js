// A scenario's topology as SVG: nodes in columns by hop count from the flows' senders (a WAN
// path reads left to right, a dumbbell's senders share the first column), links as lines
// labelled with rate and delay, Frame Relay PVCs as dashed arcs labelled with their CIR.
// Plain SVG rather than a graph library: these networks are paths, dumbbells and small
// meshes of tens of nodes, which a layered layout draws in a page of code, where the graph
// libraries that lay out any graph weigh hundreds of kilobytes.
"use strict";
const tcpfrTopology = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const KIND = { host: "#1f6feb", router: "#2e7d32", fr_switch: "#b26a00" };
  const { si } = tcpfr;

  function svg(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  const rate = (v) => (typeof v === "number" ? si(v, "bit/s") : String(v));
  const delay = (v) => (typeof v === "number" ? si(v, "s") : String(v));

  // Columns by breadth-first hop count from the flows' sources (from the first node when
  // there are no flows); nodes out of reach go in a last column.
  function layers(nodes, links, flows) {
    const ids = nodes.map((n) => n.id);
    const next = new Map(ids.map((id) => [id, []]));
    for (const l of links) {
      if (next.has(l.a) && next.has(l.b)) { next.get(l.a).push(l.b); next.get(l.b).push(l.a); }
    }
    const starts = flows.map((f) => f.src).filter((id) => next.has(id));
    const depth = new Map();
    const queue = (starts.length ? starts : ids.slice(0, 1)).map((id) => [id, 0]);
    for (const [id] of queue) depth.set(id, 0);
    while (queue.length) {
      const [id, d] = queue.shift();
      for (const n of next.get(id)) if (!depth.has(n)) { depth.set(n, d + 1); queue.push([n, d + 1]); }
    }
    const last = Math.max(-1, ...depth.values()) + 1;
    return ids.map((id) => (depth.has(id) ? depth.get(id) : last));
  }

  function draw(container, scenario) {
    const nodes = (scenario.nodes || []).filter((n) => n && n.id !== undefined);
    const links = (scenario.links || []).filter((l) => l && l.a !== undefined && l.b !== undefined);
    const flows = (scenario.flows || []).filter((f) => f && f.src !== undefined);
    const pvcs = ((scenario.frame_relay || {}).pvcs || []).filter((p) => p && p.src !== undefined);
    const column = layers(nodes, links, flows);
    const columns = Math.max(1, ...column.map((c) => c + 1));
    const rows = new Map();
    const place = new Map();
    const colW = 150, rowH = 86, padX = 56, padY = pvcs.length ? 84 : 56;
    nodes.forEach((n, i) => {
      const c = column[i];
      const r = rows.get(c) || 0;
      rows.set(c, r + 1);
      place.set(n.id, { x: padX + c * colW, y: padY + r * rowH, node: n });
    });
    const height = padY * 2 + (Math.max(1, ...rows.values()) - 1) * rowH + 20;
    const width = padX * 2 + (columns - 1) * colW;
    // As wide as its box (scaled down, never up past its natural size).
    const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img",
                              style: `max-width:${width}px`,
                              "aria-label": "topology", "data-nodes": nodes.length,
                              "data-links": links.length, "data-pvcs": pvcs.length });
    for (const l of links) {
      const a = place.get(l.a), b = place.get(l.b);
      if (!a || !b) continue;
      const g = svg("g", { class: "link", "data-link": l.id });
      g.append(svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y,
                             stroke: l.encap === "frame_relay" ? "#b26a00" : "#8a93a6",
                             "stroke-width": 2.5 }));
      const mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2;
      g.append(svg("text", { x: mx, y: my - 16, class: "label strong" }, l.id));
      g.append(svg("text", { x: mx, y: my - 4, class: "label" },
                   `${rate(l.rate)} · ${delay(l.delay)}`));
      root.append(g);
    }
    for (const p of pvcs) {
      const a = place.get(p.src), b = place.get(p.dst);
      if (!a || !b) continue;
      const top = Math.min(a.y, b.y) - 60; // control points: the curve peaks 45 px up
      const apex = Math.min(a.y, b.y) - 14 - 0.75 * 46;
      const g = svg("g", { class: "pvc", "data-pvc": p.id });
      g.append(svg("path", { d: `M${a.x},${a.y - 14} C${a.x},${top} ${b.x},${top} ${b.x},${b.y - 14}`,
                             fill: "none", stroke: "#b26a00", "stroke-dasharray": "5 4",
                             "stroke-width": 1.5 }));
      g.append(svg("text", { x: (a.x + b.x) / 2, y: apex - 5, class: "label pvc" },
                   `PVC ${p.id}` + (p.dlci !== undefined ? ` DLCI ${p.dlci}` : "") +
                   (p.cir !== undefined && p.cir !== null ? ` · CIR ${rate(p.cir)}` : "")));
      root.append(g);
    }
    for (const { x, y, node } of place.values()) {
      const g = svg("g", { class: "node", "data-node": node.id });
      const fill = KIND[node.kind] || "#5c6475";
      g.append(node.kind === "fr_switch"
        ? svg("rect", { x: x - 16, y: y - 12, width: 32, height: 24, rx: 4, fill })
        : svg("circle", { cx: x, cy: y, r: node.kind === "router" ? 13 : 10, fill }));
      g.append(svg("text", { x, y: y + 28, class: "label strong" }, node.id));
      g.append(svg("text", { x, y: y + 40, class: "label" }, node.kind || ""));
      root.append(g);
    }
    container.replaceChildren(root);
  }

  return { draw };
})();
