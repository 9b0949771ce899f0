"""Receiver quick-ACKs at connection start (`delayed_ack.quickack`): Linux's quickack mode
ACKs the first min(16, rcv_wnd / (2 MSS)) data segments at once, ns-3 the first one; a
receiver without it (ns-2's DelAck sink) holds the first segment of an initial window of
one for the whole delayed-ACK timeout.

One link, 1 Mbit/s, 50 ms each way, no handshake: the first segment leaves at t = 0, so
its ACK reaches the sender after exactly one round trip (`rtt`) when it is not delayed.
"""

import pytest
from engine_helpers import bulk, first_time, one_link, rtt, run

from engine.scenario import DelayedAckSpec, TcpSpec
from engine.tcp.receiver import advertised_window, quick_acks

pytestmark = pytest.mark.unit

MSS = 1460
RATE, DELAY = 1e6, 0.05
RTT = rtt(rate=RATE, delay=DELAY)
TIMEOUT = 0.2


def transfer(quickack, segments: int, rcv_buf: int = 65535):
    return run(
        one_link(
            rate=RATE,
            delay=DELAY,
            flows=[
                bulk(
                    nbytes=segments * MSS,
                    initial_cwnd=1,
                    rcv_buf=rcv_buf,
                    delayed_ack={
                        "enabled": True,
                        "count": 2,
                        "timeout": TIMEOUT,
                        "quickack": quickack,
                    },
                )
            ],
        )
    )


def first_ack_time(result) -> float:
    return first_time(result, "flow.f.ack", lambda v: v >= MSS)[0]


@pytest.mark.parametrize("quickack", ["linux", "ns3", True])
def test_first_ack_comes_one_round_trip_after_the_first_segment(quickack):
    assert first_ack_time(transfer(quickack, 2)) == pytest.approx(RTT, abs=1e-9)


@pytest.mark.parametrize("quickack", ["off", False])
def test_without_quickack_the_first_ack_waits_for_the_delayed_ack_timeout(quickack):
    assert first_ack_time(transfer(quickack, 2)) == pytest.approx(RTT + TIMEOUT, abs=1e-9)


def test_a_two_segment_transfer_saves_the_whole_timeout():
    quick = transfer("linux", 2).flows["f"].completion_time
    slow = transfer("off", 2).flows["f"].completion_time
    assert slow - quick == pytest.approx(TIMEOUT, abs=1e-9)


def acks(result) -> int:
    return result.links["wan:h2>h1"].packets


def test_linux_acks_five_segments_at_once_with_a_64k_buffer():
    # Slow start from one segment: 0 | 1 2 | 3 4 5 6. Quick ACKs for 0-4 (min(16,
    # 14600 / 2920) = 5), then 5 and 6 share a delayed ACK: 6 ACKs for 7 segments.
    assert acks(transfer("linux", 7)) == 6
    # ns-3: only segment 0 at once; then 1+2, 3+4, 5+6 (the window of 3 after the second
    # ACK sends 3, 4, 5; the ACK of 3+4 lets 6 out to join 5).
    assert acks(transfer("ns3", 7)) == 4


@pytest.mark.parametrize(
    "rcv_buf,mss,expected",
    [
        (65535, 1460, 5),  # Linux's initial receive window is 10 segments: 14600 / 2920
        (8760, 1460, 3),  # a 6-segment buffer: 8760 / 2920
        (2000, 1460, 2),  # less than two segments: at least 2
        (1 << 20, 536, 5),  # 10 segments of 536 B
        (1 << 20, 8960, 2),  # jumbo MSS: max(14600 / 8960, 2) = 2 segments -> 1, at least 2
    ],
)
def test_linux_quickack_count(rcv_buf, mss, expected):
    spec = TcpSpec(mss=mss, rcv_buf=rcv_buf, window_scaling=True)
    assert quick_acks(spec, advertised_window(spec)) == expected


def test_quickack_is_a_switch_of_the_delayed_ack_spec():
    assert DelayedAckSpec().quickack == "linux"
    assert DelayedAckSpec(quickack=False).quickack == "off"
    with pytest.raises(ValueError, match="quickack"):
        DelayedAckSpec(quickack="sometimes")
    # Delayed ACKs off: every segment is ACKed anyway.
    assert quick_acks(TcpSpec(delayed_ack={"enabled": False}), 65535) == 0
