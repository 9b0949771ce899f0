"""The dry run's cost estimate against real runs: within a factor of 2 of the events.

The API refuses a run whose estimated events exceed the budget (api/limits.py), so the
estimate must be near what a run really costs: every scenario preset, and synthetic
scenarios of each kind the estimate models (unlimited flows, lossy links of each loss
model, UDP CBR under and over a link's rate, PVCs, several flows on one bottleneck, a
tiny sample interval) are simulated and their `events` compared with the estimate.
"""

from __future__ import annotations

from typing import Any

import pytest

import engine
from engine.analysis import estimate
from engine.presets import list_presets, load_preset
from engine.scenario import Scenario

pytestmark = pytest.mark.unit

NODES = [{"id": "a", "kind": "host"}, {"id": "r", "kind": "router"}, {"id": "b", "kind": "host"}]
FR_NODES = [
    {"id": "a", "kind": "host"},
    {"id": "r1", "kind": "router"},
    {"id": "sw", "kind": "fr_switch"},
    {"id": "r2", "kind": "router"},
    {"id": "b", "kind": "host"},
]
FR_LINKS = [
    {"id": "l1", "a": "a", "b": "r1", "rate": "10Mbps", "delay": "1ms"},
    {"id": "ac1", "a": "r1", "b": "sw", "rate": "T1", "delay": "20ms", "encap": "frame_relay"},
    {"id": "ac2", "a": "sw", "b": "r2", "rate": "T1", "delay": "20ms", "encap": "frame_relay"},
    {"id": "l2", "a": "r2", "b": "b", "rate": "10Mbps", "delay": "1ms"},
]


def _links(rate: str = "T1", delay: str = "20ms", **extra: Any) -> list[dict[str, Any]]:
    return [
        {"id": "l1", "a": "a", "b": "r", "rate": "10Mbps", "delay": "1ms"},
        {"id": "l2", "a": "r", "b": "b", "rate": rate, "delay": delay, **extra},
    ]


def _tcp(id: str = "f", **tcp: Any) -> dict[str, Any]:
    spec = {"rcv_buf": 65535, "snd_buf": 65535, **tcp}
    return {"id": id, "kind": "tcp_bulk", "src": "a", "dst": "b", "tcp": spec}


def _cbr(rate: str, **extra: Any) -> dict[str, Any]:
    return {"id": "c", "kind": "udp_cbr", "src": "a", "dst": "b", "rate": rate, **extra}


def _scenario(links: list, flows: list, nodes: list = NODES, **extra: Any) -> Scenario:
    body = {"name": "estimate", "nodes": nodes, "links": links, "flows": flows, **extra}
    return Scenario.model_validate(body)


