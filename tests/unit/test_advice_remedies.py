"""Remedies are concrete changes (issue 23 scope 1), checked against the bounds they rest on
and the cases the issue found wrong: a window raised to the bandwidth-delay product, a
faster link that barely shortens a window-limited flow's round trip shown as no help (and
one that shortens it past ROOM as the little help it is), the satellite's queue named with its
size, SACK never proposed where it is on, and no NewReno advice for BBR."""

from __future__ import annotations

import math

import pytest
from engine_helpers import bulk, dumbbell, one_link, run

from engine.advice.build import ROOM
from engine.net import wire_bytes
from engine.presets import load_preset
from engine.study import get_path

pytestmark = pytest.mark.unit

MSS = 1460


def by_action(d, action):
    return [r for r in d.remedies if r.action == action]


def test_a_window_limited_flow_gets_the_bdp_as_its_window_and_no_faster_link():
    """1 Mbit/s PPP, 50 ms each way. Payload rate C = 1e6 x 1460/1508; round trip R = 0.1 s
    of propagation + 1508 x 8 / 1e6 (a segment) + 48 x 8 / 1e6 (its ACK); BDP = C x R / 8
    = 13,608 B, ten segments. An 8,760 B window delivers 8,760 B per R: a faster link leaves
    that bound where it is."""
    scenario = one_link(rate=1e6, delay=0.05, flows=[bulk(nbytes=500_000, rcv_buf=8760)])
    result = run(scenario)
    d = result.diagnosis["f"]
    assert d.limit == "receive_window"
    capacity = 1e6 * MSS / wire_bytes("ppp", 1500)
    rtt = 0.1 + wire_bytes("ppp", 1500) * 8 / 1e6 + wire_bytes("ppp", 40) * 8 / 1e6
    bdp = capacity * rtt / 8
    (window,) = by_action(d, "raise_rcv_buf")
    (change,) = window.changes  # 14,600 B < 64 KiB: no window scaling needed
    assert change.path == "flows.f.tcp.rcv_buf" and change.was == 8760
    assert change.value == math.ceil(bdp / MSS) * MSS
    assert window.helps and window.cost_class == "endpoint"
    assert window.predicted.goodput_bps == pytest.approx(capacity, rel=1e-9)
    assert window.predicted.limit == "link"
    (link,) = by_action(d, "upgrade_link")
    assert not link.helps and link.why_not == "bound_unchanged"
    assert link.predicted.limit == "window"
    # The next product at least 25% faster than a 1 Mbit/s lab link: a T1.
    assert [c.value for c in link.changes] == [1.544e6]
    assert d.remedies.index(window) < d.remedies.index(link)  # helpful ones first
    assert d.advice.startswith("Receive window 8,760 B") and window.text in d.advice
    assert "Won't help" in link.text


def test_a_faster_link_helps_a_window_limited_flow_by_its_shorter_round_trip():
    """riverbed-t1-8k (seed 003): an 8,760 B window over 10BaseT (38 B framing, 10 us) and
    two Frame Relay T1 hops (8 B, 41.75 ms). The window's bound is W / R; a T3 shortens R by
    the segment's and its ACK's serialisation on both T1 hops (about 16 ms of 186), lifting
    the bound by ~9%: past ROOM, so the upgrade helps, a little, and its predicted bound is
    W / R at T3, the window still binding. (The seed paper measured 11-15%; the check
    measures 11%.)"""

    def rtt(access: float) -> float:
        links = [(10e6, 10e-6, "ethernet"), (access, 0.04175, "frame_relay")] * 2
        data = sum(d + wire_bytes(e, MSS + 40) * 8 / r for r, d, e in links)
        return data + sum(d + wire_bytes(e, 40) * 8 / r for r, d, e in links)

    result = run(load_preset("riverbed-t1-8k"))
    d = result.diagnosis["backup"]
    achieved = result.flows["backup"].goodput_bps
    (link,) = by_action(d, "upgrade_link")
    assert [c.value for c in link.changes] == [44.736e6, 44.736e6]  # both access links
    t1, t3 = 8760 * 8 / rtt(1.544e6), 8760 * 8 / rtt(44.736e6)
    assert link.predicted.goodput_bps == pytest.approx(t3, rel=1e-9)
    assert link.predicted.limit == "window"
    assert t3 / t1 == pytest.approx(1.09, abs=0.01) and t3 > ROOM * max(achieved, t1)
    assert link.helps and "Won't help" not in link.text
    assert "only shortens the round trip" in d.advice


def test_the_satellite_window_comes_with_the_queue_that_slow_start_needs():
    """10 Mbit/s, 300 ms each way, 64 KiB window, a 100-packet queue (issue 23's satellite
    case). The BDP is ~728 kB; a 100-packet queue holds 146 kB, under half of it, so slow
    start's bursts at twice the link rate overflow it when only the window is raised. The
    remedy that also grows the queue to one BDP must deliver most of what the link allows:
    10 MB at 9.68 Mbit/s of payload take 8.3 s, and slow start from one segment up to the
    BDP takes some 13 round trips of 0.6 s (x1.5 per round trip with delayed ACKs)."""
    flows = [bulk(nbytes=10_000_000, rcv_buf=65535, delayed_ack={"enabled": True})]
    scenario = dumbbell(rate=10e6, delay=0.3, limit_packets=100, flows=flows)
    result = run(scenario)
    d = result.diagnosis["f"]
    assert d.limit == "receive_window"
    alone, both = by_action(d, "raise_rcv_buf")  # cheapest first
    assert alone.cost_class == "endpoint" and both.cost_class == "queue"
    assert alone.figures["queue_short"] == "wan:r1>r2" and alone.figures["queue_packets"] == 100
    values = {c.path: c.value for c in both.changes}
    assert values["flows.f.tcp.window_scaling"] is True
    assert values["links.wan.queue.limit_packets"] >= values["flows.f.tcp.rcv_buf"] / MSS
    base = result.flows["f"].completion_time
    from engine.study import apply_changes

    fixed = run(apply_changes(scenario, values)).flows["f"]
    assert fixed.retransmissions == 0
    assert fixed.completion_time <= 8.3 + 14 * 0.602 + 1
    assert fixed.completion_time < base / 4


