"""Properties of remedies and of the what-if bounds, over generated scenarios (hypothesis).

1. No redundant remedy: over scenarios of every kind the generators of
   test_scenario_properties.py and test_diagnosis_properties.py draw (chains with Frame Relay
   PVCs, policed or shaped, lossy lines, every variant, SACK on or off), no remedy of any
   flow proposes a value the scenario already has at that path, SACK is never proposed to a
   flow that recovers with it, nor BECN shaping where it is on; a remedy shown as helping
   leaves room above what the flow achieved, and the advice quotes the first of them.
2. The what-if bounds are the path facts of the changed scenario: for random changes of a
   link's rate and delay, a window and a PVC's contract, `PathModel.bound(changes)` gives the
   round trip, window, payload capacity and BDP that `flow_facts` computes on the scenario
   with those changes applied (no simulation: cheap, so many examples).

`ADVICE_EXAMPLES` sets the examples of property 1 (CI: 15; by hand: 1000).
"""

from __future__ import annotations

import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_diagnosis_properties import scenarios as diagnosis_scenarios
from test_scenario_properties import designs, render

import engine
from engine.advice.levers import parse_value
from engine.advice.whatif import PathModel
from engine.analysis.paths import flow_facts
from engine.scenario import Scenario, TcpBulkFlow
from engine.scenario.topology import Topology
from engine.study import apply_changes, get_path

pytestmark = pytest.mark.unit

SETTINGS: dict[str, Any] = dict(deadline=None, suppress_health_check=list(HealthCheck))
EXAMPLES = int(os.environ.get("ADVICE_EXAMPLES", "15"))


@st.composite
def varied(draw: Any) -> Scenario:
    """A generated scenario whose TCP flows then get any variant, SACK on or off, any
    initial window and RTO floor: the settings remedies must not propose again."""
    if draw(st.booleans()):
        base = draw(diagnosis_scenarios())
    else:
        base = Scenario.model_validate(render(draw(designs())))
    data = base.model_dump(mode="json")
    for flow in data["flows"]:
        if flow["kind"] != "tcp_bulk":
            continue
        tcp = flow["tcp"]
        tcp["variant"] = draw(
            st.sampled_from(["reno", "newreno", "sack", "cubic", "bbr", "vegas", "tahoe"])
        )
        tcp["sack"] = draw(st.booleans())
        tcp["initial_cwnd"] = draw(st.sampled_from([1, 4, 10]))
        tcp["min_rto"] = draw(st.sampled_from([0.2, 1.0]))
        tcp["slow_start"] = None
        if tcp["variant"] == "bbr":
            tcp["pacing"] = None
    return Scenario.model_validate(data)


def _same(now: Any, path: str, value: Any) -> bool:
    if now is None or isinstance(value, bool | str):
        return now == value
    return float(parse_value(path, now)) == float(value)


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(scenario=varied())
def test_no_remedy_proposes_what_the_scenario_already_has(scenario: Scenario) -> None:
    result = engine.simulate(scenario)
    data = scenario.model_dump(mode="json")
    specs = {f.id: f for f in scenario.flows if isinstance(f, TcpBulkFlow)}
    pvcs = {p.id: p for p in (scenario.frame_relay.pvcs if scenario.frame_relay else [])}
    for fid, d in result.diagnosis.items():
        tcp = specs[fid].tcp
        achieved = result.flows[fid].goodput_bps
        for r in d.remedies:
            for c in r.changes:
                assert not _same(get_path(data, c.path), c.path, c.value), (fid, r.action, c)
            if r.action == "enable_sack":
                assert not tcp.sack and tcp.variant != "sack", (fid, r)
            if r.action == "shape" and r.subject and r.subject.startswith("pvc:"):
                # A shaper at a rate the PVC is not shaped at already (BECN shaping and a
                # shaper without a rate run at the CIR).
                pvc = pvcs[r.subject.split(":")[1]]
                shaped = pvc.shaping.rate if pvc.shaping and pvc.shaping.rate else None
                if shaped is None and (pvc.becn_shaping or pvc.shaping):
                    shaped = pvc.cir
                (rate,) = [c.value for c in r.changes if c.path.endswith(".shaping.rate")]
                assert shaped is None or rate > shaped, (fid, r)
            if r.helps and r.predicted is not None and r.predicted.goodput_bps is not None:
                assert r.predicted.goodput_bps > achieved, (fid, r)
            if not r.helps:
                assert r.why_not is not None, (fid, r)
        helpful = [r for r in d.remedies if r.helps]
        if helpful:
            assert helpful[0].text in d.advice


