"""The diagnosis' link bound is the share of the bottleneck the other traffic actually left
to a flow while it ran (engine/usage.py), never a static 1/n split; its advice follows the
numbers."""

from __future__ import annotations

import pytest

from engine.net import wire_bytes
from tests.unit.engine_helpers import bulk, one_link, run

pytestmark = pytest.mark.unit

RATE = 1e6
PAYLOAD_CAPACITY = RATE * 1460 / wire_bytes("ppp", 1500)  # 968.2 kbit/s of a 1 Mbit/s PPP link


def test_a_flow_that_barely_overlaps_another_keeps_the_whole_link_as_its_bound():
    """The issue's case: a 2 MB transfer and a 1 KB one starting 3 s later. They share the
    link for well under a second of the 2 MB flow's ~17 s: its bound is the link's payload
    rate less the small flow's two packets, not half of it."""
    scenario = one_link(rate=RATE, delay=0.01, flows=[
        bulk("big", nbytes=2_000_000, rcv_buf=65535),
        bulk("small", nbytes=1000, start=3.0),
    ])
    result = run(scenario)
    big = result.diagnosis["big"]
    achieved = result.flows["big"].goodput_bps
    assert achieved > 0.9 * PAYLOAD_CAPACITY
    assert big.bounds.link_bps >= achieved
    assert big.bounds.link_bps == pytest.approx(PAYLOAD_CAPACITY, rel=0.002)
    assert big.limit == "link_capacity" and big.bottleneck == "wan:h1>h2"
    assert "other traffic took" not in big.advice
    small = result.diagnosis["small"]
    # The small flow's 2 packets waited behind the big one's standing queue, which had the
    # link while it ran: its bound is what the big flow left, far below the link.
    assert result.flows["small"].goodput_bps <= small.bounds.link_bps < 0.2 * PAYLOAD_CAPACITY


def test_two_flows_running_together_are_each_bounded_by_what_the_other_left():
    """Two greedy flows for the same 60 s: each one's bound is the link's payload rate less
    the other's actual use, so bound(a) ~ capacity - goodput(b), whatever the split."""
    scenario = one_link(rate=RATE, delay=0.02, limit_packets=30, duration=60.0, flows=[
        bulk("a", nbytes=None, stop=60.0, rcv_buf=65535),
        bulk("b", nbytes=None, stop=60.0, rcv_buf=65535),
    ])
    result = run(scenario)
    for me, other in (("a", "b"), ("b", "a")):
        d = result.diagnosis[me]
        achieved = result.flows[me].goodput_bps
        assert achieved <= d.bounds.link_bps
        # The other's retransmissions and headers also took the link: its goodput is a
        # lower bound of its use, so the bound sits a little below capacity - goodput.
        rest = PAYLOAD_CAPACITY - result.flows[other].goodput_bps
        assert d.bounds.link_bps == pytest.approx(rest, rel=0.05)
        assert d.limit == "link_capacity"
        assert "other traffic took" in d.advice
