"""RACK-TLP (RFC 8985, `tcp.loss_detection: rack`, Linux's default with SACK) against RFC
6675's duplicate-ACK detection (`dupack`, the ns-2/ns-3/OPNET pin), with drops scripted
by data-packet index on a 2 Mb/s, 50 ms path (one segment every 6 ms on the wire):

- a retransmission lost again is found lost when a segment sent after it is SACKed, a
  round trip later, and resent; RFC 6675 never resends below HighRxt and waits for the
  retransmission timeout;
- a lost last segment is drawn out by the tail loss probe, 2 SRTT + 200 ms after the
  last ACK (one segment outstanding), instead of the timeout;
- with fewer than DupThresh segments SACKed, RACK waits RACK.rtt + reo_wnd after the lost
  segment was sent (reo_wnd = min(min RTT / 4, SRTT), SRTT before any data RTT sample,
  as Linux's min(~0U >> 2, srtt)), where RFC 6675 needs three duplicate ACKs.
"""

from __future__ import annotations

import pytest
from engine_helpers import bulk, first_time, one_link, run, script_loss, series, value_at

pytestmark = pytest.mark.unit

MSS = 1460
SEGMENT = (MSS + 48) * 8 / 2e6  # a full segment on the 2 Mb/s PPP wire: 6.032 ms


def transfer(loss_detection: str, drops: tuple[int, ...], segments: int, rwnd: int, **tcp):
    flow = bulk(
        nbytes=segments * MSS,
        rcv_buf=rwnd * MSS,
        sack=True,
        recovery="prr",
        loss_detection=loss_detection,
        **tcp,
    )
    return run(one_link(rate=2e6, delay=0.05, loss=script_loss(*drops), flows=[flow]))


def retransmission_times(result) -> list[float]:
    ts, vs = series(result, "flow.f.retransmissions")
    return [t for t, v in zip(ts, vs, strict=True) if v > 0]


def test_a_retransmission_lost_again_is_resent_a_round_trip_later():
    """Data packet 40 is lost in slow start (a 64-segment window, so recovery goes on
    sending new data), then so is its retransmission. That is the data packet crossing
    after every segment sent before it: as many as snd_max counts then (all full)."""
    once = transfer("rack", (40,), 300, 64)
    t1, _ = first_time(once, "flow.f.retransmissions", lambda v: v >= 1)
    rtx_index = value_at(once, "flow.f.seq", t1 - 1e-9) // MSS
    rack = transfer("rack", (40, rtx_index), 300, 64)
    dupack = transfer("dupack", (40, rtx_index), 300, 64)
    # RACK: resent once more when a new segment sent after the first retransmission is
    # SACKed: a round trip as the path then has it, 100 ms of propagation and the q
    # packets queued ahead of the retransmission and itself at 6.032 ms each (within two
    # segment times: the new segment follows it by a few).
    t1, t2 = retransmission_times(rack)[:2]
    q = value_at(rack, "link.wan.h1>h2.queue_packets", t1)
    assert (rack.flows["f"].timeouts, rack.flows["f"].retransmissions) == (0, 2)
    assert t2 - t1 == pytest.approx(0.1 + (q + 1) * SEGMENT, abs=2 * SEGMENT)
    # RFC 6675: HighRxt has passed it, so only the timer resends it (min_rto 1 s).
    d1, d2 = retransmission_times(dupack)[:2]
    assert dupack.flows["f"].timeouts == 1
    assert d2 - d1 >= 1.0
    assert rack.flows["f"].completion_time < dupack.flows["f"].completion_time - 0.7


def test_a_lost_last_segment_is_probed_not_timed_out():
    """The last of 100 segments (a 20-segment window) is lost. Once the ACK of the one
    before it arrives a single segment is outstanding: the probe timeout is 2 SRTT plus
    200 ms for the receiver's delayed ACK, and with no new data the probe resends the last
    segment, which then takes a one-way trip. RFC 6675 waits for the RTO (1 s)."""
    rack = transfer("rack", (99,), 100, 20)
    dupack = transfer("dupack", (99,), 100, 20)
    f = rack.flows["f"]
    assert (f.timeouts, f.retransmissions) == (0, 1)
    last_ack_t = series(rack, "flow.f.ack")[0][-1]  # the ACK of segment 98
    srtt = value_at(rack, "flow.f.srtt", last_ack_t)
    one_way = 0.05 + SEGMENT
    assert f.completion_time == pytest.approx(last_ack_t + 2 * srtt + 0.2 + one_way, abs=0.002)
    assert dupack.flows["f"].timeouts == 1
    assert dupack.flows["f"].completion_time > f.completion_time + 0.5


def test_with_two_sacked_segments_rack_waits_the_reordering_window():
    """Three segments leave together when the SYN-ACK arrives (IW 3, a 3-segment window)
    and the first is lost: two duplicate ACKs will ever come. Sent at the same instant as
    the lost one, a SACKed segment makes it lost RACK.reo_wnd after that SACK arrives:
    reo_wnd = SRTT, the handshake's round trip, as no data RTT has been sampled yet.
    RACK.rtt is taken again from the second SACK, one segment time later, and the wait
    starts over from it (Linux re-arms its timer on each ACK the same way). The SYN's round
    trip is 2 x 50 ms plus 60 wire bytes each way at 2 Mb/s; the second SACK (for the
    third segment, two segment times after the first on the wire) arrives a round trip of
    a segment and a 60-byte ACK after that. RFC 6675 waits for the timeout."""
    kw = {"initial_cwnd": 3, "handshake": True}
    rack = transfer("rack", (0,), 3, 3, **kw)
    dupack = transfer("dupack", (0,), 3, 3, **kw)
    small = 60 * 8 / 2e6
    srtt = 0.1 + 2 * small
    second_sack = srtt + 3 * SEGMENT + 0.1 + small
    f = rack.flows["f"]
    assert (f.timeouts, f.retransmissions) == (0, 1)
    assert retransmission_times(rack) == [pytest.approx(second_sack + srtt, abs=1e-6)]
    assert dupack.flows["f"].timeouts == 1
