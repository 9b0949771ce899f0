"""Reno (RFC 5681): slow start and congestion avoidance on the bare state record, then fast
retransmit / fast recovery with drops scripted on the testbed of engine_helpers.

Testbed: W = 20 segments in flight when a drop happens, so FlightSize at the third
duplicate ACK is 20 segments and ssthresh = 10 segments.
"""

import pytest
from engine_helpers import (
    W,
    after,
    bulk,
    loss_testbed,
    one_link,
    run,
    script_loss,
    series,
    third_dupack_time,
    time_ack_reaches,
    value_at,
)

from engine.scenario import TcpSpec
from engine.tcp.cc.base import RenoGrowth
from engine.tcp.state import INFINITE_WINDOW, TcpState

pytestmark = pytest.mark.unit

MSS = 1460


def reno_state(
    cwnd: int, ssthresh: int = INFINITE_WINDOW, counting: str = "acks"
) -> tuple[RenoGrowth, TcpState]:
    """RFC 5681's growth per ACK (`acks`) unless `counting` says Linux's (`segments`)."""
    st = TcpState(MSS, 1)
    cc = RenoGrowth(TcpSpec(mss=MSS, ack_counting=counting))
    cc.init(st)
    st.cwnd, st.ssthresh = cwnd, ssthresh
    return cc, st


# --- the strategy on a bare TcpState (ns-3 style) -----------------------------------------


def test_initial_window_and_ssthresh():
    """The state record itself starts at IW = initial_cwnd segments (Reno's init adds
    nothing to it)."""
    st = TcpState(MSS, 3)
    assert st.cwnd == 3 * MSS
    assert st.ssthresh >= 1 << 40  # "arbitrarily high" (RFC 5681 3.1)


@pytest.mark.parametrize(("acked", "growth"), [(MSS, MSS), (2 * MSS, MSS), (500, 500)])
def test_slow_start_adds_min_of_acked_and_smss(acked, growth):
    cc, st = reno_state(4 * MSS)
    cc.increase_window(st, acked)
    assert st.cwnd == 4 * MSS + growth  # RFC 5681 eq. (2)


def test_congestion_avoidance_adds_smss_squared_over_cwnd():
    cc, st = reno_state(10 * MSS, ssthresh=10 * MSS)
    cc.increase_window(st, MSS)
    assert st.cwnd == pytest.approx(10 * MSS + MSS * MSS / (10 * MSS), abs=1)  # eq. (3)


def test_congestion_avoidance_adds_about_one_smss_per_window_of_acks():
    cc, st = reno_state(10 * MSS, ssthresh=5 * MSS)
    for _ in range(10):
        cc.increase_window(st, MSS)
    assert 0.9 * MSS <= st.cwnd - 10 * MSS <= MSS


# --- Linux's counting: every segment acknowledged (tcp_slow_start, tcp_cong_avoid_ai) ------


@pytest.mark.parametrize("acked", [MSS, 2 * MSS, 5 * MSS, 500])
def test_linux_slow_start_adds_everything_acknowledged(acked):
    """tcp_slow_start: cwnd = min(cwnd + acked, ssthresh): a delayed ACK of two segments
    adds two, so the window doubles per round trip whatever the ACK ratio."""
    cc, st = reno_state(4 * MSS, counting="segments")
    cc.increase_window(st, acked)
    assert st.cwnd == 4 * MSS + acked


def test_linux_slow_start_stops_at_ssthresh_and_carries_the_rest():
    """cwnd 9, ssthresh 10, an ACK of 3 segments: slow start takes cwnd to 10 and returns
    2 segments to congestion avoidance, which banks them toward the next segment (one per
    10 acknowledged at cwnd 10); 8 more segments acknowledged add it."""
    cc, st = reno_state(9 * MSS, ssthresh=10 * MSS, counting="segments")
    cc.increase_window(st, 3 * MSS)
    assert (st.cwnd, cc.cwnd_cnt) == (10 * MSS, 2 * MSS)
    for _ in range(4):
        cc.increase_window(st, 2 * MSS)
    assert (st.cwnd, cc.cwnd_cnt) == (11 * MSS, 0)


