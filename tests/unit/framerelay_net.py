"""The Frame Relay tests' network (test_engine_framerelay.py says its topology) and the
flows and PVCs they put on it."""

from __future__ import annotations

from typing import Any

from engine_helpers import link, tcp_opts

from engine import Scenario
from engine.result import Result

T1 = 1.544e6
FRAME_BITS = (512 + 8 + 20 + 8) * 8  # 4,384
QUIET = 16  # Tc intervals without BECN before the shaper steps back up


def fr_net(
    *,
    pvcs: list[dict],
    flows: list[dict],
    a2_rate: float = T1,
    a2_limit: int = 1000,
    switch: dict | None = None,
    third_router: bool = False,
    duration: float = 100.0,
    seed: int = 1,
    delay: float = 0.02,
) -> Scenario:
    nodes = [
        ("h1", "host"),
        ("r1", "router"),
        ("sw", "fr_switch"),
        ("r2", "router"),
        ("h2", "host"),
    ]
    links = [
        link("lan1", "h1", "r1", rate=10e6, delay=0.0001, encap="ethernet"),
        link("a1", "r1", "sw", rate=T1, delay=delay, encap="frame_relay"),
        link(
            "a2", "sw", "r2", rate=a2_rate, delay=delay, encap="frame_relay", limit_packets=a2_limit
        ),
        link("lan2", "r2", "h2", rate=10e6, delay=0.0001, encap="ethernet"),
    ]
    if third_router:
        nodes += [("h3", "host"), ("r3", "router")]
        links += [
            link("lan3", "h3", "r3", rate=10e6, delay=0.0001, encap="ethernet"),
            link("a3", "r3", "sw", rate=T1, delay=0.02, encap="frame_relay"),
        ]
    d: dict[str, Any] = {
        "name": "engine-test-fr",
        "seed": seed,
        "duration": duration,
        "nodes": [{"id": n, "kind": k} for n, k in nodes],
        "links": links,
        "frame_relay": {"pvcs": pvcs},
        "flows": flows,
    }
    if switch is not None:
        d["frame_relay"]["switch"] = switch
    return Scenario.model_validate(d)


def pvc(
    pvc_id: str = "p", *, src: str = "r1", dst: str = "r2", dlci: int = 100, **fields: Any
) -> dict:
    return {"id": pvc_id, "dlci": dlci, "src": src, "dst": dst, **fields}


def cbr(
    flow_id: str,
    *,
    frame_rate: float,
    src: str = "h1",
    dst: str = "h2",
    start: float = 0.0,
    stop: float | None = None,
) -> dict:
    """UDP CBR of 512-byte datagrams whose *frame* bit rate on a Frame Relay link is given."""
    d = {
        "id": flow_id,
        "kind": "udp_cbr",
        "src": src,
        "dst": dst,
        "rate": frame_rate / FRAME_BITS * 512 * 8,
        "packet_size": 512,
        "start": start,
    }
    if stop is not None:
        d["stop"] = stop
    return d


def greedy(flow_id: str = "f", *, stop: float | None = None, **tcp: Any) -> dict:
    d = {
        "id": flow_id,
        "kind": "tcp_bulk",
        "src": "h1",
        "dst": "h2",
        "start": 0.0,
        "tcp": tcp_opts(**tcp),
    }
    if stop is not None:
        d["stop"] = stop
    return d


def frame_rate_on(result: Result, key: str) -> float:
    """Frame bits per second carried by one link direction over the run."""
    return result.links[key].bytes * 8 / result.sim_time
