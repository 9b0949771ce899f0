"""Property-based tests of the scenario language (hypothesis).

Generated valid scenarios round-trip (validate after dump is the identity) and hash the
same however they are written: any key order, and any unit spelling of the same quantity
("1.544Mbps", "1544kbps", 1544000, "T1"). Garbage and mutations of valid scenarios are
refused with a ValidationError or a ScenarioFormatError, nothing else; the ones that still
validate can be described (the API's dry run and cost estimate). Small valid scenarios
simulate, and what they report obeys conservation: nothing is delivered that was not sent,
no link carries more than its rate, no count is negative.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import engine
from engine.analysis import describe
from engine.scenario import Scenario, ScenarioFormatError, TcpBulkFlow, load_scenario
from engine.scenario.topology import route

pytestmark = pytest.mark.unit

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMED = {64: "DS0", 1544: "T1", 2048: "E1"}  # kbit/s of the line rates worth spelling
EPS = 1e-9


# --- quantities that can be written several ways --------------------------------------


@dataclass(frozen=True)
class Rate:
    kbps: int


@dataclass(frozen=True)
class Dur:
    ms: int


@dataclass(frozen=True)
class Size:
    n: int


def plain(value: Any) -> Any:
    """The quantity in SI base units, as a client writing plain numbers would."""
    if isinstance(value, Rate):
        return value.kbps * 1000
    if isinstance(value, Dur):
        return value.ms / 1000
    if isinstance(value, Size):
        return value.n
    return value


def spellings(value: Any) -> list[Any]:
    """Every way we accept of writing the same quantity."""
    if isinstance(value, Rate):
        k = value.kbps
        out = [k * 1000, float(k * 1000), f"{k}kbps", f"{k} kbit/s", f"{k * 1000}bps"]
        out += [f"{Decimal(k) / 1000}Mbps", f"{k}Kbps"]
        return out + ([NAMED[k], NAMED[k].lower()] if k in NAMED else [])
    if isinstance(value, Dur):
        m = value.ms
        return [m / 1000, f"{m}ms", f"{m * 1000}us", f"{Decimal(m) / 1000}s", f" {m} ms "]
    if isinstance(value, Size):
        n = value.n
        out = [n, str(n), f"{n}B", f"{n * 8}b"]
        out += [f"{n // 1000}kB"] if n % 1000 == 0 else []
        return out + ([f"{n // 1024}KiB"] if n % 1024 == 0 else [])
    return [value]


def render(obj: Any, draw: Any = None) -> Any:
    """The design as a request body: plain numbers (no `draw`), or with each quantity in a
    drawn spelling and every mapping's keys in a drawn order."""
    if isinstance(obj, dict):
        keys = list(obj)
        if draw is not None:
            keys = draw(st.permutations(keys))
        return {k: render(obj[k], draw) for k in keys}
    if isinstance(obj, list):
        return [render(v, draw) for v in obj]
    if draw is None:
        return plain(obj)
    return draw(st.sampled_from(spellings(obj)))


# --- small valid scenarios --------------------------------------------------------------

ENCAPS = ["ethernet", "ppp", "hdlc", "mpls", "atm_aal5"]


@st.composite
def losses(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["none", "bernoulli", "ber", "gilbert_elliott", "script"]))
    loss: dict[str, Any] = {}
    if kind == "bernoulli":
        loss = {"model": kind, "rate": draw(st.floats(0, 0.05))}
    elif kind == "ber":
        loss = {"model": kind, "ber": draw(st.floats(0, 1e-5))}
    elif kind == "gilbert_elliott":
        loss = {"model": kind, "p_gb": draw(st.floats(0, 0.05)), "p_bg": draw(st.floats(0.1, 1))}
        if draw(st.booleans()):
            loss["loss_bad"] = draw(st.floats(0, 1))
    elif kind == "script":
        loss = {"model": kind, "drop": draw(st.lists(st.integers(0, 200), min_size=1, max_size=5))}
    if loss and draw(st.booleans()):
        loss["direction"] = draw(st.sampled_from(["a_to_b", "b_to_a", "both"]))
    return loss


