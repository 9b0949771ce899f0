"""`tcp.fast_retransmit: false`: a timeout-only sender (OPNET's TCP with fast retransmit and
fast recovery disabled; seed 000's "without Reno"). Duplicate ACKs are counted and ignored;
the retransmission timer alone repairs a loss (RFC 6298 5.4-5.6), after which congestion
control restarts from one segment with ssthresh = FlightSize / 2 (RFC 5681 3.1 eq. 4).

Testbed (engine_helpers.loss_testbed): W = 20 segments in flight when data packet 60 is
dropped, so 19 duplicate ACKs follow.
"""

import pytest
from engine_helpers import (
    W,
    after,
    first_time,
    loss_testbed,
    run,
    series,
    third_dupack_time,
    time_ack_reaches,
    value_at,
)

pytestmark = pytest.mark.unit

MSS = 1460


@pytest.fixture(scope="module", params=["reno", "newreno", "tahoe"])
def single_loss(request):
    return run(loss_testbed(request.param, 60, fast_retransmit=False))


def test_only_the_timer_recovers_the_loss(single_loss):
    flow = single_loss.flows["f"]
    assert flow.completed
    assert flow.fast_retransmits == 0
    assert flow.timeouts == 1
    assert flow.dup_acks >= W - 1  # they arrive and are counted, and trigger nothing
    # The receiver kept 61..79: one resend fills the hole and the ACK jumps past them.
    assert flow.retransmissions == 1


def test_nothing_is_resent_on_the_third_duplicate_ack(single_loss):
    t3 = third_dupack_time(single_loss, 60)
    assert value_at(single_loss, "flow.f.retransmissions", t3 + 1e-6) == 0
    # RFC 6298 5.3: the timer was restarted by the last ACK of new data, and fires one
    # RTO later (the RTO in force then; no Limited Transmit, no recovery restarts it).
    t_last_ack = time_ack_reaches(single_loss, 60 * MSS)
    rto = value_at(single_loss, "flow.f.rto", t_last_ack)
    t_retx = first_time(single_loss, "flow.f.retransmissions", lambda v: v > 0)[0]
    assert t_retx == pytest.approx(t_last_ack + rto, abs=1e-9)
    assert t_retx > t3 + 0.5  # min_rto 1 s against a 112 ms round trip


def test_no_new_data_leaves_on_the_first_duplicate_acks(single_loss):
    # Limited Transmit (RFC 3042) is part of fast retransmit's machinery: off as well.
    t_last_ack = time_ack_reaches(single_loss, 60 * MSS)
    t_retx = first_time(single_loss, "flow.f.retransmissions", lambda v: v > 0)[0]
    seq = [v for t, v in after(single_loss, "flow.f.seq", t_last_ack) if t < t_retx]
    assert max(seq) == 80 * MSS  # the window's last byte, sent before the ACKs stopped


def test_the_timeout_halves_ssthresh_and_slow_starts_from_one_segment(single_loss):
    ts, vs = series(single_loss, "flow.f.ssthresh")
    assert vs[0] == W * MSS // 2  # RFC 5681 eq. 4: FlightSize / 2
    t_retx = first_time(single_loss, "flow.f.retransmissions", lambda v: v > 0)[0]
    assert ts[0] == pytest.approx(t_retx, abs=1e-9)
    assert value_at(single_loss, "flow.f.cwnd", t_retx) == MSS


def test_the_default_sender_repairs_the_same_loss_by_fast_retransmit():
    flow = run(loss_testbed("reno", 60)).flows["f"]
    assert flow.fast_retransmits == 1 and flow.timeouts == 0


def test_sack_does_not_bring_fast_retransmit_back():
    flow = run(loss_testbed("reno", 60, 64, sack=True, fast_retransmit=False)).flows["f"]
    assert flow.completed
    assert flow.fast_retransmits == 0
    assert flow.timeouts >= 1
