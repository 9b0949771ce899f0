// uPlot charts over columnar API data ({t: [...], key: [...]}), with drag-to-zoom that
// asks the caller for the data of the selected range (the API downsamples per request).
"use strict";
const tcpfrCharts = (() => {
  const COLORS = ["#1f6feb", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const GOLDEN_ANGLE = 137.508;

  // Series i of n: the eight colours above while they suffice; past eight, hues a golden
  // angle apart in OKLCH (perceptually even lightness and chroma, so no series fades out),
  // lightness stepping through three levels so that hues that come round again differ too.
  function colour(i, n) {
    if (n <= COLORS.length) return COLORS[i];
    const hue = (250 + i * GOLDEN_ANGLE) % 360;
    const lightness = [0.58, 0.72, 0.46][i % 3];
    return `oklch(${lightness} 0.16 ${hue.toFixed(1)})`;
  }

  // The y axis as wide as its longest label ("800 kbytes" does not fit a fixed width), after
  // uPlot's axis-autosize demo; on a second pass keep the size found, or it never settles.
  function labelWidth(u, values, axisIdx, cycleNum) {
    const axis = u.axes[axisIdx];
    if (cycleNum > 1) return axis._size;
    let size = axis.ticks.size + axis.gap;
    const longest = (values || []).reduce((a, v) => (String(v).length > a.length ? String(v) : a), "");
    if (longest) {
      u.ctx.font = axis.font[0];
      size += u.ctx.measureText(longest).width / devicePixelRatio;
    }
    return Math.ceil(size) + 4;
  }

  function width(container) {
    return Math.max(320, Math.floor(container.getBoundingClientRect().width) - 8);
  }

  // spec: {title, labels: [...], format(v), stepped: bool, sync: key, styles: {label: {...}}}
  // (styles: uPlot series options by label, over the defaults: a fill, a dash, a width)
  // onZoom(min, max) is called with the dragged x range (null, null on double-click).
  function make(container, spec, data, onZoom) {
    const series = [{ label: "t (s)", value: (u, v) => (v === null ? "–" : v.toFixed(3) + " s") }];
    spec.labels.forEach((label, i) => series.push({
      label,
      stroke: colour(i, spec.labels.length),
      width: 1.5,
      spanGaps: true,
      paths: spec.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
      value: (u, v) => (v === null || v === undefined ? "–" : spec.format(v)),
      ...((spec.styles || {})[label] || {}),
    }));
    const opts = {
      title: spec.title,
      width: width(container),
      height: spec.height || 230,
      scales: { x: { time: false } },
      series,
      axes: [
        { label: spec.xLabel || "simulated time (s)" },
        { size: labelWidth, values: (u, vals) => vals.map((v) => spec.format(v)) },
      ],
      cursor: { sync: { key: spec.sync || "tcpfr" }, drag: { x: true, y: false, setScale: false } },
      legend: { live: true },
    };
    const chart = new uPlot(opts, data, container);
    // The selection grows while the mouse drags (uPlot's setSelect fires on every move): act
    // once, when the button is let go (after uPlot's own mouseup has set the final box).
    let armed = false;
    chart.over.addEventListener("mousedown", () => { armed = true; });
    document.addEventListener("mouseup", () => armed && setTimeout(() => {
      armed = false;
      const sel = chart.select;
      if (sel.width < 4) return;
      const min = chart.posToVal(sel.left, "x");
      const max = chart.posToVal(sel.left + sel.width, "x");
      chart.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
      onZoom && onZoom(min, max);
    }, 0));
    chart.over.addEventListener("dblclick", () => onZoom && onZoom(null, null));
    window.addEventListener("resize", () => chart.setSize({ width: width(container), height: opts.height }));
    return chart;
  }

  // The columns of a frame as uPlot wants them: [t, col1, col2, ...] with nulls kept.
  function columns(frame, keys) {
    const cols = frame.columns;
    return [cols.t, ...keys.map((k) => (cols[k] || []).map((v) => (v === undefined ? null : v)))];
  }

  return { make, columns, COLORS, colour };
})();