@st.composite
def queues(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["default", "packets", "bytes", "red"]))
    if kind == "packets":
        return {"discipline": "droptail", "limit_packets": draw(st.integers(2, 60))}
    if kind == "bytes":
        return {"discipline": "droptail", "limit_bytes": Size(draw(st.integers(3000, 100_000)))}
    if kind == "red":
        return {"discipline": "red", "limit_packets": 50, "min_th": 5, "max_th": 15}
    return {}


@st.composite
def tcp_specs(draw: Any, mtu: int) -> dict[str, Any]:
    scaled = draw(st.booleans())
    spec: dict[str, Any] = {
        "variant": draw(
            st.sampled_from(["none", "tahoe", "reno", "newreno", "sack", "vegas", "cubic", "bbr"])
        ),
        "sack": draw(st.booleans()),
        "mss": draw(st.sampled_from([m for m in (536, 1000, 1460) if m <= mtu - 40])),
        "rcv_buf": Size(draw(st.integers(2000, 200_000 if scaled else 65535))),
        "window_scaling": scaled,
        "initial_cwnd": draw(st.integers(1, 4)),
        "delayed_ack": {"enabled": draw(st.booleans())},
        "min_rto": Dur(draw(st.integers(200, 1000))),
        "handshake": draw(st.booleans()),
    }
    if draw(st.booleans()):
        spec["snd_buf"] = Size(draw(st.integers(2000, 65535)))
    if spec["variant"] not in ("none", "bbr") and draw(st.booleans()):
        spec["pacing"] = True
    return spec


@st.composite
def designs(draw: Any) -> dict[str, Any]:
    """A small scenario: a chain of hosts and routers (with a Frame Relay PVC, sometimes),
    a spare host on the first router, up to three flows, a few seconds long."""
    frame_relay = draw(st.booleans())
    routers = (
        ["r1", "sw", "r2"] if frame_relay else [f"r{i}" for i in range(draw(st.integers(0, 2)))]
    )
    chain = ["h0", *routers, "h1"]
    kinds = {"h0": "host", "h1": "host", "sw": "fr_switch"}
    nodes = [{"id": n, "kind": kinds.get(n, "router")} for n in chain]
    mtu = draw(st.sampled_from([576, 1500]))
    links = []
    for i, (a, b) in enumerate(zip(chain, chain[1:], strict=False)):
        encap = "frame_relay" if "sw" in (a, b) else draw(st.sampled_from(ENCAPS))
        link = {
            "id": f"l{i}",
            "a": a,
            "b": b,
            "rate": Rate(draw(st.integers(64, 4000))),
            "delay": Dur(draw(st.integers(0, 40))),
            "encap": encap,
            "mtu": mtu,
        }
        if queue := draw(queues()):
            link["queue"] = queue
        if loss := draw(losses()):
            link["loss"] = loss
        links.append(link)
    pairs = [("h0", "h1"), ("h1", "h0")]
    if routers:
        nodes.append({"id": "h2", "kind": "host"})
        links.append({"id": "spare", "a": "h2", "b": routers[0], "rate": Rate(10_000), "mtu": mtu})
        pairs.append(("h2", "h1"))
    duration = draw(st.integers(1000, 6000))
    flows = [_flow(draw, f"f{i}", pairs, mtu) for i in range(draw(st.integers(1, 3)))]
    body: dict[str, Any] = {
        "name": draw(
            st.text(
                st.characters(exclude_characters="\x00", exclude_categories=("Cs",)),
                min_size=1,
                max_size=20,
            )
        ),
        "seed": draw(st.integers(0, 2**32)),
        "duration": Dur(duration),
        "stop_when_done": draw(st.booleans()),
        "sample_interval": Dur(draw(st.integers(50, min(1000, duration)))),
        "nodes": nodes,
        "links": links,
        "flows": flows,
    }
    if frame_relay:
        body["frame_relay"] = {"pvcs": [_pvc(draw)]}
    return body


