"""A shallow queue behind a fast sender, diagnosed and fixed (a case a new user brings).

100 MB from a 1 Gb/s LAN over a 100 Mbit/s WAN of 25 ms each way, whose router queue holds
8 packets; CUBIC + SACK, a 4 MiB window, IW 10. Ethernet carries 1,460 of every 1,538 bytes
on the wire (1,500 B datagram + 38 B of header, preamble and gap), so:

- the WAN's payload rate is 100e6 x 1,460 / 1,538 = 94.93 Mbit/s, and its
  bandwidth-delay product over the 50.4 ms round trip about 600 kB: 411 full segments;
- a loss-based flow behind a queue of 8 (1.9% of that) loses at every overshoot and,
  backing off to 0.7 of its window, leaves the link idle until it grows back: it runs well
  under the link (at about half its rate here);
- a queue of one BDP keeps the link busy through the back-off (the rule of thumb of
  Villamizar & Song): the transfer then takes about what the link's payload rate allows,
  100e6 x 8 / 94.93e6 = 8.43 s plus the handshake and slow start;
- a model-based variant (BBR) paces at the bottleneck's rate and needs no such queue.

Before this, the queue remedy held the window's excess over the BDP (4 MiB - 600 kB:
2,463 packets, 247 ms of queueing) while its sentence said "one bandwidth-delay product",
and BBR was offered only for random line loss.
"""

from __future__ import annotations

import math

import pytest

from engine import Scenario, simulate
from engine.advice.check import RemedyCheck
from engine.advice.local import drive
from engine.net import wire_bytes

pytestmark = pytest.mark.unit

MSS = 1460
NBYTES = 100_000_000
PAYLOAD = 100e6 * MSS / wire_bytes("ethernet", MSS + 40)
RTT = 2 * (0.025 + 0.0001 + 0.0001)  # propagation; serialisation adds well under 1%


def shallow() -> Scenario:
    tcp = {
        "variant": "cubic",
        "sack": True,
        "window_scaling": True,
        "rcv_buf": 4 << 20,
        "initial_cwnd": 10,
        "min_rto": 0.2,
    }
    return Scenario.model_validate(
        {
            "name": "shallow",
            "duration": 120,
            "nodes": [
                {"id": "a", "kind": "host"},
                {"id": "r1", "kind": "router"},
                {"id": "r2", "kind": "router"},
                {"id": "b", "kind": "host"},
            ],
            "links": [
                {"id": "l1", "a": "a", "b": "r1", "rate": 1e9, "delay": 0.0001},
                {
                    "id": "wan",
                    "a": "r1",
                    "b": "r2",
                    "rate": 100e6,
                    "delay": 0.025,
                    "queue": {"discipline": "droptail", "limit_packets": 8},
                },
                {"id": "l2", "a": "r2", "b": "b", "rate": 1e9, "delay": 0.0001},
            ],
            "flows": [
                {"id": "f", "kind": "tcp_bulk", "src": "a", "dst": "b", "bytes": NBYTES, "tcp": tcp}
            ],
        }
    )


@pytest.fixture(scope="module")
def result():
    return simulate(shallow())


def test_the_queue_remedy_holds_one_bandwidth_delay_product(result) -> None:
    """One BDP of full segments (plus one), as its sentence says, within 1% of the
    arithmetic: not the window's excess over it (2,400-odd packets)."""
    remedies = {r.action: r for r in result.diagnosis["f"].remedies}
    queue = remedies["raise_queue"]
    (change,) = queue.changes
    assert change.path == "links.wan.queue.limit_packets" and change.was == 8
    assert change.value == pytest.approx(math.ceil(PAYLOAD * RTT / 8 / MSS) + 1, rel=0.01)
    assert "one bandwidth-delay product" in queue.text


def test_bbr_is_a_candidate_for_the_shallow_queue(result) -> None:
    """A loss-based variant behind a queue under one BDP: BBR is offered, saying why."""
    remedies = {r.action: r for r in result.diagnosis["f"].remedies}
    variant = remedies["change_variant"]
    assert variant.changes[0].value == "bbr" and variant.cost_class == "endpoint"
    assert variant.figures["shallow_queue"] == "wan:r1>r2"
    assert "no queue of a bandwidth-delay product at wan:r1>r2" in variant.text


def test_measured_both_reach_the_link_and_the_cheaper_is_recommended() -> None:
    """As it is, the flow runs under two thirds of the link's payload rate (about half). A queue of one BDP
    ends the transfer within 5% above the link's floor (bytes at the payload rate, plus
    the handshake's round trip); BBR within 10% of it (its startup overshoots the 8-packet
    queue and loses); both are gains, and BBR, free, is within 10% of the larger one."""
    scenario = shallow()
    report = drive(scenario, RemedyCheck(scenario, {"flow": "f"})).report
    floor = NBYTES * 8 / PAYLOAD + RTT
    base = report.base.mean
    assert base > floor * 1.5
    by = {i.remedy.action: i for i in report.items}
    assert floor <= by["raise_queue"].after.mean <= floor * 1.05
    assert floor <= by["change_variant"].after.mean <= floor * 1.10
    assert report.text[-1].startswith("Recommended: variant cubic → bbr")
