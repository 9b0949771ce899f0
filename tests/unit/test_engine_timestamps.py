"""The timestamps option (RFC 7323): 12 bytes of header on every segment, an RTT sample from
every ACK that advances, from the timestamp the receiver echoes (4.3), a retransmission's
included, and the RTO's backoff collapsed by such a sample (RFC 6298 5; Linux's
tcp_ack_update_rtt). Without it, Karn's rule (test_engine_rto.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import (
    built,
    bulk,
    first_time,
    one_link,
    run,
    script_loss,
    ser,
    series,
    tcp_flows,
    time_ack_reaches,
    value_at,
)

from engine import Scenario
from engine.net import wire_bytes
from engine.packet import Kind, Packet

pytestmark = pytest.mark.unit

MSS = 1460
PAYLOAD = 1448  # MSS less the 12-byte option (Linux's mss_cache at MTU 1500)
RATE, DELAY = 1e6, 0.05


def stop_and_wait(loss: dict | None, *, timestamps: bool, nbytes: int = 20 * PAYLOAD) -> Scenario:
    """One segment per round trip (a window of one MSS), 1 s minimum RTO."""
    flow = bulk(nbytes=nbytes, variant="none", rcv_buf=MSS, min_rto=1.0, timestamps=timestamps)
    return one_link(rate=RATE, delay=DELAY, loss=loss, flows=[flow])


def ts_rtt() -> float:
    """A full segment (1,448 B of payload, 52 B of headers) and its 52 B ACK over PPP."""
    data = wire_bytes("ppp", PAYLOAD + 52)
    return 2 * DELAY + ser(data, RATE) + ser(wire_bytes("ppp", 52), RATE)


def test_a_full_segment_carries_twelve_bytes_less_payload() -> None:
    result = run(stop_and_wait(None, timestamps=True, nbytes=3 * PAYLOAD))
    flow = result.flows["f"]
    assert flow.completed and flow.segments_sent == 3
    # The first ACK returns one round trip of a 1,500 B datagram and a 52 B ACK later.
    assert time_ack_reaches(result, PAYLOAD) == pytest.approx(ts_rtt(), rel=1e-9)


@pytest.mark.parametrize("timestamps", [True, False])
def test_the_ack_of_a_retransmission_is_a_sample_with_timestamps_only(timestamps: bool) -> None:
    """Segment 5 and its first retransmission are lost: RTO 1 -> 2 -> 4 s, and the third copy
    arrives. With timestamps its ACK echoes that copy's send time: an RTT sample of one round
    trip, and the RTO falls back to the 1 s floor at once. Without, Karn: no sample, the RTO
    stays 4 s until the next segment's ACK."""
    result = run(stop_and_wait(script_loss(5, 6), timestamps=timestamps))
    flow = result.flows["f"]
    payload = PAYLOAD if timestamps else MSS
    assert (flow.timeouts, flow.retransmissions) == (2, 2)
    t_ack5 = time_ack_reaches(result, 6 * payload)
    second_rtx = first_time(result, "flow.f.retransmissions", lambda v: v >= 2)[0]
    assert value_at(result, "flow.f.rto", t_ack5) == (1.0 if timestamps else 4.0)
    srtt_t, srtt = series(result, "flow.f.srtt")
    sampled = [v for t, v in zip(srtt_t, srtt, strict=True) if t == t_ack5]
    if timestamps:
        # The sample is the third copy's own round trip, not the 7 s since the first.
        assert t_ack5 - second_rtx == pytest.approx(ts_rtt(), rel=1e-9)
        assert sampled == [pytest.approx(ts_rtt(), rel=1e-9)]
    else:
        assert sampled == []