def _flow(draw: Any, flow_id: str, pairs: list[tuple[str, str]], mtu: int) -> dict[str, Any]:
    """A TCP transfer (sized, or not) or a UDP stream between one of `pairs`, maybe stopped."""
    src, dst = draw(st.sampled_from(pairs))
    start = draw(st.integers(0, 500))
    flow: dict[str, Any] = {"id": flow_id, "src": src, "dst": dst, "start": Dur(start)}
    if draw(st.booleans()):
        flow["kind"] = "tcp_bulk"
        flow["tcp"] = draw(tcp_specs(mtu))
        if draw(st.booleans()):
            flow["bytes"] = Size(draw(st.integers(1, 150_000)))
    else:
        flow["kind"] = "udp_cbr"
        flow["rate"] = Rate(draw(st.integers(8, 1000)))
        flow["packet_size"] = Size(draw(st.integers(1, mtu - 28)))
    if draw(st.booleans()):
        flow["stop"] = Dur(draw(st.integers(start + 1, start + 5000)))
    return flow


def _pvc(draw: Any) -> dict[str, Any]:
    """The chain's PVC r1 -> r2, with or without its own Bc and Be."""
    pvc = {
        "id": "p1",
        "dlci": draw(st.integers(16, 1007)),
        "src": "r1",
        "dst": "r2",
        "cir": Rate(draw(st.integers(32, 1544))),
        "becn_shaping": draw(st.booleans()),
    }
    if draw(st.booleans()):
        pvc["bc"] = draw(st.integers(1000, 200_000))
        pvc["be"] = draw(st.integers(0, 100_000))
    return pvc


# --- properties -------------------------------------------------------------------------


@settings(max_examples=60, **SETTINGS)
@given(design=designs(), data=st.data())
def test_valid_scenarios_round_trip_and_hash_the_same_however_written(
    design: dict[str, Any], data: st.DataObject
) -> None:
    scenario = Scenario.model_validate(render(design))
    dumped = scenario.model_dump(mode="json")
    again = Scenario.model_validate(dumped)
    assert again == scenario and again.model_dump(mode="json") == dumped
    assert Scenario.model_validate(scenario.model_dump()) == scenario
    assert json.loads(json.dumps(dumped)) == dumped  # plain JSON: no NaN, no objects

    spelled = render(design, data.draw)
    other = Scenario.model_validate(spelled)
    assert other.model_dump(mode="json") == dumped
    assert other.scenario_hash() == scenario.scenario_hash()
    # The file formats say the same; name, description and seed are not what is simulated.
    assert load_scenario(json.dumps(spelled)).scenario_hash() == scenario.scenario_hash()
    assert load_scenario(yaml.safe_dump(spelled)).scenario_hash() == scenario.scenario_hash()
    renamed = {**spelled, "name": "other", "description": "d", "seed": 7}
    assert Scenario.model_validate(renamed).scenario_hash() == scenario.scenario_hash()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)
scenario_keys = st.sampled_from(
    ["name", "duration", "nodes", "links", "flows", "frame_relay", "sample_interval", "seed"]
)


@settings(max_examples=200, **SETTINGS)
@given(value=json_values | st.dictionaries(scenario_keys, json_values, max_size=8))
def test_garbage_is_a_validation_error(value: Any) -> None:
    with pytest.raises(ValidationError):
        Scenario.model_validate(value)


nested = st.tuples(st.integers(1, 20_000), st.sampled_from(["[", '{"a": ', "- "]))


@settings(max_examples=100, **SETTINGS)
@given(
    source=st.text(max_size=200).map(lambda t: "\n" + t)  # "\n": not a one-line file name
    | st.binary(max_size=200)
    | nested.map(lambda nd: "\n" + nd[1] * nd[0])
)
def test_garbage_text_is_a_format_or_validation_error(source: str | bytes) -> None:
    with contextlib.suppress(ValidationError, ScenarioFormatError):
        load_scenario(source)


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found += _paths(v, (*prefix, i))
    return found


