"""Limited Transmit (RFC 3042, a SHOULD of RFC 5681 3.2; on by default in ns-2 as
`singledup_` and in ns-3 as `LimitedTransmit`): on the first and second duplicate ACKs
the sender sends one new segment each, if the receive window allows and FlightSize stays
within cwnd + 2 SMSS, so that a window of three or four segments still produces the three
duplicate ACKs that fast retransmit needs. cwnd does not change, and the segments sent
this way do not count in the FlightSize that sets ssthresh.

Testbed: one 1 Mbit/s PPP link, 50 ms each way, initial window 3 segments, no delayed
ACKs, a receive window far above the flight, and the first data packet lost.
"""

import pytest
from engine_helpers import (
    IP_TCP,
    SEGMENT_TIME,
    bulk,
    one_link,
    run,
    script_loss,
    ser,
    series,
    value_at,
)

from engine.net import wire_bytes

pytestmark = pytest.mark.unit

MSS = 1460
DELAY = 0.05
ACK_TIME = ser(wire_bytes("ppp", IP_TCP), 1e6)


def small_window(variant: str, *drops: int, segments: int = 10, **tcp):
    return one_link(
        rate=1e6,
        delay=DELAY,
        loss=script_loss(*drops),
        flows=[bulk(nbytes=segments * MSS, variant=variant, initial_cwnd=3, **tcp)],
    )


def dupack_arrival(k: int) -> float:
    """When the duplicate ACK sent for data packet k (k >= 1) of the first flight reaches
    the sender: packets leave back to back, the lost packet 0 still used its slot."""
    return (k + 1) * SEGMENT_TIME + 2 * DELAY + ACK_TIME


@pytest.mark.parametrize("variant", ["tahoe", "reno", "newreno", "vegas", "cubic"])
def test_a_three_segment_window_recovers_by_fast_retransmit_not_timeout(variant):
    result = run(small_window(variant, 0))
    flow = result.flows["f"]
    assert flow.completed
    assert (flow.timeouts, flow.fast_retransmits, flow.retransmissions) == (0, 1, 1)


def test_sack_recovery_also_sends_new_data_on_the_first_two_dupacks():
    flow = run(small_window("sack", 0)).flows["f"]
    assert (flow.timeouts, flow.fast_retransmits, flow.retransmissions) == (0, 1, 1)


@pytest.fixture(scope="module")
def reno():
    return run(small_window("reno", 0))


def test_each_of_the_first_two_dupacks_releases_one_new_segment(reno):
    first, second = dupack_arrival(1), dupack_arrival(2)
    assert value_at(reno, "flow.f.seq", first - 1e-9) == 3 * MSS
    assert value_at(reno, "flow.f.seq", first) == 4 * MSS
    assert value_at(reno, "flow.f.seq", second - 1e-9) == 4 * MSS
    assert value_at(reno, "flow.f.seq", second) == 5 * MSS


def test_cwnd_is_unchanged_by_limited_transmit(reno):
    assert value_at(reno, "flow.f.cwnd", dupack_arrival(2)) == 3 * MSS


def test_ssthresh_ignores_the_limited_transmit_segments(reno):
    # FlightSize at the third duplicate ACK is 3 segments without the two sent by limited
    # transmit (5 with them): max(3 * MSS // 2, 2 * MSS) = 2 * MSS, not 5 * MSS // 2.
    t, v = series(reno, "flow.f.ssthresh")
    assert v[0] == 2 * MSS
    # The third duplicate ACK is the one for limited-transmit segment 3, sent at the first
    # dupack's arrival and serialised on an idle link.
    assert t[0] == pytest.approx(dupack_arrival(1) + SEGMENT_TIME + 2 * DELAY + ACK_TIME, abs=1e-9)


def test_the_receive_window_bounds_limited_transmit():
    # rwnd = 3 segments = the flight: no new segment may leave on a duplicate ACK, so only
    # two duplicate ACKs come back and the retransmission timer recovers the loss.
    result = run(small_window("reno", 0, rcv_buf=3 * MSS))
    flow = result.flows["f"]
    assert (flow.timeouts, flow.fast_retransmits) == (1, 0)
    assert value_at(result, "flow.f.seq", dupack_arrival(2)) == 3 * MSS


def test_the_fixed_window_sender_has_no_limited_transmit():
    result = run(small_window("none", 0, rcv_buf=3 * MSS))
    assert result.flows["f"].fast_retransmits == 0
    assert value_at(result, "flow.f.seq", dupack_arrival(2)) == 3 * MSS
