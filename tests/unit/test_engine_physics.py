"""Physics of the links: framing overhead, serialisation, propagation, and the two limits
on a bulk transfer (the window per round trip, the link rate less overhead).

Every expected number is computed here from the scenario, never read from the engine.
"""

import pytest
from engine_helpers import (
    IP_TCP,
    IP_UDP,
    bulk,
    cbr,
    dumbbell,
    one_link,
    rtt,
    run,
    ser,
)

from engine.net import wire_bytes

pytestmark = pytest.mark.unit

MSS = 1460
T1, T3 = 1.544e6, 44.736e6


# --- framing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encap", "ip_size", "wire"),
    [
        # Ethernet: 8 preamble+SFD, 14 header, 4 FCS, 12 inter-frame gap; 46-byte minimum payload.
        ("ethernet", 1500, 1538),
        ("ethernet", 40, 84),  # a bare ACK pads to the 64-byte minimum frame, + 20
        # PPP / HDLC (RFC 1662): flag, address, control, 2-byte protocol, FCS-16, flag.
        ("ppp", 1500, 1508),
        ("hdlc", 1500, 1508),
        # Frame Relay (RFC 2427 over Q.922): flag, 2-byte address, control, NLPID, FCS, flag.
        ("frame_relay", 1500, 1508),
        ("mpls", 1500, 1512),  # one 4-byte label over PPP
        # ATM AAL5 with LLC/SNAP (RFC 2684): 1500 + 8 + 8 trailer = 1516 -> 32 cells of 53.
        ("atm_aal5", 1500, 32 * 53),
        ("atm_aal5", 40, 2 * 53),  # 56 bytes do not fit one 48-byte cell payload
        ("atm_aal5", 32, 53),  # 32 + 16 = 48: exactly one cell
    ],
)
def test_wire_bytes_per_encapsulation(encap, ip_size, wire):
    assert wire_bytes(encap, ip_size) == wire


def test_atm_cell_tax_of_a_full_packet():
    assert wire_bytes("atm_aal5", 1500) == 1696
    # The "cell tax": almost 12% of the wire carries no IP byte.
    ip_share = 1500 / wire_bytes("atm_aal5", 1500)
    assert ip_share == pytest.approx(0.8844, abs=1e-4)


# --- window-limited transfer: goodput = window / RTT ---------------------------------------


@pytest.mark.parametrize(
    ("variant", "rate", "delay", "encap", "segments"),
    [
        ("none", T1, 0.08, "frame_relay", 6),  # the Riverbed case: 8,760 B on a T1
        ("none", T3, 0.08, "frame_relay", 6),  # a T3 does not help a window-limited flow
        ("reno", T1, 0.08, "frame_relay", 6),  # cwnd grows to rwnd and stops there
        ("newreno", 2e6, 0.03, "ppp", 4),
        ("tahoe", 10e6, 0.05, "ethernet", 20),
    ],
)
def test_window_limited_goodput_is_window_over_rtt(variant, rate, delay, encap, segments):
    window = segments * MSS
    # The link must not be the limit: a window serialises faster than a round trip.
    round_trip = rtt(rate=rate, delay=delay, encap=encap)
    assert segments * ser(wire_bytes(encap, MSS + IP_TCP), rate) < round_trip
    # 200 windows: slow start's ramp (a few round trips) costs well under 5%.
    sc = one_link(
        rate=rate,
        delay=delay,
        encap=encap,
        flows=[bulk(nbytes=200 * window, variant=variant, rcv_buf=window)],
    )
    flow = run(sc).flows["f"]
    assert flow.completed
    assert flow.retransmissions == 0
    assert flow.goodput_bps == pytest.approx(window * 8 / round_trip, rel=0.05)


def test_window_limited_rtt_samples_match_the_path():
    """With no queueing every RTT sample is 2 x propagation + data and ACK serialisation."""
    rate, delay = T1, 0.08
    sc = one_link(
        rate=rate,
        delay=delay,
        encap="frame_relay",
        flows=[bulk(nbytes=100 * MSS, variant="none", rcv_buf=MSS)],
    )
    flow = run(sc).flows["f"]
    expected = rtt(rate=rate, delay=delay, encap="frame_relay")
    assert flow.rtt_min == pytest.approx(expected, rel=1e-9)
    assert flow.rtt_max == pytest.approx(expected, rel=1e-9)
    # Stop and wait: one segment per round trip; the last byte is delivered one
    # propagation and one serialisation after the 100th segment leaves.
    last_leg = delay + ser(wire_bytes("frame_relay", MSS + IP_TCP), rate)
    assert flow.completion_time == pytest.approx(99 * expected + last_leg, rel=1e-9)


