"""Slow start as Linux runs it (`tcp.ack_counting: segments`, the default): every segment an
ACK acknowledges grows the window, so with delayed ACKs it still doubles per round trip,
and a CUBIC transfer fills a fast path as a slow-start model says it should (issue 25).

The path: a sender on 10 Gb/s, a 100 Mb/s PPP bottleneck with 50 ms each way and a
2,000-packet queue, the receiver on 10 Gb/s; CUBIC with HyStart, IW 10, delayed ACKs
(Linux's quickack at the start), 4 MB send and receive buffers, no loss, 20 MB.
"""

from __future__ import annotations

import math

import pytest
from engine_helpers import first_time, series, value_at

from engine import Scenario, simulate
from engine.net import wire_bytes

pytestmark = pytest.mark.unit

MSS = 1460
RATE = 100e6
DELAY = 0.05
LAN = 10e9
LAN_DELAY = 0.00001
IW = 10
NBYTES = 20_000_000
T_PKT = wire_bytes("ppp", MSS + 40) * 8 / RATE  # a full segment on the bottleneck
# A full segment's round trip with nothing queued: propagation both ways on all three
# links, the segment's serialisation on each, its ACK's on each.
R = (
    2 * (DELAY + 2 * LAN_DELAY)
    + T_PKT
    + 2 * wire_bytes("ethernet", MSS + 40) * 8 / LAN
    + wire_bytes("ppp", 40) * 8 / RATE
    + 2 * wire_bytes("ethernet", 40) * 8 / LAN
)
BDP = R / T_PKT  # segments the path holds: ~830


def transfer(ack_counting: str) -> Scenario:
    tcp = {
        "variant": "cubic",
        "rcv_buf": 4_000_000,
        "snd_buf": 4_000_000,
        "window_scaling": True,
        "initial_cwnd": IW,
        "ack_counting": ack_counting,
    }
    return Scenario.model_validate(
        {
            "name": "linux-slow-start",
            "duration": "60s",
            "nodes": [
                {"id": "h1", "kind": "host"},
                {"id": "r1", "kind": "router"},
                {"id": "r2", "kind": "router"},
                {"id": "h2", "kind": "host"},
            ],
            "links": [
                # The sender's own link never queues for long: nothing is lost there.
                {"id": "lan1", "a": "h1", "b": "r1", "rate": LAN, "delay": LAN_DELAY,
                 "queue": {"discipline": "droptail", "limit_packets": 100_000}},
                {"id": "wan", "a": "r1", "b": "r2", "rate": RATE, "delay": DELAY,
                 "encap": "ppp", "queue": {"discipline": "droptail", "limit_packets": 2000}},
                {"id": "lan2", "a": "r2", "b": "h2", "rate": LAN, "delay": LAN_DELAY},
            ],
            "flows": [
                {"id": "f", "kind": "tcp_bulk", "src": "h1", "dst": "h2", "bytes": NBYTES,
                 "tcp": tcp}
            ],
        }
    )  # fmt: skip


def round_windows(result) -> list[tuple[float, float]]:
    """(cwnd at its start, cwnd at its end) of each slow-start round, in segments. As in
    HyStart and Linux, a round begins with an ACK and ends when an ACK passes what had been
    sent when it began; the first begins with the first ACK (the initial window leaves the
    host at the pace its NIC drains it, so "what was sent" is only known once it is out)."""
    exit_t = series(result, "flow.f.ssthresh")[0][0]
    t, _ = first_time(result, "flow.f.ack", lambda v: v > 0)
    rounds = []
    while True:
        end = value_at(result, "flow.f.seq", t)
        t_next, _ = first_time(result, "flow.f.ack", lambda v, end=end: v >= end)
        if t_next >= exit_t:
            return rounds
        rounds.append(
            (
                value_at(result, "flow.f.cwnd", t) / MSS,
                value_at(result, "flow.f.cwnd", t_next) / MSS,
            )
        )
        t = t_next


@pytest.fixture(scope="module")
def linux():
    return simulate(transfer("segments"))


def test_the_window_doubles_every_round_with_delayed_acks(linux):
    """A delayed ACK of two segments adds two: each round's W segments add W, and the
    window doubles per round trip, to the segment: a round's last, odd segment may be
    acknowledged with the next round's first (by the delayed-ACK timer or the next
    segment), so a round ends at 2W +- 1 segments, never further off. RFC 5681's
    min(N, SMSS) per ACK (`acks`) adds one segment per ACK of two: 1.5x per round trip,
    within the same one segment (after the first round, whose ACKs are quick ones)."""
    rounds = round_windows(linux)
    assert len(rounds) >= 5
    assert all(abs(end - 2 * start) <= 1.0 for start, end in rounds), rounds
    per_ack = round_windows(simulate(transfer("acks")))
    assert len(per_ack) >= 8
    assert all(abs(end - 1.5 * start) <= 1.0 for start, end in per_ack[1:]), per_ack


def test_the_transfer_takes_what_slow_start_and_cubic_say(linux):
    """The model, in segments (T_PKT a full segment's time on the bottleneck, R the
    unloaded round trip, BDP = R / T_PKT ~ 830):

    - the handshake takes a round trip: data starts at R;
    - slow start sends W_i = IW 2^i segments in round i, one round trip each, while
      W_i < BDP leaves the bottleneck idle for part of the round;
    - from round k, the first with W_k >= BDP (k = 7: 1,280 segments), the bottleneck
      never idles: HyStart ends slow start in the round whose ACK train outlasts half the
      minimum RTT, W_i > BDP / 2, at W_i plus the BDP / 2 segments acknowledged by then,
      so the window it leaves is at least the BDP; CUBIC's first epoch (no loss: no
      W_max) only grows it, by at least 5% per round trip;
    - so the last segment leaves the bottleneck (N - sum_{i<k} W_i) T_PKT after round k
      starts and reaches the receiver a one-way delay later.

    The run must finish within 3% of that, with no loss and the window after HyStart
    between the BDP and W_i + BDP / 2.
    """
    n = math.ceil(NBYTES / MSS)
    k = next(i for i in range(30) if IW * 2**i >= BDP)
    before = sum(IW * 2**i for i in range(k))
    one_way = DELAY + 2 * LAN_DELAY + T_PKT
    model = R + k * R + (n - before) * T_PKT + one_way
    f = linux.flows["f"]
    assert f.retransmissions == 0
    assert f.completion_time == pytest.approx(model, rel=0.03)
    exit_round = next(i for i in range(30) if IW * 2**i > BDP / 2)
    ssthresh = series(linux, "flow.f.ssthresh")[1][0] / MSS
    assert BDP <= ssthresh <= IW * 2**exit_round + BDP / 2