@pytest.mark.parametrize(("timestamps", "wait"), [(True, 1.0), (False, 4.0)])
def test_the_next_timeout_is_not_backed_off(timestamps: bool, wait: float) -> None:
    """As above, then segment 6's first copy (the 9th packet) is lost too: with timestamps
    it waits one RTO of 1 s, the backoff reset by the retransmission's sample; without, it
    waits the backed-off 4 s (RFC 6298 5.5, Karn)."""
    result = run(stop_and_wait(script_loss(5, 6, 8), timestamps=timestamps))
    payload = PAYLOAD if timestamps else MSS
    t_ack5 = time_ack_reaches(result, 6 * payload)
    third_rtx = first_time(result, "flow.f.retransmissions", lambda v: v >= 3)[0]
    assert third_rtx - t_ack5 == pytest.approx(wait, abs=1e-9)
    assert result.flows["f"].timeouts == 3


def test_every_advancing_ack_is_a_sample() -> None:
    """RTTM (RFC 7323 4.1): with a window of several segments each ACK is sampled, where
    Karn's single timed segment gives one sample per round trip."""
    samples = {}
    for ts in (True, False):
        flow = bulk(nbytes=100 * PAYLOAD, variant="none", rcv_buf=8 * MSS, timestamps=ts)
        net = built(one_link(rate=RATE, delay=DELAY, flows=[flow]))
        net.env.advance(60.0)
        (tcp,) = tcp_flows(net)
        assert tcp.receiver.rcv_nxt == 100 * PAYLOAD
        samples[ts] = (tcp.sender.rtt.samples, tcp.receiver.sent)
    (with_ts, acks), (without, _) = samples[True], samples[False]
    assert with_ts == acks  # no delayed ACKs, no losses: every ACK advances
    assert without < with_ts / 4


class Wire:
    """Stands in for the receiver's first hop: keeps the ACKs it is handed."""

    def __init__(self) -> None:
        self.acks: list[Packet] = []

    def accept(self, pkt: Packet) -> None:
        self.acks.append(pkt)


def receiver_under_test(**tcp: Any) -> tuple[Any, Wire, Any]:
    flow = tcp_flows(built(one_link(flows=[bulk(timestamps=True, **tcp)])))[0]
    wire = Wire()
    flow.receiver.path = (wire,)
    return flow.receiver, wire, flow


def data(flow: Any, index: int, sent_at: float) -> Packet:
    pkt = Packet(flow, Kind.DATA, PAYLOAD + 52, (), sent_at)
    pkt.seq = index * PAYLOAD
    pkt.length = PAYLOAD
    return pkt


def test_the_receiver_echoes_as_rfc7323_section_3_4_says() -> None:
    delack = {"enabled": True, "count": 2, "quickack": "off"}
    rcv, wire, flow = receiver_under_test(delayed_ack=delack, sack=True)
    # (A) delayed ACK: two segments, one ACK echoing the earlier.
    rcv.accept(data(flow, 0, 1.0))
    rcv.accept(data(flow, 1, 2.0))
    assert [(a.ack, a.tsecr) for a in wire.acks] == [(2 * PAYLOAD, 1.0)]
    # (B) segment 2 lost: 3 and 4 arrive out of order and each ACK echoes what the last ACK
    # did (the segment that held the left edge then), never the newer out-of-order ones:
    # 4.3's rule, and Linux's (rcv_wup), where 3.4 (B) asks for an overestimate.
    rcv.accept(data(flow, 3, 4.0))
    rcv.accept(data(flow, 4, 5.0))
    assert [a.tsecr for a in wire.acks[1:]] == [1.0, 1.0]
    # (C) the retransmission of 2 fills the hole: its ACK echoes the retransmission.
    rcv.accept(data(flow, 2, 9.0))
    last = wire.acks[-1]
    assert (last.ack, last.tsecr) == (5 * PAYLOAD, 9.0)
    # Every ACK carries the option: 52 B bare; with SACK blocks, at most 3 of them.
    assert wire.acks[0].size == 52
    assert wire.acks[1].size == 52 + 4 + 8 * len(wire.acks[1].sack or ())


