"""The retransmission timer (RFC 6298): initial RTO, the SRTT/RTTVAR equations, the
min_rto floor, exponential backoff capped at max_rto, and Karn's rule.
"""

import pytest
from engine_helpers import (
    bulk,
    first_time,
    one_link,
    rtt,
    run,
    script_loss,
    series,
    time_ack_reaches,
    value_at,
)

pytestmark = pytest.mark.unit

MSS = 1460
RATE, DELAY = 1e6, 0.05
ALL_ACKS_LOST = {"model": "bernoulli", "rate": 1.0, "direction": "b_to_a"}


def expected_timeouts(initial: float, cap: float, until: float) -> tuple[list, list]:
    """Times of successive expiries and the RTO after each (RFC 6298 5.5: doubled, capped)."""
    times, rtos = [], []
    t, rto = 0.0, initial
    while t + rto < until:
        t += rto
        rto = min(2 * rto, cap)
        times.append(t)
        rtos.append(rto)
    return times, rtos


@pytest.mark.parametrize(
    ("initial_rto", "max_rto"), [(1.0, 60.0), (1.0, 20.0), (3.0, 60.0), (2.0, 5.0)]
)
def test_backoff_doubles_from_the_initial_rto_up_to_max_rto(initial_rto, max_rto):
    """No ACK ever returns: the first segment times out at the initial RTO (RFC 6298 2.1),
    then each retransmission waits twice as long (5.5) until max_rto (2.5)."""
    duration = 200.0
    sc = one_link(
        rate=RATE,
        delay=DELAY,
        loss=ALL_ACKS_LOST,
        duration=duration,
        flows=[bulk(nbytes=None, variant="reno", initial_rto=initial_rto, max_rto=max_rto)],
    )
    result = run(sc)
    times, rtos = expected_timeouts(initial_rto, max_rto, duration)
    assert rtos[-1] == max_rto  # the cap is reached within the run
    assert result.flows["f"].timeouts == len(times)
    # One segment (the loss window) retransmitted at each expiry.
    rtx_t, rtx_v = series(result, "flow.f.retransmissions")
    assert rtx_t[1:] == pytest.approx(times, abs=1e-9)
    assert rtx_v[1:] == list(range(1, len(times) + 1))
    rto_t, rto_v = series(result, "flow.f.rto")
    # The trace records a value when it changes: the doublings, not the repeats of the cap.
    assert rto_v == [v for i, v in enumerate(rtos) if i == 0 or v != rtos[i - 1]]


def test_backoff_of_an_established_connection():
    """Data 60..89 lost on the wire after ~60 good round trips: RTO 1 s (the min_rto
    floor), then 2, 4, 8 and the 10 s cap, one lost retransmission per expiry."""
    sc = one_link(
        rate=RATE,
        delay=DELAY,
        loss=script_loss(*range(60, 90)),
        duration=300,
        flows=[bulk(nbytes=200 * MSS, variant="reno", rcv_buf=20 * MSS, max_rto=10.0)],
    )
    result = run(sc)
    flow = result.flows["f"]
    assert flow.completed
    t_last = time_ack_reaches(result, 60 * MSS)
    assert value_at(result, "flow.f.rto", t_last) == 1.0
    rtx_t, _ = series(result, "flow.f.retransmissions")
    expiries = [t for t in rtx_t if t > t_last][:11]
    gaps = [b - a for a, b in zip([t_last, *expiries], expiries, strict=False)]
    # 20 segments in flight and 10 retransmissions of segment 60 are all lost: 11 expiries.
    assert gaps == pytest.approx([1, 2, 4, 8, 10, 10, 10, 10, 10, 10, 10], abs=1e-9)
    assert flow.timeouts == 11
    assert flow.fast_retransmits == 0  # every segment after 60 was lost: no duplicate ACKs


def stop_and_wait(min_rto: float, nbytes: int = 20 * MSS, loss: dict | None = None):
    return one_link(
        rate=RATE,
        delay=DELAY,
        loss=loss,
        flows=[bulk(nbytes=nbytes, variant="none", rcv_buf=MSS, min_rto=min_rto)],
    )


