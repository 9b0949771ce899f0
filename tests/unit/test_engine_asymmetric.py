"""Asymmetric links (`rate_b_to_a`, `delay_b_to_a`): each direction of a link has its own
rate and delay, and every reader of a link's rate (ports, the dry run, the diagnosis)
takes the direction's.

ADSL: server -[lan 1 Gb/s]- isp =[adsl: 24 Mb/s down (isp -> client), 1 Mb/s up, ATM
AAL5]= client. On ATM a 1,500-byte datagram is 32 cells (1,696 bytes) and a 40-byte ACK
2 cells (106 bytes, 848 bits): the uplink carries at most 1e6 / 848 = 1,179 ACKs/s.
"""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import link, tcp_opts

from engine import Scenario, simulate
from engine.analysis import path_facts
from engine.net import wire_bytes

pytestmark = pytest.mark.unit

DOWN, UP = 24e6, 1e6
MSS = 1460
ACK_BITS = wire_bytes("atm_aal5", 40) * 8  # 848
DATA_BYTES = wire_bytes("atm_aal5", MSS + 40)  # 1,696


def adsl(per_ack: int, **adsl_fields: Any) -> Scenario:
    line = link("adsl", "isp", "client", rate=DOWN, delay=0.01, encap="atm_aal5")
    line.update(rate_b_to_a=UP, **adsl_fields)
    delayed = {"enabled": per_ack > 1, "count": max(per_ack, 1)}
    tcp = tcp_opts(
        variant="cubic", sack=True, rcv_buf=1 << 20, window_scaling=True, delayed_ack=delayed
    )
    return Scenario.model_validate(
        {
            "name": "adsl",
            "duration": 12.0,
            "nodes": [
                {"id": "server", "kind": "host"},
                {"id": "isp", "kind": "router"},
                {"id": "client", "kind": "host"},
            ],
            "links": [
                link("lan", "server", "isp", rate=1e9, delay=0.005, encap="ethernet"),
                line,
            ],
            "flows": [
                {"id": "down", "kind": "tcp_bulk", "src": "server", "dst": "client", "tcp": tcp}
            ],
        }
    )


def second_half_goodput(scenario: Scenario) -> float:
    result = simulate(scenario)
    series = result.series["flow.down.goodput_bps"]
    half = [v for t, v in zip(series.t, series.v, strict=True) if t > scenario.duration / 2]
    return sum(half) / len(half)


def test_the_uplink_clocks_the_download_when_every_segment_is_acked():
    """One ACK per segment (delayed ACKs off): the download can run no faster than the
    uplink returns ACKs, 1e6 / 848 x 1,460 x 8 = 13.77 Mb/s, well below the downlink's
    24e6 x 1,460 / 1,696 = 20.66 Mb/s of payload; once slow start is over it runs at it.
    The client's own interface holds the ACKs (a Linux host drops none of its packets),
    so every ACK arrives and acknowledges exactly one segment."""
    scenario = adsl(per_ack=1)
    ack_clock = UP / ACK_BITS * MSS * 8
    assert ack_clock < DOWN * MSS / DATA_BYTES
    assert path_facts(scenario)["down"].ack_clock_bps == pytest.approx(ack_clock)
    assert second_half_goodput(scenario) == pytest.approx(ack_clock, rel=0.01)


def test_with_delayed_acks_the_downlink_is_the_bound_again():
    """Every second segment ACKed: the uplink could clock 27.5 Mb/s, above the downlink's
    20.66 Mb/s of payload, which is then the limit, as on a symmetric 24 Mb/s line."""
    scenario = adsl(per_ack=2)
    downlink = DOWN * MSS / DATA_BYTES
    facts = path_facts(scenario)["down"]
    assert facts.ack_clock_bps == pytest.approx(2 * UP / ACK_BITS * MSS * 8)
    assert facts.link_bps == pytest.approx(downlink) and facts.bottleneck == "adsl:isp>client"
    assert second_half_goodput(scenario) == pytest.approx(downlink, rel=0.02)


def test_each_direction_has_its_own_delay():
    """A 250 ms downlink with a 20 ms return: the base round trip is their sum plus one
    segment's and one ACK's serialisation, and the smallest RTT the flow measures is it."""
    scenario = adsl(per_ack=1, delay=0.25, delay_b_to_a=0.02)
    data = scenario.model_dump(mode="json")
    data["flows"][0]["bytes"] = 200_000
    scenario = Scenario.model_validate(data)
    lan = 2 * 0.005 + (wire_bytes("ethernet", MSS + 40) + wire_bytes("ethernet", 40)) * 8 / 1e9
    base = 0.25 + 0.02 + DATA_BYTES * 8 / DOWN + ACK_BITS / UP + lan
    assert path_facts(scenario)["down"].base_rtt == pytest.approx(base, rel=1e-9)
    assert simulate(scenario).flows["down"].rtt_min == pytest.approx(base, rel=1e-6)
