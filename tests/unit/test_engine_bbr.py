"""BBR v1 and pacing, against what the model says rather than what a run printed.

The path is a dumbbell: 100 Mbit/s Ethernet access links and a 10 Mbit/s PPP bottleneck
with 20 ms each way. A full segment (1460 B of payload, 1508 B on the PPP wire) leaves the
bottleneck every 1.2064 ms, so the bottleneck delivers C = 10 Mbit/s x 1460 / 1508 of
payload: that is the bandwidth BBR must find (its delivery-rate samples count payload).

Theory checked:
- the windowed-max bandwidth estimate converges to C (within 2%) and never exceeds it;
- the modes run STARTUP -> DRAIN -> PROBE_BW, then PROBE_RTT every 10 s when no RTT
  sample lowers RTprop, each visit lasting at least 200 ms and about a round trip more;
- cwnd = 2 BDP + 3 MSS (+2 while probing) bounds the bottleneck queue after DRAIN by about
  one BDP, while a loss-based flow (CUBIC) fills whatever buffer it is given;
- a pacing sender never releases two segments closer than size / pacing rate;
- under 1% random loss BBR keeps most of C, far above Reno's Mathis bound
  MSS/RTT sqrt(3/(2bp)), which is what "would BBR fix my lossy link?" asks.
"""

from __future__ import annotations

import math

import pytest
from engine_helpers import (
    built,
    bulk,
    dumbbell,
    first_time,
    one_link,
    run,
    script_loss,
    segment,
    series,
    tcp_flows,
    value_at,
)
from pydantic import ValidationError

from engine.net import wire_bytes
from engine.packet import Kind
from engine.scenario import TcpSpec
from engine.tcp.cc.base import RenoGrowth
from engine.tcp.cc.bbr import CWND_MIN_SEGMENTS, PROBE_RTT_DURATION, Mode
from engine.tcp.minmax import WindowedMax
from engine.tcp.rate import DeliveryRate
from engine.tcp.state import TcpState

pytestmark = pytest.mark.unit

MSS = 1460
RATE = 10e6
DELAY = 0.02
ACCESS = 100e6
C = RATE * MSS / wire_bytes("ppp", MSS + 40)  # bottleneck payload rate, bit/s
# Unloaded round trip of a full segment and its ACK across the three links.
BASE_RTT = (
    2 * (DELAY + 2 * 0.0001)
    + 2 * wire_bytes("ethernet", MSS + 40) * 8 / ACCESS
    + wire_bytes("ppp", MSS + 40) * 8 / RATE
    + 2 * wire_bytes("ethernet", 40) * 8 / ACCESS
    + wire_bytes("ppp", 40) * 8 / RATE
)
BDP_SEGMENTS = C / 8 * BASE_RTT / MSS  # ~34 segments
QUEUE = "link.wan.r1>r2.queue_packets"


def linux_tcp(variant: str, **over) -> dict:
    """A Linux-like sender: handshake, delayed ACKs, IW 10, a 200 ms minimum RTO, a large
    scaled window."""
    opts = dict(
        variant=variant,
        rcv_buf=16_000_000,
        window_scaling=True,
        initial_cwnd=10,
        handshake=True,
        delayed_ack={"enabled": True},
        min_rto=0.2,
    )
    opts.update(over)
    return opts


def path(variant: str, *, duration: float, limit_packets: int = 100, loss=None, **tcp):
    return dumbbell(
        rate=RATE,
        delay=DELAY,
        access_rate=ACCESS,
        limit_packets=limit_packets,
        loss=loss,
        duration=duration,
        flows=[bulk(nbytes=None, **linux_tcp(variant, **tcp))],
    )


@pytest.fixture(scope="module")
def long_bbr():
    """45 s of one BBR flow on the loss-free path (four PROBE_RTT periods)."""
    return run(path("bbr", duration=45.0))


def modes(result) -> list[tuple[float, int]]:
    ts, vs = series(result, "flow.f.bbr_state")
    out: list[tuple[float, int]] = []
    for t, v in zip(ts, vs, strict=True):
        if not out or out[-1][1] != int(v):
            out.append((t, int(v)))
    return out


# --- the model's pieces --------------------------------------------------------------