def test_rto_follows_rfc6298_equations_for_a_constant_rtt():
    """One segment per round trip, every sample R: after the first, SRTT = R and RTTVAR =
    R/2, so RTO = R + 4 R/2 = 3R (2.2); each later sample shrinks RTTVAR by 3/4 (2.3)."""
    r = rtt(rate=RATE, delay=DELAY)
    result = run(stop_and_wait(min_rto=0.01))
    srtt = series(result, "flow.f.srtt")[1]
    assert srtt == pytest.approx([r] * len(srtt), rel=1e-9)
    _, rto = series(result, "flow.f.rto")
    expected = [r + 4 * (r / 2) * 0.75**n for n in range(len(rto))]
    assert len(rto) >= 10
    assert rto == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("min_rto", [1.0, 0.2])
def test_rto_is_floored_at_min_rto(min_rto):
    r = rtt(rate=RATE, delay=DELAY)  # 112 ms: 3R = 337 ms, converging towards R
    result = run(stop_and_wait(min_rto=min_rto, nbytes=40 * MSS))
    _, rto = series(result, "flow.f.rto")
    assert min(rto) == min_rto  # RFC 6298 2.4
    assert rto[0] == pytest.approx(max(min_rto, 3 * r), rel=1e-9)
    # The floor holds while the equations converge towards R (< min_rto here).
    assert rto[-1] == min_rto


def test_timeout_with_one_segment_in_flight_sets_ssthresh_to_two_smss():
    """RFC 5681 eq. (4): max(FlightSize/2, 2 SMSS) with FlightSize = 1 segment."""
    sc = one_link(
        rate=RATE,
        delay=DELAY,
        loss=script_loss(5),
        flows=[bulk(nbytes=20 * MSS, variant="reno", rcv_buf=MSS)],
    )
    result = run(sc)
    flow = result.flows["f"]
    assert (flow.timeouts, flow.fast_retransmits, flow.retransmissions) == (1, 0, 1)
    t, ssthresh = series(result, "flow.f.ssthresh")
    assert ssthresh == [2 * MSS]
    assert value_at(result, "flow.f.cwnd", t[0]) == MSS


def test_karn_keeps_the_backed_off_rto_until_a_fresh_sample():
    """Segment 5 and its first retransmission are lost: RTO 1 -> 2 -> 4 s. The ACK of the
    retransmitted segment gives no sample (Karn), so RTO stays 4 s; the ACK of the next
    segment, sent once, gives a sample and RTO falls back to the 1 s floor."""
    r = rtt(rate=RATE, delay=DELAY)
    result = run(stop_and_wait(min_rto=1.0, loss=script_loss(5, 6)))
    flow = result.flows["f"]
    assert flow.timeouts == 2
    assert flow.retransmissions == 2
    t_ack5 = time_ack_reaches(result, 6 * MSS)
    t_ack6 = time_ack_reaches(result, 7 * MSS)
    assert t_ack6 - t_ack5 == pytest.approx(r, rel=1e-9)
    assert value_at(result, "flow.f.rto", t_ack5) == 4.0
    assert value_at(result, "flow.f.rto", t_ack6) == 1.0
    # The lost segment went out at t_ack4 and waited 1 s, then 2 s, before the third copy.
    t_ack4 = time_ack_reaches(result, 5 * MSS)
    first_rtx = first_time(result, "flow.f.retransmissions", lambda v: v >= 1)[0]
    second_rtx = first_time(result, "flow.f.retransmissions", lambda v: v >= 2)[0]
    assert (first_rtx - t_ack4, second_rtx - first_rtx) == pytest.approx((1.0, 2.0), abs=1e-9)
    assert t_ack5 - second_rtx == pytest.approx(r, rel=1e-9)


def test_lost_syn_ack_backs_off_the_syn():
    """With the handshake on and every reverse packet lost, the SYN is resent at 1, 3, 7
    and 15 s (RFC 6298 2.1 and 5.5 apply to the SYN too)."""
    sc = one_link(
        rate=RATE,
        delay=DELAY,
        loss=ALL_ACKS_LOST,
        duration=20.0,
        flows=[bulk(nbytes=10 * MSS, handshake=True)],
    )
    flow = run(sc).flows["f"]
    assert flow.timeouts == 4
    assert flow.bytes_delivered == 0
    assert not flow.completed