def test_linux_congestion_avoidance_adds_a_segment_per_window_acknowledged():
    """RFC 3465 byte counting (tcp_cong_avoid_ai): at cwnd 10 the fifth delayed ACK of two
    segments completes a window and adds one segment, where RFC 5681's SMSS^2/cwnd per ACK
    adds half of one for the same five ACKs."""
    cc, st = reno_state(10 * MSS, ssthresh=10 * MSS, counting="segments")
    for _ in range(4):
        cc.increase_window(st, 2 * MSS)
    assert st.cwnd == 10 * MSS
    cc.increase_window(st, 2 * MSS)
    assert st.cwnd == 11 * MSS
    per_ack, st2 = reno_state(10 * MSS, ssthresh=10 * MSS)
    for _ in range(5):
        per_ack.increase_window(st2, 2 * MSS)
    # (each ACK adds a little less than the one before as cwnd grows: 714 B, not 730)
    assert st2.cwnd - 10 * MSS == pytest.approx(MSS / 2, rel=0.03)


def test_linux_credit_banked_at_a_larger_window_is_spent_gently():
    """tcp_cong_avoid_ai: credits of snd_cwnd_cnt >= w (the window shrank since) add one
    segment and are dropped, not a burst of several."""
    cc, st = reno_state(4 * MSS, ssthresh=4 * MSS, counting="segments")
    cc.cwnd_cnt = 9 * MSS
    cc.increase_window(st, MSS)
    assert (st.cwnd, cc.cwnd_cnt) == (5 * MSS, MSS)


@pytest.mark.parametrize(
    ("flight", "expected"), [(20 * MSS, 10 * MSS), (3 * MSS, 2 * MSS), (MSS, 2 * MSS)]
)
def test_ssthresh_after_loss_returns_max_of_half_flight_and_two_smss(flight, expected):
    cc, st = reno_state(20 * MSS)
    st.snd_una, st.snd_max = 100 * MSS, 100 * MSS + flight
    before = (st.cwnd, st.ssthresh)
    assert cc.ssthresh_after_loss(st) == expected  # RFC 5681 eq. (4)
    assert (st.cwnd, st.ssthresh) == before  # returns, never mutates


# --- fast retransmit / fast recovery ------------------------------------------------------


@pytest.fixture(scope="module")
def single_loss():
    return run(loss_testbed("reno", 60))


def test_single_loss_is_one_fast_retransmit_and_no_timeout(single_loss):
    flow = single_loss.flows["f"]
    assert flow.completed
    assert flow.fast_retransmits == 1
    assert flow.timeouts == 0
    assert flow.retransmissions == 1
    assert flow.dup_acks == W - 1


def test_fast_recovery_halves_then_inflates_then_deflates_to_ssthresh(single_loss):
    t_loss, ssthresh = series(single_loss, "flow.f.ssthresh")[0][0], W * MSS // 2
    assert series(single_loss, "flow.f.ssthresh")[1] == [ssthresh]
    cwnd = [v for _, v in after(single_loss, "flow.f.cwnd", t_loss)]
    dupacks = W - 1
    # Step 3: ssthresh + 3 SMSS on the third duplicate ACK; step 4: + 1 SMSS for each
    # further one; step 6: the ACK of new data sets cwnd = ssthresh.
    recovery = [ssthresh + k * MSS for k in range(3, dupacks + 1)]
    assert cwnd[: len(recovery) + 1] == [*recovery, ssthresh]
    # Then congestion avoidance, less than one SMSS per ACK.
    nxt = cwnd[len(recovery) + 1]
    assert ssthresh < nxt < ssthresh + MSS


def test_the_retransmission_leaves_on_the_third_duplicate_ack(single_loss):
    t_loss = series(single_loss, "flow.f.ssthresh")[0][0]
    # Not on the second (one segment time earlier), not on the fourth (one later).
    assert t_loss == pytest.approx(third_dupack_time(single_loss, 60), abs=1e-6)
    assert value_at(single_loss, "flow.f.retransmissions", t_loss) == 1
    assert value_at(single_loss, "flow.f.retransmissions", t_loss - 1e-9) == 0