@st.composite
def mutants(draw: Any) -> Any:
    """A valid scenario with one to three of: a value replaced (garbage, an extreme number,
    a bad unit), a key removed, an unknown key added, a list item repeated."""
    body = render(draw(designs()))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(body)))
        if not path:
            continue
        *parent_path, last = path
        parent = body
        for step in parent_path:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "remove", "add", "repeat"]))
        extreme = st.sampled_from(
            [
                0,
                -1,
                1e-300,
                1e300,
                2**64,
                -0.0,
                "",
                "1e999s",
                "fast",
                "5 parsecs",
                "-3ms",
                "NaN",
                "inf",
                [],
                {},
                None,
                True,
                "h0",
                "l0",
                "f0",
            ]
        )
        if action == "replace":
            parent[last] = draw(json_values | extreme)
        elif action == "remove" and isinstance(parent, dict):
            del parent[last]
        elif action == "remove":
            parent.pop(last)
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
        elif isinstance(parent, list):
            parent.append(parent[last])
    return body


@settings(max_examples=150, **SETTINGS)
@given(body=mutants())
def test_mutated_scenarios_are_refused_cleanly_or_still_describable(body: Any) -> None:
    try:
        scenario = Scenario.model_validate(body)
    except ValidationError:
        return
    # Still valid: everything the API derives from it before a run must work.
    facts = describe(scenario)
    assert facts["estimate"]["events"] >= 0 and facts["estimate"]["packets"] >= 0
    assert math.isfinite(facts["estimate"]["sim_time"])
    assert facts["scenario_hash"] == scenario.scenario_hash()
    # And it can be stored: the store's JSON encoder (orjson: 64-bit integers, no NaN).
    document = scenario.model_dump(mode="json")
    assert orjson.loads(orjson.dumps(document)) == document
    assert "\x00" not in scenario.name + scenario.description  # PostgreSQL text


@settings(max_examples=25, **SETTINGS)
@given(design=designs())
def test_small_scenarios_simulate_and_conserve(design: dict[str, Any]) -> None:
    scenario = Scenario.model_validate(render(design))
    result = engine.simulate(scenario)
    assert result.events > 0 and 0 < result.sim_time <= scenario.duration + EPS
    links = {link.id: link for link in scenario.links}
    for key, s in result.links.items():
        link = links[key.split(":")[0]]
        assert s.packets >= 0 and s.drops >= 0 and s.error_drops >= 0 and s.queue_max >= 0
        assert 0 <= s.utilization <= 1 + EPS, (key, s)
        # The wire carries at most its rate. `bytes` counts frames as they are admitted,
        # so the frame on the wire and those still queued at the end are in it too.
        frame = link.mtu + 200  # the largest frame: ATM's cell tax is the worst framing
        assert s.bytes * 8 <= link.rate * result.sim_time + 8 * frame * (s.queue_max + 1)
    for spec in scenario.flows:
        s = result.flows[spec.id]
        # A flow from the spare host's end does not cross the first link of the chain.
        slowest = min(links[hop.link_id].rate for hop in route(scenario, spec.src, spec.dst))
        assert (s.pdr is None or 0 <= s.pdr <= 1) and (s.plr is None or 0 <= s.plr <= 1)
        if isinstance(spec, TcpBulkFlow):
            assert s.bytes_delivered >= 0 and s.retransmissions >= 0 and s.timeouts >= 0
            assert s.bytes_delivered * 8 <= slowest * result.sim_time + EPS, (spec.id, s)
            if spec.bytes is not None:
                assert s.bytes_delivered <= spec.bytes
                assert s.completed == (s.bytes_delivered == spec.bytes)
        else:
            assert 0 <= s.packets_received <= s.packets_sent, (spec.id, s)
            assert s.packets_received + s.packets_dropped <= s.packets_sent, (spec.id, s)
