"""The diagnosis is never wrong about what was possible: on generated small scenarios
(flows that overlap or not, start apart or never, of any size, stopped by the application
or not, over lossy or clean links of any speed down to a few hundred bit/s, with constant
and on/off cross traffic, Frame Relay PVCs that police or shape, interface shapers,
asymmetric links, hosts that push back or drop), every bound it reports is at least the
goodput the flow achieved; losses that are the PVC policer's are not blamed on the links;
nothing is blamed on losses where nothing was lost; each flow's time adds up to its
duration; and the limit named cost at least as much time as any one state of the flow
(hypothesis).

Rounding: the bounds are computed from the same floating-point counters as the goodput,
so they may only fall short by relative 1e-9; the states are sums of the same seconds.

Examples: TCPFR_DIAGNOSIS_EXAMPLES (default 120, CI's share); run by hand with 1000:
    TCPFR_DIAGNOSIS_EXAMPLES=1000 .venv/bin/python -m pytest tests/unit/test_diagnosis_properties.py
"""

from __future__ import annotations

import math
import os
from typing import Any

import pytest
from engine_helpers import link, tcp_opts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Scenario, simulate
from engine.accounting import FIELDS
from engine.diagnosis import REACHED
from engine.result import TcpFlowSummary

pytestmark = pytest.mark.unit

ROUNDING = 1e-9
EXAMPLES = int(os.environ.get("TCPFR_DIAGNOSIS_EXAMPLES", "120"))


def check_bounds(result) -> None:
    for fid, d in result.diagnosis.items():
        achieved = result.flows[fid].goodput_bps
        for name in ("link_bps", "window_bps", "mathis_bps", "application_bps"):
            bound = getattr(d.bounds, name)
            if bound is not None:
                assert bound >= achieved * (1 - ROUNDING), (fid, name, bound, achieved, d)


def check_policing_attributed(result) -> None:
    """When the PVC's policer discarded more than every link dropped, no flow's losses are
    blamed on the links ("loss"): they are the PVC's."""
    pvc = result.pvcs.get("p")
    link_drops = sum(link.drops + link.error_drops for link in result.links.values())
    if pvc is None or pvc.excess_dropped <= link_drops:
        return
    for fid, d in result.diagnosis.items():
        assert d.limit != "loss", (fid, d)
        if d.limit == "pvc_policing":
            assert "PVC p" in d.advice and "Bc" in d.advice and "CIR" in d.advice


def shaper(draw, rate: float, *, adaptive: bool = False) -> dict[str, Any]:
    """A shaper at a fraction of `rate`, with a bucket of none to a few frames."""
    spec: dict[str, Any] = {
        "rate": draw(st.sampled_from([0.3, 0.7, 1.5])) * rate,
        "bc": draw(st.sampled_from([0, 4000, 40_000])),
        "be": draw(st.sampled_from([0, 12_000])),
    }
    if adaptive and spec["bc"] and draw(st.booleans()):
        spec["adaptive"] = "becn"
    return spec


def pvc_shaping(draw, cir: float) -> dict[str, Any]:
    """None, the legacy `becn_shaping`, or a shaper at any rate (adaptive or not)."""
    kind = draw(st.sampled_from(["none", "becn", "shaping"]))
    if kind == "becn":
        return {"becn_shaping": True}
    if kind == "shaping":
        return {"shaping": shaper(draw, cir, adaptive=True)}
    return {}


def check_time(result) -> None:
    """The states add up to each flow's duration (its completion time when it completed);
    a flow that lost nothing is not limited by losses; the limit named cost at least as
    much time as any single state a limit added (its time is a sum of states)."""
    for fid, f in result.flows.items():
        if not isinstance(f, TcpFlowSummary):
            continue
        t = f.time
        assert t is not None
        states = [getattr(t, name) for name in FIELDS]
        assert min(states) >= 0, (fid, t)
        assert math.fsum(states) == pytest.approx(t.duration, rel=ROUNDING, abs=1e-12), (fid, t)
        if f.completed:
            assert t.duration == pytest.approx(f.completion_time, rel=ROUNDING)
        d = result.diagnosis[fid]
        if f.packets_dropped == 0:
            assert d.limit not in ("loss", "timeouts", "pvc_policing"), (fid, d, f)
        if d.limit == "incomplete":
            assert max(states[1:]) == 0, (fid, t)  # nothing but (part of) a handshake
        else:
            # The limit cost at least as much as any state that is time a limit added; the
            # bottleneck's busy time (the transfer at the path's rate) competes only when
            # it filled most of the flow's life (engine.diagnosis.REACHED).
            assert d.limit_time is not None
            added = [getattr(t, n) for n in FIELDS[1:] if n != "busy"]
            assert d.limit_time >= max(added) * (1 - ROUNDING), (fid, d, t)
            if t.busy >= REACHED * (t.duration - t.handshake):
                assert d.limit_time >= t.busy * (1 - ROUNDING), (fid, d, t)