@pytest.mark.parametrize("variant", ["tahoe", "reno", "newreno"])
@pytest.mark.parametrize(("after_loss", "fast"), [(3, True), (2, False)])
def test_fast_retransmit_needs_three_duplicate_acks(variant, after_loss, fast):
    """Drop the segment followed by only `after_loss` segments of a 100-segment file:
    each later segment yields one duplicate ACK, and there is no new data to send."""
    flow = run(loss_testbed(variant, 99 - after_loss, segments=100)).flows["f"]
    assert flow.completed
    assert flow.dup_acks == after_loss
    assert flow.fast_retransmits == (1 if fast else 0)
    assert flow.timeouts == (0 if fast else 1)


@pytest.fixture(scope="module")
def two_losses():
    return run(loss_testbed("reno", 60, 62))


def test_two_losses_in_one_window_need_a_timeout(two_losses):
    flow = two_losses.flows["f"]
    assert flow.completed
    assert flow.fast_retransmits == 1
    assert flow.timeouts >= 1
    assert flow.retransmissions >= 2


def test_the_partial_ack_ends_recovery_and_the_timer_fires_one_rto_later(two_losses):
    # The retransmission of 60 is answered by an ACK up to the second hole (62): Reno
    # leaves recovery with cwnd = ssthresh and, with 18 segments outstanding and no
    # more duplicate ACKs coming, waits for the retransmission timer (RFC 6298 5.3:
    # restarted on that ACK).
    t_partial = next(
        t for t, v in zip(*series(two_losses, "flow.f.ack"), strict=True) if v == 62 * MSS
    )
    assert value_at(two_losses, "flow.f.cwnd", t_partial) == W * MSS // 2
    t_timeout = series(two_losses, "flow.f.ssthresh")[0][1]
    rto = value_at(two_losses, "flow.f.rto", t_partial)
    assert t_timeout == pytest.approx(t_partial + rto, abs=1e-9)


def test_timeout_sets_ssthresh_from_flight_size_and_cwnd_to_one_segment(two_losses):
    ts, vs = series(two_losses, "flow.f.ssthresh")
    # At the timeout 62..79 are outstanding: FlightSize 18 segments (RFC 5681 eq. 4).
    assert vs[:2] == [W * MSS // 2, (80 - 62) * MSS // 2]
    assert value_at(two_losses, "flow.f.cwnd", ts[1]) == MSS  # the loss window


@pytest.mark.parametrize("variant", ["reno", "newreno"])
def test_inflated_window_sends_new_data_during_recovery(variant):
    """cwnd-limited in slow start (rwnd 4 MB): data packet 31 opens round 5, so 32
    segments (31..62) are out, the 31 later ones each bring a duplicate ACK. The first
    two release segments 63 and 64 by Limited Transmit (RFC 3042), whose own duplicate
    ACKs arrive before the retransmission's ACK: 33 in all. ssthresh = 32/2 = 16
    segments (FlightSize without the Limited Transmit segments); after the n-th
    duplicate ACK cwnd = 16 + n segments (steps 3-4), which exceeds the 34 outstanding
    from n = 19 on: step 5 sends segments 65..79. The ACK of the retransmission (up to
    63) deflates cwnd to ssthresh (step 6; for NewReno it is a full ACK and option 2 of
    RFC 6582 gives the same 16)."""
    sc = one_link(
        rate=100e6,
        delay=0.05,
        loss=script_loss(31),
        flows=[bulk(nbytes=300 * MSS, variant=variant, rcv_buf=4_000_000, window_scaling=True)],
    )
    result = run(sc)
    flow = result.flows["f"]
    assert (flow.fast_retransmits, flow.timeouts, flow.retransmissions) == (1, 0, 1)
    assert flow.dup_acks == 33
    assert series(result, "flow.f.ssthresh")[1] == [16 * MSS]
    t_exit = time_ack_reaches(result, 63 * MSS)
    assert value_at(result, "flow.f.seq", t_exit - 1e-9) == 80 * MSS
    assert value_at(result, "flow.f.cwnd", t_exit) == 16 * MSS
