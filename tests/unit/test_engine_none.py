"""Variant `none`, the "before Reno" baseline: a fixed window (the receiver's), no slow
start, no fast retransmit; a loss is repaired only by the retransmission timer, after
which the sender goes back N and resends everything outstanding.

Testbed (engine_helpers.loss_testbed): W = 20 segments in flight when a drop happens.
"""

import pytest
from engine_helpers import (
    W,
    first_time,
    loss_testbed,
    run,
    series,
    time_ack_reaches,
    value_at,
)

pytestmark = pytest.mark.unit

MSS = 1460


def test_no_slow_start_the_whole_window_leaves_at_once():
    result = run(loss_testbed("none", segments=100))
    flow = result.flows["f"]
    assert flow.completed and flow.retransmissions == 0
    assert series(result, "flow.f.inflight")[1][0] == W * MSS
    assert set(series(result, "flow.f.cwnd")[1]) == {W * MSS}


@pytest.fixture(scope="module")
def single_loss():
    return run(loss_testbed("none", 60))


def test_duplicate_acks_are_ignored_and_the_timer_recovers(single_loss):
    flow = single_loss.flows["f"]
    assert flow.completed
    assert flow.fast_retransmits == 0
    assert flow.timeouts == 1
    assert flow.dup_acks >= W - 1  # they arrive, and trigger nothing


def test_timeout_goes_back_n_over_the_whole_window(single_loss):
    # All W segments outstanding at the timeout (60..79) are sent again, although the
    # receiver holds 61..79 already.
    assert single_loss.flows["f"].retransmissions == W
    t_last_ack = time_ack_reaches(single_loss, 60 * MSS)
    t_timeout = first_time(single_loss, "flow.f.retransmissions", lambda v: v > 0)[0]
    assert value_at(single_loss, "flow.f.retransmissions", t_timeout) == W
    # RFC 6298 5.3: the timer was restarted by the last ACK of new data.
    rto = value_at(single_loss, "flow.f.rto", t_last_ack)
    assert t_timeout == pytest.approx(t_last_ack + rto, abs=1e-9)


def test_the_window_never_shrinks(single_loss):
    assert set(series(single_loss, "flow.f.cwnd")[1]) == {W * MSS}
    assert "flow.f.ssthresh" not in single_loss.series