def test_at_most_three_sack_blocks_beside_timestamps() -> None:
    rcv, wire, flow = receiver_under_test(sack=True)
    for i in (2, 4, 6, 8, 10):  # five holes below five blocks
        rcv.accept(data(flow, i, float(i)))
    assert len(wire.acks[-1].sack or ()) == 3
    assert wire.acks[-1].size == 52 + 4 + 8 * 3  # 40 bytes of options, the most there are


@pytest.mark.parametrize(("encap", "framing"), [("ethernet", 38), ("ppp", None)])
def test_bulk_payload_rate_is_the_link_rate_times_1448_over_the_frame(
    encap: str, framing: int | None
) -> None:
    """A long transfer over a clean link, the window above the BDP and the queue holding it:
    the link never idles, so the payload arrives at rate x 1,448 / frame, the frame being
    the 1,500 B datagram with the link's framing (Ethernet's 38 B: preamble, header, FCS,
    gap). The last byte arrives one link delay after the last frame ends: measured over the
    transfer less that delay, the rate is exact: the tolerance, a relative 1e-9, is float
    rounding (the clock is continuous and the link never idles). Ethernet: 10 Mbit/s x
    1,448 / 1,538 = 9.4148 Mbit/s of payload; PPP (8 B): x 1,448 / 1,508 = 9.6021."""
    segments = 2000
    rate, delay = 10e6, 0.01
    flow = bulk(nbytes=segments * PAYLOAD, variant="none", rcv_buf=48 * MSS, timestamps=True)
    result = run(one_link(rate=rate, delay=delay, encap=encap, flows=[flow]))
    f = result.flows["f"]
    assert f.completed and f.retransmissions == 0
    frame = wire_bytes(encap, 1500)
    if framing is not None:
        assert frame == 1500 + framing
    expected = rate * PAYLOAD / frame
    measured = segments * PAYLOAD * 8 / (f.completion_time - delay)
    assert measured == pytest.approx(expected, rel=1e-9)
    # Without the option the same link carries 1,460 B per frame: 0.8% more.
    assert rate * MSS / frame / expected == pytest.approx(1460 / 1448)


def test_off_keeps_the_scenario_hash() -> None:
    """Off (the default) is what a scenario without the field simulated: it stays out of
    the identity, so stored scenarios keep their hash and cached results; on, it is in."""
    plain = one_link()
    off = one_link(flows=[bulk(timestamps=False)])
    on = one_link(flows=[bulk(timestamps=True)])
    assert '"timestamps"' not in off.canonical_json()
    assert off.scenario_hash() == plain.scenario_hash() != on.scenario_hash()


@pytest.mark.parametrize(("timestamps", "rto"), [(True, 0.3), (False, 3.0)])
def test_a_resent_syn_is_timed_by_its_echo(timestamps: bool, rto: float) -> None:
    """A SYN-ACK arrives for a SYN that was resent. Without timestamps it is not timed
    (Karn) and data starts with an RTO of 3 s (RFC 6298 5.7); with them it echoes the SYN
    that arrived, 100 ms earlier: a sample r that seeds the estimator, RTO 3r (2.2) above
    the 200 ms floor, and no fallback to 3 s (Linux's, once the handshake gave a sample).
    (The engine's scripted losses drop data only: the handshake is driven by hand.)"""
    flow = bulk(start=5.0, handshake=True, min_rto=0.2, timestamps=timestamps)
    net = built(one_link(flows=[flow]))
    net.env.advance(1.0)  # the flow has not started: the sender is ours to drive
    (tcp,) = tcp_flows(net)
    sender = tcp.sender
    sender.syn_retries, sender.syn_sent_at = 1, None  # as after a SYN timed out and resent
    synack = Packet(tcp, Kind.SYNACK, 52, (), 1.0)
    synack.tsecr = 0.9
    sender.accept(synack)
    assert sender.established
    assert sender.rtt.rto == pytest.approx(rto, rel=1e-9)
