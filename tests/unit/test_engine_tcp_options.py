"""Scenario options of the TCP model that reference simulators set differently: Limited
Transmit as a switch, the SYN's option bytes, and the retransmission clock's tick."""

import math

import pytest
from engine_helpers import bulk, one_link, rtt, run, script_loss, series

from engine import Scenario
from engine.scenario import TcpSpec

pytestmark = pytest.mark.unit

MSS = 1460
RATE, DELAY = 1e6, 0.05


# --- Limited Transmit (RFC 3042) --------------------------------------------------------


@pytest.mark.parametrize(
    "variant,sack", [("newreno", False), ("reno", False), ("newreno", True), ("tahoe", False)]
)
def test_without_limited_transmit_a_three_segment_window_times_out(variant, sack):
    # Initial window 3, the first segment lost: only two duplicate ACKs come back, and
    # without Limited Transmit nothing new is sent to draw the third (RFC 3042 section 1).
    def flow(limited_transmit):
        return run(
            one_link(
                rate=RATE,
                delay=DELAY,
                loss=script_loss(0),
                flows=[
                    bulk(
                        nbytes=10 * MSS,
                        variant=variant,
                        sack=sack,
                        initial_cwnd=3,
                        limited_transmit=limited_transmit,
                    )
                ],
            )
        ).flows["f"]

    on, off = flow(True), flow(False)
    assert (on.timeouts, on.fast_retransmits) == (0, 1)
    assert (off.timeouts, off.fast_retransmits) == (1, 0)
    assert off.segments_sent == on.segments_sent  # the same data, later
    assert off.completion_time > on.completion_time + 0.5  # the 1 s RTO


# --- SYN options ------------------------------------------------------------------------


@pytest.mark.parametrize("options", [0, 12, 20, 40])
def test_syn_and_syn_ack_carry_the_option_bytes(options):
    result = run(
        one_link(
            rate=RATE, delay=DELAY, flows=[bulk(nbytes=MSS, handshake=True, syn_options=options)]
        )
    )
    base = run(
        one_link(rate=RATE, delay=DELAY, flows=[bulk(nbytes=MSS, handshake=True, syn_options=0)])
    )
    for direction in ("wan:h1>h2", "wan:h2>h1"):  # the SYN, then the SYN-ACK
        extra = result.links[direction].bytes - base.links[direction].bytes
        assert extra == options


def test_syn_options_are_whole_words():
    with pytest.raises(ValueError, match="syn_options"):
        TcpSpec(syn_options=10)
    with pytest.raises(ValueError, match="syn_options"):
        TcpSpec(syn_options=44)  # the TCP header holds at most 40 B of options


# --- the retransmission clock's tick -------------------------------------------------------

R = rtt(rate=RATE, delay=DELAY)  # 112.448 ms


def first_rto(tick):
    result = run(
        one_link(
            rate=RATE,
            delay=DELAY,
            flows=[bulk(nbytes=20 * MSS, min_rto=0.01, timer_granularity=tick)],
        )
    )
    ts, vs = series(result, "flow.f.rto")
    return next(v for v in vs if v != 1.0)  # the first after the initial RTO of 1 s


def test_continuous_clock_rto_after_the_first_sample():
    # RFC 6298 2.2: SRTT = R, RTTVAR = R / 2, RTO = R + max(G, 4 RTTVAR) = 3 R.
    assert first_rto(None) == pytest.approx(3 * R, rel=1e-9)


@pytest.mark.parametrize("tick", [0.01, 0.1, 0.5])
def test_ticking_clock_counts_whole_ticks(tick):
    sample = max(round(R / tick), 1) * tick  # 110 ms, 100 ms, 500 ms (at least a tick)
    rto = sample + max(tick, 2 * sample)
    assert first_rto(tick) == pytest.approx(math.ceil(rto / tick - 1e-9) * tick, rel=1e-9)


def test_a_tail_loss_is_resent_a_whole_number_of_ticks_after_the_last_send():
    tick = 0.1
    result = run(
        one_link(
            rate=RATE,
            delay=DELAY,
            loss=script_loss(19),
            flows=[bulk(nbytes=20 * MSS, min_rto=0.2, timer_granularity=tick)],
        )
    )
    flow = result.flows["f"]
    assert flow.timeouts == 1
    ts, vs = series(result, "flow.f.rto")
    assert all(abs(v / tick - round(v / tick)) < 1e-9 for v in vs[1:])


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field,value",
    [
        ("recovery", "fast"),
        ("prr_bound", "ssr"),
        ("slow_start", "hystart+"),
        ("vegas_loss", "bsd"),
        ("syn_options", 6),
        ("timer_granularity", "0s"),
        ("limited_transmit", "sometimes"),
    ],
)
def test_a_bad_value_names_its_field_path(field, value):
    flow = bulk(**{field: value})
    with pytest.raises(ValueError) as info:
        Scenario.model_validate(
            {
                "name": "x",
                "nodes": [{"id": "h1", "kind": "host"}, {"id": "h2", "kind": "host"}],
                "links": [{"id": "l", "a": "h1", "b": "h2", "rate": 1e6}],
                "flows": [flow],
            }
        )
    locs = [e["loc"] for e in info.value.errors()]
    assert ("flows", 0, "tcp", field) in locs, locs


def test_an_old_scenario_without_the_new_fields_still_validates():
    tcp = TcpSpec.model_validate({"variant": "vegas", "delayed_ack": {"enabled": True}})
    assert (tcp.recovery, tcp.slow_start, tcp.vegas_loss, tcp.delayed_ack.quickack) == (
        "prr",
        None,
        "linux",
        "linux",
    )
