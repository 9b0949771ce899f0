"""`flow.<id>.delay`: one point per data packet reaching the receiver, its one-way delay
(seed 002 plots the delay per packet, averaged over 50). Checked against the physics of one
idle link and against the flow's own summary."""

import pytest
from engine_helpers import IP_TCP, bulk, one_link, run, ser

from engine.net import wire_bytes

pytestmark = pytest.mark.unit

RATE, DELAY, MSS = 1e6, 0.05, 1460


def test_one_point_per_packet_and_the_first_is_serialisation_plus_propagation():
    # A window of one segment: every packet finds the link idle.
    result = run(one_link(rate=RATE, delay=DELAY, flows=[bulk(nbytes=20 * MSS, rcv_buf=MSS)]))
    flow = result.flows["f"]
    s = result.series["flow.f.delay"]
    assert len(s.v) == flow.packets_received == 20
    one_way = DELAY + ser(wire_bytes("ppp", MSS + IP_TCP), RATE)
    assert all(v == pytest.approx(one_way, abs=1e-9) for v in s.v)
    assert sum(s.v) / len(s.v) == pytest.approx(flow.delay_mean, rel=1e-12)
