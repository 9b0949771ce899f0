"""NewReno (RFC 6582): fast recovery lasts until `recover` (the highest sequence sent when
it began) is acknowledged; each partial ACK retransmits the next hole at once, so several
losses in one window are repaired without a retransmission timeout.

Testbed (engine_helpers.loss_testbed): W = 20 segments in flight when the drops happen.
"""

import pytest
from engine_helpers import (
    W,
    after,
    loss_testbed,
    run,
    series,
    third_dupack_time,
    time_ack_reaches,
    value_at,
)

pytestmark = pytest.mark.unit

MSS = 1460
SSTHRESH = W * MSS // 2

DROPS = [(60, 62), (60, 62, 64), (60, 63, 66, 69), (60, 62, 64, 66, 68)]


@pytest.mark.parametrize("drops", DROPS, ids=lambda d: f"{len(d)}-losses")
def test_newreno_recovers_several_losses_of_one_window_without_timeout(drops):
    result = run(loss_testbed("newreno", *drops))
    flow = result.flows["f"]
    assert flow.completed
    assert flow.timeouts == 0
    assert flow.fast_retransmits == 1  # one recovery episode for the whole window
    assert flow.retransmissions == len(drops)  # each hole resent once, nothing else
    assert series(result, "flow.f.ssthresh")[1] == [SSTHRESH]  # the window halved once


@pytest.mark.parametrize("drops", DROPS, ids=lambda d: f"{len(d)}-losses")
def test_reno_needs_a_timeout_for_the_same_drops_and_finishes_later(drops):
    reno = run(loss_testbed("reno", *drops)).flows["f"]
    newreno = run(loss_testbed("newreno", *drops)).flows["f"]
    assert reno.completed
    assert reno.timeouts >= 1
    assert newreno.timeouts == 0
    # The timeout costs Reno at least RTO (1 s) minus the NewReno's extra round trips.
    assert reno.completion_time > newreno.completion_time + 0.5


def test_single_loss_behaves_like_reno_until_the_full_ack():
    result = run(loss_testbed("newreno", 60))
    flow = result.flows["f"]
    assert (flow.fast_retransmits, flow.timeouts, flow.retransmissions) == (1, 0, 1)
    t_loss = series(result, "flow.f.ssthresh")[0][0]
    assert t_loss == pytest.approx(third_dupack_time(result, 60), abs=1e-6)
    cwnd = [v for _, v in after(result, "flow.f.cwnd", t_loss)]
    recovery = [SSTHRESH + k * MSS for k in range(3, W)]
    assert cwnd[: len(recovery)] == recovery
    # Full ACK (RFC 6582 3.2 step 3): cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS)
    # (option 1) or ssthresh (option 2). rwnd let nothing new out during recovery, so
    # FlightSize is 0 and option 1 gives 2 SMSS.
    assert cwnd[len(recovery)] in (min(SSTHRESH, MSS + MSS), SSTHRESH)


@pytest.fixture(scope="module")
def two_losses():
    return run(loss_testbed("newreno", 60, 62))


def test_partial_ack_retransmits_the_next_hole_at_once(two_losses):
    t_partial = time_ack_reaches(two_losses, 62 * MSS)
    assert value_at(two_losses, "flow.f.ack", t_partial) == 62 * MSS  # partial: < recover
    assert value_at(two_losses, "flow.f.retransmissions", t_partial - 1e-9) == 1
    assert value_at(two_losses, "flow.f.retransmissions", t_partial) == 2


def test_partial_ack_deflates_by_the_amount_acked_plus_one_smss(two_losses):
    t_partial = time_ack_reaches(two_losses, 62 * MSS)
    # 18 duplicate ACKs: cwnd = ssthresh + 3 SMSS + 15 SMSS before the partial ACK.
    before = value_at(two_losses, "flow.f.cwnd", t_partial - 1e-9)
    assert before == SSTHRESH + (W - 2) * MSS
    acked = 2 * MSS  # 60 and 61
    assert value_at(two_losses, "flow.f.cwnd", t_partial) == before - acked + MSS


def test_full_ack_ends_recovery_with_a_window_no_larger_than_ssthresh(two_losses):
    t_full = time_ack_reaches(two_losses, 80 * MSS)  # recover = 80 segments
    cwnd = value_at(two_losses, "flow.f.cwnd", t_full)
    # After the partial ACK the window (rwnd 20 from snd_una 62) let segments 80 and 81
    # out, so FlightSize at the full ACK is 2 segments: option 1 gives 3 SMSS.
    assert cwnd in (min(SSTHRESH, 2 * MSS + MSS), SSTHRESH)
    # No burst afterwards: congestion avoidance adds at most one SMSS per round trip
    # (RTT ~ 0.113 s on this testbed), so 0.3 s later cwnd is within 3 SMSS of ssthresh.
    assert (
        max(v for t, v in after(two_losses, "flow.f.cwnd", t_full) if t < t_full + 0.3)
        <= SSTHRESH + 3 * MSS
    )


def test_only_the_first_partial_ack_restarts_the_retransmission_timer():
    """RFC 6582 3.2 step 3 (its "Impatient" variant, as ns-3 does): the timer is reset on
    the first partial ACK only. Twelve consecutive losses take NewReno one round trip
    each (~0.11 s), more than the 1 s RTO after the first partial ACK: the timer fires
    one RTO after that ACK, and go-back-N repairs the rest of the window."""
    result = run(loss_testbed("newreno", *range(60, 72)))
    flow = result.flows["f"]
    assert flow.completed
    assert (flow.fast_retransmits, flow.timeouts) == (1, 1)
    t_first_partial = time_ack_reaches(result, 61 * MSS)
    assert value_at(result, "flow.f.ack", t_first_partial) == 61 * MSS
    rto = value_at(result, "flow.f.rto", t_first_partial)
    # The timeout sets cwnd to the loss window, one segment.
    t_timeout = next(t for t, v in after(result, "flow.f.cwnd", t_first_partial) if v == MSS)
    assert t_timeout == pytest.approx(t_first_partial + rto, abs=1e-9)
