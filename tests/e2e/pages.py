"""What the browser tests share: where screenshots go, scripts that count a canvas's
pixels, and the scenarios more than one page test runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servicekit import ROOT

ARTIFACTS = ROOT / "artifacts"
LOCAL = {"127.0.0.1", "localhost", "[::1]"}

# Pixels of a chart's canvas drawn in a saturated colour: series strokes, not the grey axes,
# grid and labels uPlot also draws there.
COLOURED_PIXELS = """
(selector) => Array.from(document.querySelectorAll(selector)).map((canvas) => {
  const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
    if (a > 200 && Math.max(r, g, b) - Math.min(r, g, b) > 80) n++;
  }
  return n;
})
"""

# Pixels of one canvas within `tol` of an RGB colour in every channel, fully opaque.
PIXELS_OF = """
([selector, rgb, tol]) => {
  const canvas = document.querySelector(selector);
  const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] > 200 && [0, 1, 2].every((c) => Math.abs(data[i + c] - rgb[c]) <= tol)) n++;
  }
  return n;
}
"""
CWND_BLUE, SSTHRESH_RED = (0x1F, 0x6F, 0xEB), (0xD6, 0x27, 0x28)


def fits(page: Any) -> None:
    """At the fixture's 1280 px the page never scrolls sideways: a wide table scrolls in its
    own section (app.css: section { overflow-x: auto })."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, width


def shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    return path


def many_flows(n: int) -> dict[str, Any]:
    """`n` NewReno senders, each on its own 100 Mb/s link, sharing a 10 Mb/s bottleneck."""
    nodes = [{"id": "ra", "kind": "router"}, {"id": "rcv", "kind": "host"}]
    links = [{"id": "wan", "a": "ra", "b": "rcv", "rate": "10Mbps", "delay": "10ms"}]
    flows = []
    for i in range(n):
        nodes.append({"id": f"s{i}", "kind": "host"})
        links.append({"id": f"l{i}", "a": f"s{i}", "b": "ra", "rate": "100Mbps", "delay": "1ms"})
        flows.append({"id": f"f{i}", "kind": "tcp_bulk", "src": f"s{i}", "dst": "rcv"})
    return {"name": f"{n} flows", "nodes": nodes, "links": links, "flows": flows, "duration": "3s"}


def policed_backup() -> dict[str, Any]:
    """5 MB over Frame Relay: 768 kbit/s access links, a PVC policed to CIR 256 kbit/s with
    Bc = Be = 32 kbit (its contract 512 kbit/s of frames), a 16 KiB window: TCP's bursts
    overrun Bc + Be and the policer discards frames (the case of bench/goldens.py, shorter)."""
    fr = {
        "encap": "frame_relay",
        "delay": "15ms",
        "rate": "768kbps",
        "queue": {"discipline": "droptail", "limit_packets": 100},
    }
    return {
        "name": "policed-backup",
        "duration": "600s",
        "nodes": [
            {"id": "ws", "kind": "host"},
            {"id": "branch", "kind": "router"},
            {"id": "cloud", "kind": "fr_switch"},
            {"id": "dc", "kind": "router"},
            {"id": "server", "kind": "host"},
        ],
        "links": [
            {"id": "lan1", "a": "ws", "b": "branch", "rate": "100Mbps", "delay": "0.1ms"},
            {"id": "access1", "a": "branch", "b": "cloud", **fr},
            {"id": "access2", "a": "cloud", "b": "dc", **fr},
            {"id": "lan2", "a": "dc", "b": "server", "rate": "100Mbps", "delay": "0.1ms"},
        ],
        "frame_relay": {
            "pvcs": [
                {
                    "id": "p1",
                    "dlci": 100,
                    "src": "branch",
                    "dst": "dc",
                    "cir": "256kbps",
                    "bc": 32000,
                    "be": 32000,
                }
            ]
        },
        "flows": [
            {
                "id": "backup",
                "kind": "tcp_bulk",
                "src": "ws",
                "dst": "server",
                "bytes": "5MB",
                "tcp": {"rcv_buf": "16KiB"},
            }
        ],
    }
