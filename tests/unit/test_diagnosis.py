"""The diagnosis' link bound is the share of the bottleneck the other traffic actually left
to a flow while it ran (engine/usage.py), never a static 1/n split; its advice follows the
numbers."""

from __future__ import annotations

import pytest
from engine_helpers import bulk, one_link, run

from engine.net import wire_bytes

pytestmark = pytest.mark.unit

RATE = 1e6
PAYLOAD_CAPACITY = RATE * 1460 / wire_bytes("ppp", 1500)  # 968.2 kbit/s of a 1 Mbit/s PPP link


def test_a_flow_that_barely_overlaps_another_keeps_the_whole_link_as_its_bound():
    """The issue's case: a 2 MB transfer and a 1 KB one starting 3 s later. They share the
    link for well under a second of the 2 MB flow's ~17 s: its bound is the link's payload
    rate less the small flow's two packets, not half of it."""
    scenario = one_link(
        rate=RATE,
        delay=0.01,
        flows=[
            bulk("big", nbytes=2_000_000, rcv_buf=65535),
            bulk("small", nbytes=1000, start=3.0),
        ],
    )
    result = run(scenario)
    big = result.diagnosis["big"]
    achieved = result.flows["big"].goodput_bps
    assert achieved > 0.9 * PAYLOAD_CAPACITY
    assert big.bounds.link_bps >= achieved
    assert big.bounds.link_bps == pytest.approx(PAYLOAD_CAPACITY, rel=0.002)
    assert big.limit == "link_capacity" and big.bottleneck == "wan:h1>h2"
    assert "other traffic took" not in big.advice
    small = result.diagnosis["small"]
    # The small flow's 2 packets waited behind the big one's standing queue, which had the
    # link while it ran: its bound is what the big flow left, far below the link.
    assert result.flows["small"].goodput_bps <= small.bounds.link_bps < 0.2 * PAYLOAD_CAPACITY


def test_two_flows_running_together_are_each_bounded_by_what_the_other_left():
    """Two greedy flows for the same 60 s: each one's bound is the link's payload rate less
    the other's actual use, so bound(a) ~ capacity - goodput(b), whatever the split."""
    scenario = one_link(
        rate=RATE,
        delay=0.02,
        limit_packets=30,
        duration=60.0,
        flows=[
            bulk("a", nbytes=None, stop=60.0, rcv_buf=65535),
            bulk("b", nbytes=None, stop=60.0, rcv_buf=65535),
        ],
    )
    result = run(scenario)
    for me, other in (("a", "b"), ("b", "a")):
        d = result.diagnosis[me]
        achieved = result.flows[me].goodput_bps
        assert achieved <= d.bounds.link_bps
        # The other's retransmissions and headers also took the link: its goodput is a
        # lower bound of its use, so the bound sits a little below capacity - goodput.
        rest = PAYLOAD_CAPACITY - result.flows[other].goodput_bps
        assert d.bounds.link_bps == pytest.approx(rest, rel=0.05)
        assert d.limit == "link_capacity"
        assert "other traffic took" in d.advice


# --- losses to a PVC's policer -------------------------------------------------------------


def policed(bc: float, be: float = 0.0):
    from test_engine_framerelay import fr_net, greedy, pvc

    return run(
        fr_net(pvcs=[pvc(cir=256e3, bc=bc, be=be)], flows=[greedy(rcv_buf=65535)], duration=100.0)
    )


def test_losses_to_the_pvc_policer_are_attributed_to_its_contract():
    """Bc = 32,000 bit (Tc = 125 ms) is under three 12,064-bit frames while TCP sends a
    window of up to 44: the policer discards, no link drops anything. The diagnosis names
    the PVC's contract and what to change, not "find and remove the loss"."""
    result = policed(bc=32000)
    p = result.pvcs["p"]
    assert p.excess_dropped > 0
    assert all(link.drops == 0 and link.error_drops == 0 for link in result.links.values())
    d = result.diagnosis["f"]
    assert d.limit == "pvc_policing"
    for words in (
        "PVC p",
        "CIR 256 kbit/s",
        "Bc 32,000 bit",
        "Be 0 bit",
        "Tc 125 ms",
        f"discarded {p.excess_dropped:,} frames",
        "becn_shaping",
    ):
        assert words in d.advice
    assert "remove the loss" not in d.advice


def test_a_contract_smaller_than_one_frame_is_named_as_such():
    result = policed(bc=8000)
    assert result.flows["f"].bytes_delivered == 0
    d = result.diagnosis["f"]
    assert d.limit == "pvc_policing"
    assert "smaller than one full frame (12,064 bit)" in d.advice


def test_the_engine_cli_prints_pvc_statistics():
    import io

    from engine.cli import print_result

    result = policed(bc=32000)
    out = io.StringIO()
    print_result(result, out)
    text = out.getvalue()
    p = result.pvcs["p"]
    assert "\nPVCs\n" in text
    assert f"excess_dropped={p.excess_dropped:,}" in text
    assert f"frames={p.frames:,}" in text and f"de_marked={p.de_marked:,}" in text


def test_a_flow_that_stops_sending_is_bounded_over_its_own_time_not_the_run():
    """A greedy flow from 0 to 20 s in a 60 s run: what was in flight at 20 s still arrives
    (and counts in its goodput), but its bound stays the link's payload rate over those
    20 s plus that flight, not the link over the whole run."""
    scenario = one_link(
        rate=RATE,
        delay=0.05,
        duration=60.0,
        stop_when_done=False,
        flows=[bulk("f", nbytes=None, stop=20.0, rcv_buf=65535)],
    )
    result = run(scenario)
    d = result.diagnosis["f"]
    achieved = result.flows["f"].goodput_bps
    flight = 65535 * 8 / 20.0  # at most one window arrives after the stop
    assert achieved <= d.bounds.link_bps <= PAYLOAD_CAPACITY + flight
    assert d.limit == "link_capacity"


def test_a_flow_still_in_slow_start_when_the_run_ends_is_limited_by_its_window():
    """100 Mbit/s, 100 ms each way, 1 s: from 10 segments slow start doubles every round
    trip of just over 200 ms, so the window is at most 10 * 2^5 segments (467 kB) when the
    run ends, under a fifth of the 2.4 MB the path holds, and nothing was lost. The link is
    not the limit: the window is, and the run was too short for it to grow."""
    scenario = one_link(
        rate=100e6,
        delay=0.1,
        duration=1.0,
        flows=[bulk(nbytes=None, rcv_buf=1 << 24, window_scaling=True, initial_cwnd=10)],
    )
    result = run(scenario)
    flow, d = result.flows["f"], result.diagnosis["f"]
    assert flow.retransmissions == 0 and not flow.completed
    assert flow.goodput_bps < 0.1 * d.bounds.link_bps
    assert flow.cwnd_max < d.bdp_bytes / 2
    assert d.limit == "congestion_window"
    # The run, not the network, needs the change: a longer duration, and no faster link.
    (remedy,) = d.remedies
    assert remedy.action == "lengthen_run" and remedy.cost_class == "run"
    (change,) = remedy.changes
    assert change.path == "duration" and change.value > scenario.duration
    assert "faster link" not in d.advice