def lossy(variant: str, sack: bool, rate: float = 0.03, **tcp):
    loss = {"model": "bernoulli", "rate": rate, "direction": "a_to_b"}
    flows = [bulk(nbytes=None, variant=variant, sack=sack, **tcp)]
    return run(dumbbell(rate=2e6, delay=0.02, duration=20.0, loss=loss, flows=flows))


@pytest.mark.parametrize(("variant", "sack"), [("cubic", True), ("sack", False)])
def test_sack_is_never_proposed_where_it_already_recovers(variant, sack):
    result = lossy(variant, sack)
    d = result.diagnosis["f"]
    assert d.limit == "loss"
    assert not by_action(d, "enable_sack")
    # The loss is the line's: named, with its count, as something no setting removes.
    (line,) = by_action(d, "no_setting")
    assert line.subject == "wan:r1>r2" and not line.changes and not line.helps
    assert line.figures["error_drops"] == result.links["wan:r1>r2"].error_drops > 0


def test_a_bbr_flow_is_not_told_to_use_newreno():
    """5% random loss stalls BBR in timeouts: SACK (off), Linux's 200 ms RTO floor and
    timestamps (35% of its time waits for the timer, backed off: with them 6 s instead of
    7 s, and 7% more goodput) can help it; another variant's recovery is no advice for a
    flow loss does not pace."""
    result = lossy("bbr", False, rate=0.05, min_rto=1.0)
    d = result.diagnosis["f"]
    assert d.limit == "timeouts"
    helpful = {r.action for r in d.remedies if r.helps}
    assert helpful == {"enable_sack", "lower_min_rto", "enable_timestamps"}
    for r in d.remedies:
        for c in r.changes:
            assert not (c.path.endswith(".variant") and c.value in ("newreno", "reno"))
    assert "NewReno" not in d.advice and "newreno" not in d.advice


def test_the_queue_that_dropped_is_named_with_its_size():
    """A 5-packet queue under a 64 KiB window on 1 Mbit/s, 20 ms each way: the window's
    excess over the ~5.3 kB BDP overflows it."""
    scenario = dumbbell(rate=1e6, delay=0.02, limit_packets=5, flows=[bulk(nbytes=300_000)])
    result = run(scenario)
    d = result.diagnosis["f"]
    drops = result.links["wan:r1>r2"].drops
    assert drops > 0
    (queue,) = by_action(d, "raise_queue")
    assert queue.subject == "wan:r1>r2" and queue.figures["drops"] == drops
    (change,) = queue.changes
    assert change.path == "links.wan.queue.limit_packets" and change.was == 5
    assert change.value > 5 and queue.cost_class == "queue"


def test_no_change_equals_what_the_scenario_has():
    """Every preset-like case above, once more through the generic rule: a change's value
    differs from the scenario's at its path."""
    for variant, sack in (("cubic", True), ("reno", False)):
        result = lossy(variant, sack)
        scenario = dumbbell(
            rate=2e6,
            delay=0.02,
            duration=20.0,
            loss={"model": "bernoulli", "rate": 0.03, "direction": "a_to_b"},
            flows=[bulk(nbytes=None, variant=variant, sack=sack)],
        ).model_dump(mode="json")
        for r in result.diagnosis["f"].remedies:
            for c in r.changes:
                assert get_path(scenario, c.path) != c.value, (r.action, c)


def test_the_diagnosis_recommends_nothing_it_has_not_measured():
    """A diagnosis says what limits the flow (`why`) and offers its remedies only as
    candidates: none is recommended before a remedy check measures it. On the Frame Relay
    backup (a policed PVC) `why` names the policer and no change; `advice` is `why`, then the
    candidates' phrase, then every helpful remedy's own sentence in the list's order
    (cheapest first), and no imperative comes before that phrase."""
    from engine.advice.words import CANDIDATES
    from engine.scenario import Scenario

    scenario = Scenario.model_validate(_yaml("docs/examples/fr-backup.yaml"))
    d = run(scenario).diagnosis["backup"]
    assert d.limit == "pvc_policing"
    assert d.why and "policer" in d.why and "Set " not in d.why and "→" not in d.why
    helpful = [r.text for r in d.remedies if r.helps]
    assert len(helpful) >= 2
    assert d.advice.startswith(d.why + " " + CANDIDATES + " " + helpful[0])
    positions = [d.advice.index(t) for t in helpful[:3]]
    assert positions == sorted(positions)
    assert "Set " not in d.advice[: d.advice.index(CANDIDATES)]


def _yaml(path):
    import pathlib

    import yaml

    root = pathlib.Path(__file__).resolve().parents[2]
    return yaml.safe_load((root / path).read_text())
