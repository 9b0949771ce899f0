"""The corpus of bench/advice_audit.py: every preset of kind scenario, docs/examples/fr-backup.yaml,
five user scenarios built here (a satellite hop, a shallow 100 Mbit/s queue, a shared
bottleneck, BBR over the policed Frame Relay PVC with and without SACK), and PROBES: some
with a setting or two as a user might leave them (SACK off, a 1 s minimum RTO, T1 access
ports, BECN shaping on). ADVISE: the scenarios the advisor is asked about, and its target."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.presets import list_presets, load_preset
from engine.scenario import Scenario, load_scenario
from engine.study import apply_changes

ROOT = Path(__file__).resolve().parent.parent
FR = ROOT / "docs" / "examples" / "fr-backup.yaml"


def _line(rate: str, delay: str, queue: int) -> dict[str, Any]:
    return {
        "rate": rate,
        "delay": delay,
        "queue": {"discipline": "droptail", "limit_packets": queue},
    }


def _dumbbell(
    name: str,
    duration: str,
    wan: dict[str, Any],
    flows: list[dict[str, Any]],
    edge: str = "1Gbps",
    second_host: bool = False,
) -> dict[str, Any]:
    nodes = [
        {"id": i, "kind": k}
        for i, k in (("a", "host"), ("r1", "router"), ("r2", "router"), ("b", "host"))
    ]
    links = [
        {"id": "l1", "a": "a", "b": "r1", "rate": edge, "delay": "0.1ms"},
        {"id": "wan", "a": "r1", "b": "r2", **wan},
        {"id": "l2", "a": "r2", "b": "b", "rate": edge, "delay": "0.1ms"},
    ]
    if second_host:
        nodes.append({"id": "c", "kind": "host"})
        links.append({"id": "l3", "a": "c", "b": "r1", "rate": edge, "delay": "0.1ms"})
    return {"name": name, "duration": duration, "nodes": nodes, "links": links, "flows": flows}


def _bulk(fid: str, size: str, src: str = "a", **tcp: Any) -> dict[str, Any]:
    return {"id": fid, "kind": "tcp_bulk", "src": src, "dst": "b", "bytes": size, "tcp": tcp}


LINUX = {"sack": True, "window_scaling": True}


def user_scenarios() -> dict[str, dict[str, Any]]:
    """A new user's first scenarios (kept from /work/wt/rem): what each asks of the advice."""
    sat = _dumbbell(
        "sat",
        "600s",
        _line("10Mbps", "290ms", 100),
        [_bulk("f", "20MB", variant="cubic", sack=True)],
        edge="100Mbps",
    )
    sat["links"][0]["delay"] = sat["links"][2]["delay"] = "1ms"
    shallow = _dumbbell(
        "shallow",
        "300s",
        _line("100Mbps", "25ms", 8),
        [
            _bulk(
                "f",
                "200MB",
                variant="cubic",
                rcv_buf="4MiB",
                initial_cwnd=10,
                min_rto="200ms",
                **LINUX,
            )
        ],
    )
    shared = _dumbbell(
        "shared",
        "120s",
        _line("20Mbps", "20ms", 200),
        [_bulk("mine", "20MB", variant="cubic", rcv_buf="1MiB", **LINUX)]
        + [
            _bulk(f"bg{i}", "200MB", src="c", variant="cubic", rcv_buf="1MiB", **LINUX)
            for i in (1, 2, 3)
        ],
        second_host=True,
    )
    fr = load_scenario(FR).model_dump(mode="json", exclude_none=True)
    bbr = {**fr, "name": "fr-bbr"}
    bbr["flows"] = [
        {
            **fr["flows"][0],
            "tcp": {**fr["flows"][0]["tcp"], "rcv_buf": 262144, "variant": "bbr", **LINUX},
        }
    ]
    nosack = {**fr, "name": "fr-bbr-nosack"}
    nosack["flows"] = [
        {**fr["flows"][0], "tcp": {**fr["flows"][0]["tcp"], "rcv_buf": 262144, "variant": "bbr"}}
    ]
    return {
        "sat": sat,
        "shallow": shallow,
        "shared": shared,
        "fr-bbr": bbr,
        "fr-bbr-nosack": nosack,
    }


#: Probes: a corpus scenario with one or two settings as a user might leave them (SACK off,
#: a 1 s minimum RTO, T1 access ports, BECN shaping on), where a rule meets a case the corpus
#: itself does not (name -> base and changes).
PROBES: dict[str, tuple[str, dict[str, Any]]] = {
    "shallow-nosack": ("shallow", {"flows.f.tcp.sack": False}),
    "shallow-nosack-rto1s": ("shallow", {"flows.f.tcp.sack": False, "flows.f.tcp.min_rto": 1.0}),
    "fr-t1-ports": ("fr-backup", {"links.access1.rate": 1.544e6, "links.access2.rate": 1.544e6}),
    "fr-becn": ("fr-backup", {"frame_relay.pvcs.p1.becn_shaping": True}),
}


def corpus(probes: bool = True) -> dict[str, Scenario]:
    out = {p.name: load_preset(p.name) for p in list_presets() if p.kind == "scenario"}
    out["fr-backup"] = load_scenario(FR)
    out.update({k: load_scenario(v) for k, v in user_scenarios().items()})
    if probes:
        for name, (base, changes) in PROBES.items():
            out[name] = apply_changes(out[base], changes)
    return out


#: scenario -> the advisor's target (None: half the check's base time, rounded)
ADVISE = {
    "fr-backup": "backup.completion_time<=600s",
    "riverbed-t1-8k": "backup.completion_time<=200s",
    "sat": None,
    "riverbed-drops-reno": None,
    "shallow": "f.completion_time<=20s",  # the queue and BBR reach it, the 1 Gbit/s link too
}


# --- the checks ------------------------------------------------------------------------------