def test_windowed_max_keeps_the_best_sample_for_its_window_then_forgets_it():
    f = WindowedMax()
    f.update(10, 1, 100.0)
    for t in range(2, 12):
        f.update(10, t, 50.0 + t)  # smaller samples do not displace the best
        assert f.get() == 100.0
    f.update(10, 12, 40.0)  # the best (t = 1) is now 11 rounds old: out of the window
    assert f.get() == 61.0  # the best of what remains in the window (t = 11)
    f.update(10, 13, 500.0)
    assert f.get() == 500.0


def test_linux_pacing_rate_is_twice_cwnd_over_srtt_in_early_slow_start_else_1_2():
    st = TcpState(MSS, 10)
    cc = RenoGrowth(TcpSpec(mss=MSS))
    assert cc.pacing_rate(st) == 0.0  # no RTT yet: no pacing
    st.srtt = 0.1
    st.ssthresh = 100 * MSS
    st.cwnd = 20 * MSS  # below ssthresh / 2
    assert cc.pacing_rate(st) == pytest.approx(2.0 * 20 * MSS / 0.1)
    st.cwnd = 60 * MSS  # slow start, but past ssthresh / 2
    assert cc.pacing_rate(st) == pytest.approx(1.2 * 60 * MSS / 0.1)
    st.snd_max = 80 * MSS  # more outstanding than cwnd (recovery): that counts
    assert cc.pacing_rate(st) == pytest.approx(1.2 * 80 * MSS / 0.1)


def test_a_rate_sample_is_delivered_over_the_longer_of_send_and_ack_intervals():
    """draft-cheng-iccrg-delivery-rate-estimation: P sent at 1.0 when delivered was 10
    segments (stamped 0.9, first sent 0.95); acked at 1.5 with delivered 30."""
    rate = DeliveryRate()
    rate.delivered, rate.delivered_time, rate.first_tx_time = 10 * MSS, 0.9, 0.95
    flow = tcp_flows(built(one_link()))[0]
    pkt = segment(flow, MSS)
    rate.on_send(pkt, 1.0, idle=False, retrans=False, lost=False)
    rate.delivered = 29 * MSS
    ack = segment(flow, 0, Kind.ACK)
    ack.echo = pkt
    rs = rate.on_ack(ack, 1.5, MSS, False, MSS, 40 * MSS, 41 * MSS)
    assert rs.delivered == 20 * MSS  # 30 - 10 segments
    assert rs.interval == pytest.approx(0.6)  # max(1.0 - 0.95, 1.5 - 0.9)
    assert rs.rtt == pytest.approx(0.5)
    assert rs.prior_delivered == 10 * MSS
    assert pkt.tx is None  # a segment gives one sample
    again = rate.on_ack(ack, 1.6, MSS, False, MSS, 39 * MSS, 40 * MSS)
    assert again.delivered < 0


def test_duplicate_acks_count_delivered_segments_and_the_cumulative_ack_takes_them_back():
    """Linux's tcp_add_reno_sack / tcp_remove_reno_sacks, in bytes."""
    rate = DeliveryRate()
    ack = segment(tcp_flows(built(one_link()))[0], 0, Kind.ACK)  # echoes no segment
    for _ in range(3):
        rate.on_ack(ack, 1.0, 0, True, MSS, 10 * MSS, 10 * MSS)
    assert rate.delivered == 3 * MSS and rate.dup_bytes == 3 * MSS
    # The retransmission fills the hole: the ACK covers it and the three held above it.
    rate.on_ack(ack, 1.1, 4 * MSS, False, MSS, 6 * MSS, 7 * MSS)
    assert rate.delivered == 4 * MSS and rate.dup_bytes == 0


def test_bbr_rejects_pacing_off_and_variant_none_cannot_pace():
    with pytest.raises(ValidationError) as excinfo:
        path("bbr", duration=1.0, pacing=False)
    assert excinfo.value.errors()[0]["loc"][-1] == "pacing"
    with pytest.raises(ValidationError):
        path("none", duration=1.0, pacing=True)
    path("cubic", duration=1.0, pacing=True)


# --- a loss-free path ------------------------------------------------------------------