SYNTHETIC = {
    "unlimited reno 30 s": lambda: _scenario(_links(), [_tcp(variant="reno")], duration="30s"),
    "1% loss newreno 60 s": lambda: _scenario(
        _links("2Mbps", "40ms", loss={"model": "bernoulli", "rate": 0.01}),
        [_tcp(variant="newreno")],
        duration="60s",
    ),
    "5% loss 2 MB": lambda: _scenario(
        _links("2Mbps", "40ms", loss={"model": "bernoulli", "rate": 0.05}),
        [{**_tcp(variant="reno"), "bytes": "2MB"}],
    ),
    "3% loss cubic": lambda: _scenario(
        _links("2Mbps", "30ms", loss={"model": "bernoulli", "rate": 0.03}),
        [_tcp(variant="cubic")],
        duration="60s",
    ),
    "1% loss bbr": lambda: _scenario(
        _links("2Mbps", "40ms", loss={"model": "bernoulli", "rate": 0.01}),
        [_tcp(variant="bbr", sack=True)],
        duration="60s",
    ),
    "gilbert-elliott sack": lambda: _scenario(
        _links("2Mbps", "30ms", loss={"model": "gilbert_elliott", "p_gb": 0.01, "p_bg": 0.3}),
        [_tcp(variant="sack")],
        duration="60s",
    ),
    "bit errors": lambda: _scenario(
        _links("2Mbps", "30ms", loss={"model": "ber", "ber": 1e-6}),
        [_tcp(variant="reno")],
        duration="60s",
    ),
    "scripted drops": lambda: _scenario(
        _links("2Mbps", "30ms", loss={"model": "script", "drop": list(range(0, 600, 20))}),
        [{**_tcp(variant="tahoe"), "bytes": "1MB"}],
    ),
    "total loss, short RTO": lambda: _scenario(
        _links(loss={"model": "bernoulli", "rate": 1.0, "direction": "a_to_b"}),
        [_tcp(min_rto="10ms", max_rto="20ms", initial_rto="10ms")],
        duration="20s",
    ),
    "udp cbr 60 s": lambda: _scenario(_links(), [_cbr("512kbps")], duration="60s"),
    "udp cbr over the link rate": lambda: _scenario(
        _links(), [_cbr("4Mbps", packet_size=1000)], duration="30s"
    ),
    "4 tcp on one bottleneck": lambda: _scenario(
        _links(queue={"discipline": "droptail", "limit_packets": 20}),
        [{**_tcp(f"f{i}", variant="reno"), "start": i / 2} for i in range(4)],
        duration="30s",
    ),
    "vegas cubic reno on red": lambda: _scenario(
        _links("1Mbps", queue={"discipline": "red", "limit_packets": 60}),
        [_tcp(v, variant=v) for v in ("vegas", "cubic", "reno")],
        duration="60s",
    ),
    "tcp and cbr": lambda: _scenario(
        _links(), [_tcp(variant="cubic"), _cbr("512kbps")], duration="30s"
    ),
    "atm 20 MB scaled window": lambda: _scenario(
        _links("10Mbps", "5ms", encap="atm_aal5"),
        [{**_tcp(rcv_buf=1_000_000, window_scaling=True, snd_buf=None), "bytes": "20MB"}],
    ),
    "pvc cir 512k": lambda: _scenario(
        FR_LINKS,
        [{**_tcp(variant="reno"), "bytes": "5MB"}],
        nodes=FR_NODES,
        frame_relay={
            "pvcs": [
                {
                    "id": "p",
                    "dlci": 100,
                    "src": "r1",
                    "dst": "r2",
                    "cir": "512kbps",
                    "bc": 51200,
                    "be": 25600,
                }
            ]
        },
    ),
    "pvc with becn shaping and cbr": lambda: _scenario(
        FR_LINKS,
        [_tcp(variant="reno"), _cbr("256kbps")],
        nodes=FR_NODES,
        duration="60s",
        frame_relay={
            "pvcs": [
                {
                    "id": "p",
                    "dlci": 100,
                    "src": "r1",
                    "dst": "r2",
                    "cir": "768kbps",
                    "bc": 76800,
                    "be": 76800,
                    "becn_shaping": True,
                }
            ]
        },
    ),
    "1 kB transfer": lambda: _scenario(_links(), [{**_tcp(), "bytes": 1000}]),
    "1 ms samples, idle link": lambda: _scenario(
        _links(), [_cbr("8kbps", packet_size=100)], duration="100s", sample_interval="1ms"
    ),
    "finite and unlimited flows": lambda: _scenario(
        _links(), [{**_tcp("fin"), "bytes": "2MB"}, _tcp("inf")]
    ),
    "finite flow, no stop_when_done": lambda: _scenario(
        _links(), [{**_tcp(), "bytes": "2MB"}], stop_when_done=False, duration="60s"
    ),
}


def _cases() -> dict[str, Any]:
    presets = {
        p.name: (lambda name=p.name: load_preset(name))
        for p in list_presets()
        if p.kind == "scenario"
    }
    return {**presets, **SYNTHETIC}


@pytest.mark.parametrize("name", list(_cases()))
def test_estimate_is_within_a_factor_of_two_of_the_real_events(name: str) -> None:
    scenario = _cases()[name]()
    guess = estimate(scenario)
    result = engine.simulate(scenario)
    ratio = guess["events"] / result.events
    assert 0.5 <= ratio <= 2.0, (name, guess, result.events)
    assert 0 < guess["sim_time"] <= scenario.duration
    # What the run holds errs high, never low (the memory budget is checked against it),
    # and not by more than a few times: within 8x, or a few thousand points for the
    # smallest runs (a trace that moves at losses is given QUIET_POINTS whether it does).
    points = sum(len(s.t) for s in result.series.values())
    assert points <= guess["series_points"] <= 8 * points + 2_000, (name, points, guess)
    assert len(result.series) <= guess["series"]


def test_an_absurd_scenario_gives_a_number_not_an_overflow() -> None:
    scenario = _scenario(
        _links("1000Gbps", "0s"),
        [_tcp(), _cbr("1000Gbps", packet_size=1)],
        duration=1e9,  # the longest a scenario may ask for
        sample_interval=1e-300,
    )
    guess = estimate(scenario)
    assert guess["events"] >= 10**18 and guess["packets"] >= 10**18