# --- link-limited transfer: goodput = rate x payload share of the wire ------------------


@pytest.mark.parametrize("encap", ["ppp", "hdlc", "frame_relay", "mpls", "ethernet", "atm_aal5"])
def test_link_limited_goodput_is_rate_times_payload_share(encap):
    rate, delay = 1e6, 0.02
    # 44 segments of window against a BDP of ~4 segments: the link is the limit.
    sc = one_link(
        rate=rate,
        delay=delay,
        encap=encap,
        flows=[bulk(nbytes=1000 * MSS, variant="reno", rcv_buf=65535)],
    )
    result = run(sc)
    flow = result.flows["f"]
    assert flow.completed
    assert flow.retransmissions == 0
    expected = rate * MSS / wire_bytes(encap, MSS + IP_TCP)
    assert flow.goodput_bps == pytest.approx(expected, rel=0.03)
    assert result.links["wan:h1>h2"].utilization == pytest.approx(1.0, abs=0.03)


def test_atm_link_limited_flow_pays_the_cell_tax():
    rate = T1
    sc = one_link(
        rate=rate,
        delay=0.02,
        encap="atm_aal5",
        flows=[bulk(nbytes=1000 * MSS, variant="newreno", rcv_buf=65535)],
    )
    flow = run(sc).flows["f"]
    assert flow.goodput_bps == pytest.approx(rate * 1460 / 1696, rel=0.03)
    # ...which is measurably below the same link with PPP framing (1460/1508).
    assert flow.goodput_bps < 0.9 * rate * 1460 / 1508


def test_dumbbell_bottleneck_sets_the_rate():
    """Fast Ethernet access links, a slow WAN in the middle: the WAN's payload share wins."""
    rate = 2e6
    sc = dumbbell(
        rate=rate,
        delay=0.02,
        encap="frame_relay",
        flows=[bulk(nbytes=1000 * MSS, variant="newreno", rcv_buf=65535)],
    )
    flow = run(sc).flows["f"]
    assert flow.goodput_bps == pytest.approx(rate * MSS / wire_bytes("frame_relay", 1500), rel=0.03)


# --- UDP constant bit rate ---------------------------------------------------------------


def test_udp_cbr_below_capacity_is_delivered_whole_at_propagation_plus_serialisation():
    rate, delay, size = 1e6, 0.05, 512
    sc = one_link(
        rate=rate,
        delay=delay,
        flows=[cbr(rate=256e3, packet_size=size, stop=10.0)],
        duration=11.0,
        stop_when_done=False,
    )
    result = run(sc)
    udp = result.flows["u"]
    # Send times 0, 16 ms, ... below 10 s: 625 datagrams.
    assert udp.packets_sent == 625
    assert udp.packets_received == 625
    assert udp.packets_dropped == 0
    assert udp.plr == 0.0
    assert udp.throughput_bps == pytest.approx(256e3, rel=0.01)
    one_way = delay + ser(wire_bytes("ppp", size + IP_UDP), rate)
    assert udp.delay_mean == pytest.approx(one_way, rel=1e-9)
    assert udp.delay_p99 == pytest.approx(one_way, rel=1e-9)
    assert udp.jitter == pytest.approx(0.0, abs=1e-12)
    assert result.links["wan:h1>h2"].queue_max == 0


def test_udp_delay_over_a_dumbbell_is_store_and_forward_per_hop():
    access, rate, delay, size = 100e6, 1e6, 0.03, 1000
    sc = dumbbell(
        access_rate=access,
        access_delay=0.001,
        rate=rate,
        delay=delay,
        flows=[cbr(rate=100e3, packet_size=size, stop=2.0)],
        duration=3.0,
        stop_when_done=False,
    )
    udp = run(sc).flows["u"]
    ip = size + IP_UDP
    one_way = (
        0.001
        + ser(wire_bytes("ethernet", ip), access)
        + delay
        + ser(wire_bytes("ppp", ip), rate)
        + 0.001
        + ser(wire_bytes("ethernet", ip), access)
    )
    assert udp.plr == 0.0
    assert udp.delay_mean == pytest.approx(one_way, rel=1e-9)