@st.composite
def what_ifs(draw: Any) -> tuple[Scenario, dict[str, Any]]:
    """A diagnosis scenario without cross traffic or shaping (where the path facts split a
    link, or do not model the shaper) and random changes of the levers the bounds know."""
    scenario = draw(diagnosis_scenarios())
    data = scenario.model_dump(mode="json")
    data["flows"] = [f for f in data["flows"] if f["kind"] == "tcp_bulk"][:1]
    for pvc in (data.get("frame_relay") or {}).get("pvcs", []):
        pvc["becn_shaping"] = False
    scenario = Scenario.model_validate(data)
    fid = scenario.flows[0].id
    changes: dict[str, Any] = {}
    if draw(st.booleans()):
        changes["links.wan.rate"] = draw(st.sampled_from(["T1", "E1", "T3", 512e3, 10e6]))
    if draw(st.booleans()):
        changes["links.wan.delay"] = draw(st.sampled_from([0.0, 0.01, 0.3]))
    if draw(st.booleans()):
        window = draw(st.integers(1000, 4_000_000))
        changes[f"flows.{fid}.tcp.rcv_buf"] = window
        changes[f"flows.{fid}.tcp.window_scaling"] = window > 65535
    if scenario.frame_relay and draw(st.booleans()):
        changes["frame_relay.pvcs.p.cir"] = draw(st.sampled_from([64e3, 256e3, 1e6]))
        changes["frame_relay.pvcs.p.be"] = draw(st.sampled_from([0, 32000, 200000]))
    return scenario, changes


def bound_window(facts: Any) -> float:
    return float(facts.window_bps) if facts.window_bps is not None else math.inf


@settings(max_examples=150, **SETTINGS)
@given(case=what_ifs())
def test_the_what_if_bounds_are_the_facts_of_the_changed_scenario(
    case: tuple[Scenario, dict[str, Any]],
) -> None:
    scenario, changes = case
    flow = scenario.flows[0]
    assert isinstance(flow, TcpBulkFlow)
    model = PathModel.of(scenario, flow)
    assert model is not None
    bound = model.bound(changes)
    changed = apply_changes(scenario, changes)
    facts = flow_facts(changed, Topology(changed))[0][flow.id]
    assert facts.base_rtt is not None and facts.bdp_bytes is not None
    assert bound.rtt == pytest.approx(facts.base_rtt, rel=1e-12)
    assert bound.window_bytes == facts.window_bytes
    assert bound.capacity_bps == pytest.approx(facts.link_bps, rel=1e-12)
    assert bound.bdp_bytes == pytest.approx(facts.bdp_bytes, rel=1e-12)
    # A way back that clocks less than the path carries paces the flow (ADSL's uplink).
    clock = facts.ack_clock_bps
    assert clock is not None and bound.ack_clock_bps == pytest.approx(clock, rel=1e-12)
    if clock < facts.link_bps:
        assert bound.resource == facts.ack_port
        assert bound.goodput_bps == pytest.approx(min(clock, bound_window(facts)), rel=1e-12)
        assert bound.limit == ("window" if bound_window(facts) < clock else "ack")
        return
    resource = facts.bottleneck
    assert bound.resource == resource
