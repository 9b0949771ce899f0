"""Slow start (RFC 5681 3.1): from IW = initial_cwnd segments, cwnd grows by one SMSS per
ACK of new data, so with an ACK per segment (no delayed ACKs) it doubles every round trip.
"""

import pytest
from engine_helpers import bulk, one_link, rtt, run, series, value_at

pytestmark = pytest.mark.unit

MSS = 1460
RATE, DELAY = 100e6, 0.05  # a window of 256 segments serialises in 31 ms, well inside R/2


@pytest.mark.parametrize("variant", ["tahoe", "reno", "newreno"])
@pytest.mark.parametrize("initial_cwnd", [1, 2, 4])
def test_cwnd_doubles_every_round_trip(variant, initial_cwnd):
    round_trip = rtt(rate=RATE, delay=DELAY)
    sc = one_link(
        rate=RATE,
        delay=DELAY,
        flows=[
            bulk(
                nbytes=2000 * MSS,
                variant=variant,
                initial_cwnd=initial_cwnd,
                rcv_buf=4_000_000,
                window_scaling=True,
            )
        ],
    )
    result = run(sc)
    assert result.flows["f"].retransmissions == 0
    assert "flow.f.ssthresh" not in result.series  # no loss: ssthresh stays "arbitrarily high"
    # The ACKs of round k arrive within [k R, k R + burst); sample mid-way to round k + 1.
    for k in range(7):
        cwnd = value_at(result, "flow.f.cwnd", k * round_trip + round_trip / 2)
        assert cwnd == initial_cwnd * 2**k * MSS, f"round {k}"


def test_one_smss_per_ack_in_slow_start():
    """Every cwnd step in the first rounds is exactly one SMSS (one ACK per segment)."""
    sc = one_link(
        rate=RATE,
        delay=DELAY,
        flows=[bulk(nbytes=200 * MSS, variant="reno", rcv_buf=4_000_000, window_scaling=True)],
    )
    _, cwnd = series(run(sc), "flow.f.cwnd")
    steps = [b - a for a, b in zip(cwnd, cwnd[1:], strict=False)]
    assert steps and all(step == MSS for step in steps)


def test_slow_start_stops_growing_at_the_receive_window():
    """A sender held by rwnd does not grow cwnd past it: RFC 7661 4.2 (and Linux's
    tcp_is_cwnd_limited) grow cwnd only while it is what limits sending."""
    window = 16 * MSS
    sc = one_link(
        rate=RATE, delay=DELAY, flows=[bulk(nbytes=500 * MSS, variant="reno", rcv_buf=window)]
    )
    result = run(sc)
    assert result.flows["f"].cwnd_max == window
    # Reached after log2(16) = 4 round trips and held.
    round_trip = rtt(rate=RATE, delay=DELAY)
    assert value_at(result, "flow.f.cwnd", 4.5 * round_trip) == window