@st.composite
def scenarios(draw) -> Scenario:
    """h1 -[lan1]- r1 -[wan]- r2 -[lan2]- h2, or the same through an fr_switch with a PVC."""
    fr = draw(st.booleans())
    # A few hundred bit/s: the SYN alone outlasts the first RTO (timers that expire with
    # nothing lost); the others are WAN rates.
    wan_rate = draw(st.sampled_from([300.0, 9600.0, 256e3, 1e6, 1.544e6]))
    delay = draw(st.sampled_from([0.001, 0.02, 0.08]))
    limit = draw(st.integers(min_value=3, max_value=60))
    encap = "frame_relay" if fr else draw(st.sampled_from(["ppp", "ethernet", "atm_aal5", "none"]))
    loss = None
    if draw(st.booleans()):
        loss = {
            "model": "bernoulli",
            "rate": draw(st.sampled_from([0.005, 0.02, 0.05])),
            "direction": "a_to_b",
        }
    egress = draw(st.sampled_from(["backpressure", "drop"]))
    nodes = [("h1", "host"), ("r1", "router"), ("r2", "router"), ("h2", "host")]
    if fr:
        nodes.append(("sw", "fr_switch"))
    wan_link = {"rate": wan_rate, "delay": delay, "encap": encap, "limit_packets": limit}
    links = _links(fr, wan_link, loss)
    wan = links[1]
    if draw(st.booleans()):
        wan["rate_b_to_a"] = draw(st.sampled_from([0.1, 0.5, 2.0])) * wan_rate
    if not fr and draw(st.booleans()):
        wan["shaping_a_to_b"] = shaper(draw, wan_rate)
    flows = _flows(draw, wan_rate)
    d: dict[str, Any] = {
        "name": "diagnosis-property",
        "duration": 30.0,
        "nodes": [
            {"id": n, "kind": k, **({"egress": egress} if k == "host" else {})} for n, k in nodes
        ],
        "links": links,
        "flows": flows,
    }
    if fr:
        d["frame_relay"] = _frame_relay(draw, wan_rate)
    return Scenario.model_validate(d)


def _links(fr: bool, wan: dict[str, Any], loss: dict[str, Any] | None) -> list[dict[str, Any]]:
    """lan1, the WAN (through the switch, two links, when `fr`) with `loss` on its first
    link, lan2."""
    links = [link("lan1", "h1", "r1", rate=10e6, delay=0.0001, encap="ethernet")]
    if fr:
        links += [
            link("wan", "r1", "sw", **wan, loss=loss),
            link("wan2", "sw", "r2", **wan),
        ]
    else:
        links.append(link("wan", "r1", "r2", **wan, loss=loss))
    links.append(link("lan2", "r2", "h2", rate=10e6, delay=0.0001, encap="ethernet"))
    return links


def _flows(draw: Any, wan_rate: float) -> list[dict[str, Any]]:
    """One to three TCP transfers, maybe an unlimited one due late, and cross traffic."""
    flows: list[dict[str, Any]] = []
    for i in range(draw(st.integers(min_value=1, max_value=3))):
        tcp = tcp_opts(
            variant=draw(st.sampled_from(["reno", "newreno", "cubic", "vegas", "none"])),
            rcv_buf=draw(st.sampled_from([1000, 8760, 32768, 65535])),
            handshake=draw(st.booleans()),
            delayed_ack={"enabled": draw(st.booleans())},
            initial_cwnd=draw(st.sampled_from([1, 4, 10])),
        )
        flow: dict[str, Any] = {
            "id": f"f{i}",
            "kind": "tcp_bulk",
            "src": "h1",
            "dst": "h2",
            "start": draw(st.sampled_from([0.0, 0.5, 3.0])),
            "bytes": draw(st.sampled_from([1000, 20_000, 150_000, 400_000])),
            "tcp": tcp,
        }
        if draw(st.integers(0, 4)) == 0:
            flow["stop"] = flow["start"] + draw(st.sampled_from([0.5, 2.0]))
        flows.append(flow)
    if draw(st.booleans()):
        # An unlimited transfer due late: it runs from 25 s, or never when the finite
        # flows are done before (the run stops with them).
        flows.append({**flows[0], "id": "late", "start": 25.0})
        flows[-1].pop("bytes", None)
        flows[-1].pop("stop", None)
    # Cross traffic: constant, or on/off (bursts of a second or two, then silence).
    for j in range(draw(st.integers(min_value=0, max_value=3))):
        start = draw(st.sampled_from([0.0, 1.0])) + 3.0 * j
        flows.append(
            {
                "id": f"cbr{j}",
                "kind": "udp_cbr",
                "src": "h1",
                "dst": "h2",
                "rate": draw(st.sampled_from([0.2, 0.6])) * wan_rate,
                "start": start,
                "stop": start + draw(st.sampled_from([1.0, 2.0])),
            }
        )
    return flows


def _frame_relay(draw: Any, wan_rate: float) -> dict[str, Any]:
    """The PVC over the fr_switch: its contract, policing and shaping, the switch's measure."""
    cir = draw(st.sampled_from([0.25, 0.5, 1.0])) * wan_rate
    return {
        "pvcs": [
            {
                "id": "p",
                "dlci": 100,
                "src": "r1",
                "dst": "r2",
                "cir": cir,
                "bc": max(1, round(draw(st.sampled_from([0.05, 0.25, 1.0])) * cir)),
                "be": round(draw(st.sampled_from([0.0, 0.5])) * cir),
                "policing": draw(st.sampled_from(["token_bucket", "interval"])),
                **pvc_shaping(draw, cir),
            }
        ],
        "switch": {"congestion_measure": draw(st.sampled_from(["cycle_average", "instantaneous"]))},
    }


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_every_bound_is_at_least_the_achieved_goodput(scenario: Scenario):
    result = simulate(scenario)
    check_bounds(result)
    check_policing_attributed(result)
    check_time(result)