def test_the_bandwidth_estimate_is_the_bottleneck_rate_less_headers(long_bbr):
    ts, bw = series(long_bbr, "flow.f.bbr_bw")
    probe_bw_from = next(t for t, m in modes(long_bbr) if m == Mode.PROBE_BW)
    steady = [v for t, v in zip(ts, bw, strict=True) if t >= probe_bw_from]
    assert steady
    for v in steady:
        assert abs(v - C) <= 0.02 * C
    # Delivery can never outrun the bottleneck: no sample above it (beyond rounding).
    assert max(bw) <= C * (1 + 1e-9)


def test_modes_run_startup_drain_probe_bw_then_probe_rtt_every_ten_seconds(long_bbr):
    seq = modes(long_bbr)
    assert [m for _, m in seq[:3]] == [Mode.STARTUP, Mode.DRAIN, Mode.PROBE_BW]
    rest = seq[3:]
    # Then only PROBE_RTT visits, each back to PROBE_BW (the pipe was found full).
    assert [m for _, m in rest] == [Mode.PROBE_RTT, Mode.PROBE_BW] * (len(rest) // 2)
    visits = [(t, rest[i + 1][0]) for i, (t, m) in enumerate(rest) if m == Mode.PROBE_RTT]
    assert len(visits) == 4  # at ~10, 20, 30, 40 s
    # RTprop was the handshake's round trip, which no data sample beats: it expires 10 s
    # after the connection opened (one round trip in), and every 10 s after each visit.
    assert 10.0 < visits[0][0] < 10.0 + 2 * BASE_RTT
    for (_, leave), (next_enter, _) in zip(visits, visits[1:], strict=False):
        assert 10.0 < next_enter - leave < 10.0 + BASE_RTT
    for enter, leave in visits:
        # At most 4 segments in flight for 200 ms and a round trip: draining the queue
        # takes at most a round trip, the round at 4 segments another.
        assert PROBE_RTT_DURATION < leave - enter < PROBE_RTT_DURATION + 3 * BASE_RTT
        inflight = value_at(long_bbr, "flow.f.inflight", enter + (leave - enter) / 2)
        assert inflight <= CWND_MIN_SEGMENTS * MSS


def test_the_bottleneck_queue_stays_near_one_bdp_where_cubic_fills_the_buffer(long_bbr):
    probe_bw_from = next(t for t, m in modes(long_bbr) if m == Mode.PROBE_BW)
    ts, q = series(long_bbr, QUEUE)
    after_drain = [v for t, v in zip(ts, q, strict=True) if t > probe_bw_from + 2 * BASE_RTT]
    # In flight <= cwnd = 2 BDP + 5 MSS, of which one BDP is on the wires: the queue holds
    # at most one BDP and five segments.
    assert max(after_drain) <= math.ceil(BDP_SEGMENTS) + 5
    goodput = long_bbr.flows["f"].goodput_bps
    assert goodput >= 0.95 * C  # and the link stays full (PROBE_RTT costs ~2%)

    deep = path("bbr", duration=20.0, limit_packets=1000)
    cubic = path("cubic", duration=20.0, limit_packets=1000)
    bbr_q = run(deep).links["wan:r1>r2"].queue_mean
    cubic_q = run(cubic).links["wan:r1>r2"].queue_mean
    assert bbr_q < BDP_SEGMENTS
    assert cubic_q > 5 * bbr_q


@pytest.mark.parametrize("variant", ["bbr", "cubic"])
def test_pacing_keeps_segments_at_least_size_over_rate_apart(variant):
    result = run(path(variant, duration=6.0, limit_packets=1000, pacing=True))
    ts, seq = series(result, "flow.f.seq")
    assert len(ts) > 1000
    # After the unpaced initial window every release is one segment, never a burst ...
    steps = [b - a for a, b in zip(seq[10:], seq[11:], strict=False)]
    assert set(steps) == {MSS}
    # ... and the next one waits at least its size at the pacing rate then in force.
    for i in range(10, len(ts) - 1):
        rate = value_at(result, "flow.f.pacing_rate", ts[i]) / 8
        assert ts[i + 1] - ts[i] >= MSS / rate * (1 - 1e-9)


# --- losses -------------------------------------------------------------------------------


@pytest.mark.parametrize("sack", [False, True])
def test_a_single_loss_leaves_the_model_alone_and_cwnd_comes_back(sack):
    """One data packet dropped in PROBE_BW (packet 2500, ~3 s in). BBR v1 keeps its
    bandwidth estimate and pacing rate; its first recovery round conserves packets (cwnd
    falls from 2 BDP to what is in flight, about one BDP), and when recovery ends cwnd
    returns to its value before."""
    result = run(path("bbr", duration=6.0, loss=script_loss(2500), sack=sack))
    f = result.flows["f"]
    assert (f.fast_retransmits, f.timeouts, f.retransmissions) == (1, 0, 1)
    t, _ = first_time(result, "flow.f.retransmissions", lambda v: v >= 1)
    assert value_at(result, "flow.f.bbr_state", t) == Mode.PROBE_BW
    # The retransmission is paced like any segment (Linux's tcp_xmit_retransmit_queue
    # checks pacing): it leaves up to one segment time at the pacing rate (~C) after
    # recovery began and cut cwnd, so cwnd before is read two segment times earlier.
    before = value_at(result, "flow.f.cwnd", t - 2 * MSS * 8 / C)
    assert before >= 2 * BDP_SEGMENTS * MSS
    bdp = BDP_SEGMENTS * MSS
    assert value_at(result, "flow.f.cwnd", t) <= bdp + 8 * MSS  # packet conservation
    assert value_at(result, "flow.f.cwnd", t + 3 * BASE_RTT) >= before - 3 * MSS
    for key in ("flow.f.bbr_bw", "flow.f.pacing_rate"):
        assert value_at(result, key, t) == value_at(result, key, t - 1e-6)

    ts, bw = series(result, "flow.f.bbr_bw")
    # After recovery the receiver's delayed-ACK pairing shifts by one segment, so a sample
    # may begin at an ACK for one segment and end at an ACK for two: one segment more than
    # the interval carried at rate C, over a sample of about one BDP (Linux's and ns-3's
    # samples have the same quantisation).
    high = C * (1 + 1 / BDP_SEGMENTS)
    assert all(0.98 * C <= v <= high for tt, v in zip(ts, bw, strict=True) if tt > t)
    assert f.goodput_bps >= 0.95 * C


@pytest.mark.parametrize("sack", [False, True])
def test_recovery_is_paced_too(sack):
    """Linux checks pacing before every retransmission (tcp_xmit_retransmit_queue's
    tcp_pacing_check): with PRR (Linux's recovery) the fast retransmission leaves at least
    a segment's time at the pacing rate after the new segment before it, and the next new
    one as long after it; no burst at the start of recovery."""
    result = run(path("bbr", duration=3.5, loss=script_loss(2500), sack=sack, recovery="prr"))
    t, _ = first_time(result, "flow.f.retransmissions", lambda v: v >= 1)
    rate = value_at(result, "flow.f.pacing_rate", t) / 8
    ts, _ = series(result, "flow.f.seq")
    before_t = max(x for x in ts if x < t)
    after_t = min(x for x in ts if x > t)
    assert t - before_t >= MSS / rate * (1 - 1e-9)
    assert after_t - t >= MSS / rate * (1 - 1e-9)


@pytest.mark.parametrize("sack", [False, True])
def test_one_percent_random_loss_costs_bbr_little_and_reno_most(sack):
    p = 0.01
    result = run(path("bbr", duration=30.0, loss={"model": "bernoulli", "rate": p}, sack=sack))
    f = result.flows["f"]
    assert f.plr == pytest.approx(p, rel=0.15)
    b = 2  # delayed ACKs
    mathis = MSS * 8 / BASE_RTT * math.sqrt(3 / (2 * b * p))  # Reno's bound, at base RTT
    # BBR does not read random loss as congestion: it delivers about (1 - p) C less the
    # startup and PROBE_RTT, several times what any Reno could at this loss rate.
    assert f.goodput_bps >= 0.85 * C
    assert f.goodput_bps >= 3 * mathis
    # The diagnosis does not offer Mathis as a bound for a flow that loss does not drive.
    diagnosis = result.diagnosis["f"]
    assert diagnosis.bounds.mathis_bps is None
    assert diagnosis.limit == "link_capacity"


def test_same_seed_same_run():
    scenario = path("bbr", duration=12.0, loss={"model": "bernoulli", "rate": 0.005})
    a, b = run(scenario), run(scenario)
    assert a.flows == b.flows
    assert a.series["flow.f.bbr_state"] == b.series["flow.f.bbr_state"]