def test_udp_run_ending_on_flow_done_accounts_for_every_datagram():
    """stop_when_done waits for the datagrams still in flight when the flow stops."""
    rate, delay, size = 1e6, 0.05, 512
    sc = one_link(rate=rate, delay=delay, flows=[cbr(rate=256e3, packet_size=size, stop=10.0)])
    result = run(sc)
    udp = result.flows["u"]
    assert udp.packets_sent == 625
    assert udp.packets_received + udp.packets_dropped == udp.packets_sent
    # The run ends as the last datagram (sent at 624 x 16 ms) lands.
    one_way = delay + ser(wire_bytes("ppp", size + IP_UDP), rate)
    assert result.sim_time == pytest.approx(624 * 0.016 + one_way, abs=1e-9)


# --- receive window: RFC 7323 scaling, and delayed ACKs -------------------------------------


@pytest.mark.parametrize(
    ("rcv_buf", "scaling", "advertised", "window"),
    [
        # Without scaling the 16-bit field caps the window at 65,535 B; the sender sends
        # full segments only while data is outstanding (RFC 1122 4.2.3.4): 44 of them.
        (200_000, False, 65_535, 44 * MSS),
        (65_535, False, 65_535, 44 * MSS),
        # With scaling (shift 2) 200,000 B is advertised whole: 136 full segments.
        (200_000, True, 200_000, 136 * MSS),
    ],
)
def test_window_scaling_sets_the_effective_window(rcv_buf, scaling, advertised, window):
    rate, delay = T3, 0.08
    round_trip = rtt(rate=rate, delay=delay, encap="frame_relay")
    sc = one_link(
        rate=rate,
        delay=delay,
        encap="frame_relay",
        flows=[bulk(nbytes=40 * window, variant="none", rcv_buf=rcv_buf, window_scaling=scaling)],
    )
    result = run(sc)
    flow = result.flows["f"]
    assert set(result.series["flow.f.rwnd"].v) == {advertised}
    capped = [w for w in result.warnings if "flows.f.tcp.rcv_buf" in w]
    assert len(capped) == (1 if rcv_buf > 65_535 and not scaling else 0)
    assert flow.goodput_bps == pytest.approx(window * 8 / round_trip, rel=0.05)


def test_delayed_ack_timer_adds_to_a_one_segment_round_trip():
    """A window of one segment: the receiver holds each ACK for its timer (RFC 1122
    4.2.3.2), so a segment leaves every R + timeout (no quick ACKs at the start)."""
    rate, delay, timeout = T1, 0.04, 0.2
    sc = one_link(
        rate=rate,
        delay=delay,
        flows=[
            bulk(
                nbytes=50 * MSS,
                variant="none",
                rcv_buf=MSS,
                delayed_ack={"enabled": True, "count": 2, "timeout": timeout, "quickack": "off"},
            )
        ],
    )
    flow = run(sc).flows["f"]
    cycle = rtt(rate=rate, delay=delay) + timeout
    assert flow.rtt_min == pytest.approx(cycle, rel=1e-9)
    assert flow.goodput_bps == pytest.approx(MSS * 8 / cycle, rel=0.02)


def test_delayed_ack_every_second_segment_costs_no_time():
    """A window of two segments: the second segment's arrival releases the ACK at once."""
    rate, delay = T1, 0.04
    sc = one_link(
        rate=rate,
        delay=delay,
        flows=[
            bulk(
                nbytes=100 * MSS,
                variant="none",
                rcv_buf=2 * MSS,
                delayed_ack={"enabled": True, "count": 2, "timeout": 0.2},
            )
        ],
    )
    flow = run(sc).flows["f"]
    # The ACK leaves when the 2nd segment lands, one serialisation after the 1st.
    cycle = rtt(rate=rate, delay=delay) + ser(wire_bytes("ppp", MSS + IP_TCP), rate)
    assert flow.goodput_bps == pytest.approx(2 * MSS * 8 / cycle, rel=0.02)
