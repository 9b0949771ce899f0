"""Tahoe (4.3BSD-Tahoe, RFC 5681 3.1-3.2 without fast recovery): on the third duplicate
ACK, ssthresh = max(FlightSize / 2, 2 SMSS), cwnd = 1 SMSS, retransmit, slow start again.

Testbed (engine_helpers.loss_testbed): W = 20 segments in flight when data packet 60 is
dropped, so 19 duplicate ACKs follow and FlightSize at the third one is 20 segments.
"""

import pytest
from engine_helpers import (
    W,
    after,
    loss_testbed,
    run,
    series,
    third_dupack_time,
    value_at,
)

pytestmark = pytest.mark.unit

MSS = 1460


@pytest.fixture(scope="module")
def single_loss():
    return run(loss_testbed("tahoe", 60))


def test_single_loss_is_repaired_by_one_fast_retransmit(single_loss):
    flow = single_loss.flows["f"]
    assert flow.completed
    assert flow.fast_retransmits == 1
    assert flow.timeouts == 0
    assert flow.dup_acks == W - 1
    # Go-back-N from the lost segment: its retransmission fills the hole and the
    # cumulative ACK then covers the rest of the window, so nothing else is resent.
    assert flow.retransmissions == 1


def test_ssthresh_is_half_the_flight_size(single_loss):
    ts, vs = series(single_loss, "flow.f.ssthresh")
    assert vs == [max(W * MSS // 2, 2 * MSS)]


def test_cwnd_returns_to_one_segment_then_slow_starts_to_ssthresh(single_loss):
    t_loss = series(single_loss, "flow.f.ssthresh")[0][0]
    ssthresh = W * MSS // 2
    assert value_at(single_loss, "flow.f.cwnd", t_loss) == MSS
    cwnd = [v for _, v in after(single_loss, "flow.f.cwnd", t_loss)]
    # Slow start: 1, 2, ... segments, one SMSS per ACK, up to ssthresh...
    k = ssthresh // MSS
    assert cwnd[:k] == [i * MSS for i in range(1, k + 1)]
    # ...then congestion avoidance: less than one SMSS per ACK (RFC 5681 eq. 3).
    growth = [b - a for a, b in zip(cwnd[k - 1 : k + 10], cwnd[k : k + 11], strict=True)]
    assert all(0 < g < MSS for g in growth)


def test_the_retransmission_leaves_on_the_third_duplicate_ack(single_loss):
    t_loss = series(single_loss, "flow.f.ssthresh")[0][0]
    # Not on the second (one segment time earlier), not on the fourth (one later).
    assert t_loss == pytest.approx(third_dupack_time(single_loss, 60), abs=1e-6)
    assert value_at(single_loss, "flow.f.retransmissions", t_loss) == 1
    assert value_at(single_loss, "flow.f.retransmissions", t_loss - 1e-9) == 0


def test_tahoe_does_not_inflate_the_window_during_recovery(single_loss):
    t_loss = series(single_loss, "flow.f.ssthresh")[0][0]
    # The remaining 16 duplicate ACKs of the window add nothing (no fast recovery).
    assert value_at(single_loss, "flow.f.cwnd", t_loss + 0.1) <= 2 * MSS


def test_go_back_n_duplicates_do_not_set_off_fast_retransmits_in_a_loop():
    """Four Tahoe flows through one 1 Mbit/s chain (seed 002's testbed), 600 ms of
    standing queue: each fast retransmit goes back N and may resend segments the receiver
    already holds, whose duplicate ACKs name exactly `recover`. Were they taken for a new
    loss (with Limited Transmit feeding two more segments each time), every recovery would
    start the next: the flows would resend dozens of segments per packet dropped."""
    from engine import Scenario
    from engine.presets import load_preset

    data = load_preset("kazmi-variants").model_dump(mode="json")
    for flow in data["flows"]:
        flow["tcp"]["variant"] = "tahoe"
        if flow["id"] in ("ftp2", "ftp3", "ftp4"):
            flow["dst"] = "node1"
    result = run(Scenario.model_validate(data))
    on_path = [result.flows[f"ftp{i}"] for i in range(1, 5)]
    drops = sum(port.drops for key, port in result.links.items() if not key.startswith("park"))
    assert drops > 0
    assert sum(f.retransmissions for f in on_path) <= 3 * drops
    assert sum(f.fast_retransmits for f in on_path) <= drops
