"""BBR v1 through a token-bucket policer (`tcp.bbr_lt_bw`, Linux's lt_bw): the Frame Relay
case this product exists for. A PVC with CIR 256 kbit/s, Bc = 32 kbit and Be = 0 on
768 kbit/s access ports discards every frame beyond its tokens; BtlBw, the max of recent
delivery rates, sees the bursts the bucket lets through and stays above the CIR, so BBR
without lt_bw keeps pacing into the discards. With it, two lossy intervals (>= 20% lost)
of consistent delivery rate make BBR pace at their mean, the policed rate, for 48 round
trips at a time.

The policed payload rate: CIR x MSS / (a full segment's Frame Relay frame) =
256,000 x 1460 / 1508 = 247.9 kbit/s.
"""

from __future__ import annotations

import pytest

from engine import Scenario, simulate
from engine.net import wire_bytes

pytestmark = pytest.mark.unit

MSS = 1460
CIR = 256_000
POLICED = CIR * MSS / wire_bytes("frame_relay", MSS + 40)


def policed_transfer(lt_bw: bool) -> Scenario:
    q = {"discipline": "droptail", "limit_packets": 100}
    access = {"rate": "768kbps", "delay": "15ms", "encap": "frame_relay", "queue": q}
    return Scenario.model_validate(
        {
            "name": "bbr-policer",
            "duration": "600s",
            "nodes": [
                {"id": "ws", "kind": "host"},
                {"id": "branch", "kind": "router"},
                {"id": "cloud", "kind": "fr_switch"},
                {"id": "dc", "kind": "router"},
                {"id": "server", "kind": "host"},
            ],
            "links": [
                {"id": "lan1", "a": "ws", "b": "branch", "rate": "100Mbps", "delay": "0.1ms"},
                {"id": "access1", "a": "branch", "b": "cloud", **access},
                {"id": "access2", "a": "cloud", "b": "dc", **access},
                {"id": "lan2", "a": "dc", "b": "server", "rate": "100Mbps", "delay": "0.1ms"},
            ],
            "frame_relay": {
                "pvcs": [
                    {"id": "p1", "dlci": 100, "src": "branch", "dst": "dc", "cir": CIR,
                     "bc": "32kbit", "be": 0}
                ]
            },
            "flows": [
                {"id": "f", "kind": "tcp_bulk", "src": "ws", "dst": "server", "bytes": "2MB",
                 "tcp": {"variant": "bbr", "rcv_buf": "1MB", "window_scaling": True,
                         "initial_cwnd": 10, "min_rto": "200ms", "sack": True,
                         "bbr_lt_bw": lt_bw}}
            ],
        }
    )  # fmt: skip


def test_lt_bw_finds_the_policer_and_halves_its_discards():
    with_lt = simulate(policed_transfer(True))
    without = simulate(policed_transfer(False))
    # lt_bw engages: the rate in use is the policer's, within Linux's 1/8 consistency.
    policed = [v for v in with_lt.series["flow.f.bbr_lt_bw"].v if v > 0]
    assert policed
    assert all(abs(v - POLICED) <= POLICED / 8 for v in policed)
    assert not any(without.series["flow.f.bbr_lt_bw"].v)
    # The policer discards less than half as much, and the transfer runs at the policed
    # payload rate (within 5%).
    assert with_lt.pvcs["p1"].excess_dropped <= without.pvcs["p1"].excess_dropped / 2
    assert with_lt.flows["f"].goodput_bps == pytest.approx(POLICED, rel=0.05)
