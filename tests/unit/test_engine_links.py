"""Egress queues and loss models: DropTail limits in packets and bytes, overload drops,
and the loss rates of the bernoulli, ber, gilbert_elliott and script models."""

import math

import pytest
from engine_helpers import (
    IP_UDP,
    bulk,
    cbr,
    dumbbell,
    loss_testbed,
    one_link,
    run,
    ser,
)

from engine.net import wire_bytes

pytestmark = pytest.mark.unit

MSS = 1460
RATE, DELAY, SIZE = 1e6, 0.05, 512
WIRE = wire_bytes("ppp", SIZE + IP_UDP)  # 548 bytes


def cbr_run(
    *,
    n: int,
    rate: float,
    limit_packets: int = 1000,
    loss: dict | None = None,
    queue: dict | None = None,
    seed: int = 1,
):
    """`n` datagrams of SIZE bytes at `rate`; the run lasts until the last one lands."""
    stop = (n - 0.5) * SIZE * 8 / rate  # half an interval of margin against rounding
    sc = one_link(
        rate=RATE,
        delay=DELAY,
        limit_packets=limit_packets,
        loss=loss,
        seed=seed,
        flows=[cbr(rate=rate, packet_size=SIZE, stop=stop)],
        duration=stop + 5.0,
        stop_when_done=False,
    )
    if queue is not None:
        d = sc.model_dump(mode="json")
        d["links"][0]["queue"] = queue
        sc = type(sc).model_validate(d)
    result = run(sc)
    udp = result.flows["u"]
    assert udp.packets_sent == n
    return result, udp, result.links["wan:h1>h2"]


# --- DropTail --------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 5, 20])
def test_droptail_holds_at_most_its_limit_and_drops_the_overload(limit):
    offered = 2 * RATE  # twice what the link carries
    result, udp, port = cbr_run(n=4000, rate=offered, limit_packets=limit)
    assert port.queue_max == limit  # filled to the limit, never beyond
    assert port.drops == udp.packets_dropped > 0
    assert udp.packets_received + udp.packets_dropped == udp.packets_sent
    # Steady overload: the link serves RATE / (8 WIRE) packets/s of the offered load.
    served = RATE / (8 * WIRE)
    arriving = offered / (8 * SIZE)
    assert udp.plr == pytest.approx(1 - served / arriving, abs=0.01)
    # A packet waits behind at most `limit` others and the one being serialised.
    one = ser(WIRE, RATE)
    assert udp.delay_p99 <= DELAY + (limit + 1) * one + 1e-9
    assert udp.delay_p50 >= DELAY + limit * one - one - 1e-9


def test_droptail_by_bytes_holds_at_most_the_packets_that_fit():
    limit_bytes = 5000
    _, udp, port = cbr_run(
        n=2000, rate=2 * RATE, queue={"discipline": "droptail", "limit_bytes": limit_bytes}
    )
    assert port.queue_max == limit_bytes // WIRE  # 9 packets of 548 bytes
    assert udp.packets_dropped > 0


def test_no_drops_below_capacity():
    _, udp, port = cbr_run(n=2000, rate=0.9 * RATE * SIZE / WIRE, limit_packets=2)
    assert udp.packets_dropped == 0
    assert port.drops == 0
    assert port.queue_max == 0  # arrivals spaced wider than a serialisation


def test_tcp_overflowing_the_bottleneck_queue_loses_only_what_the_queue_drops():
    sc = dumbbell(
        rate=1e6,
        delay=0.02,
        limit_packets=8,
        flows=[bulk(nbytes=500 * MSS, variant="newreno", rcv_buf=64 * MSS, window_scaling=True)],
    )
    result = run(sc)
    flow, wan = result.flows["f"], result.links["wan:r1>r2"]
    assert flow.completed
    assert wan.queue_max <= 8
    assert wan.drops > 0
    assert flow.packets_dropped == wan.drops
    assert flow.retransmissions >= wan.drops


# --- loss models -----------------------------------------------------------------------


def within(observed: float, p: float, n: int, sigmas: float = 4.0, inflation: float = 1.0):
    """|observed - p| within `sigmas` binomial standard deviations (times `inflation`)."""
    tolerance = sigmas * math.sqrt(p * (1 - p) / n * inflation)
    return abs(observed - p) <= tolerance


@pytest.mark.parametrize("p", [0.01, 0.1, 0.3])
def test_bernoulli_loss_rate_on_udp(p):
    n = 20_000
    _, udp, port = cbr_run(
        n=n, rate=0.4 * RATE, loss={"model": "bernoulli", "rate": p, "direction": "a_to_b"}
    )
    assert within(udp.plr, p, n), udp.plr
    assert port.error_drops == udp.packets_dropped
    assert port.drops == 0


def test_bernoulli_loss_on_tcp_data_only_in_its_direction():
    p = 0.02
    sc = one_link(
        rate=RATE,
        delay=0.02,
        loss={"model": "bernoulli", "rate": p, "direction": "a_to_b"},
        flows=[bulk(nbytes=3000 * MSS, variant="newreno")],
    )
    result = run(sc)
    flow = result.flows["f"]
    assert flow.completed
    assert within(flow.plr, p, flow.segments_sent), flow.plr
    assert result.links["wan:h2>h1"].error_drops == 0  # ACKs cross the clean direction


def test_bit_error_rate_loses_frames_by_their_length():
    ber = 1e-5
    n = 20_000
    p = 1 - (1 - ber) ** (8 * WIRE)  # ~4.3% for a 548-byte frame
    _, udp, _ = cbr_run(
        n=n, rate=0.4 * RATE, loss={"model": "ber", "ber": ber, "direction": "a_to_b"}
    )
    assert within(udp.plr, p, n), (udp.plr, p)


def test_bit_errors_spare_the_ethernet_inter_frame_gap():
    """The 12-byte inter-frame gap is idle line, not bits: a 46-byte datagram occupies 84
    bytes of 10BaseT time but exposes 72 bytes (preamble to FCS) to bit errors."""
    ber, n, size = 1e-3, 20_000, 46 - IP_UDP
    stop = (n - 0.5) * size * 8 / 100e3
    sc = one_link(
        rate=10e6,
        delay=0.001,
        encap="ethernet",
        loss={"model": "ber", "ber": ber, "direction": "a_to_b"},
        flows=[cbr(rate=100e3, packet_size=size, stop=stop)],
        duration=stop + 1.0,
        stop_when_done=False,
    )
    udp = run(sc).flows["u"]
    assert udp.packets_sent == n
    assert wire_bytes("ethernet", 46) == 84
    assert within(udp.plr, 1 - (1 - ber) ** (8 * 72), n), udp.plr


def test_gilbert_elliott_loses_the_stationary_share_of_the_bad_state():
    p_gb, p_bg = 0.01, 0.1
    n = 40_000
    p = p_gb / (p_gb + p_bg)  # loss_bad 1, loss_good 0: the time spent in "bad"
    _, udp, _ = cbr_run(
        n=n,
        rate=0.4 * RATE,
        loss={"model": "gilbert_elliott", "p_gb": p_gb, "p_bg": p_bg, "direction": "a_to_b"},
    )
    # Bursts of mean length 1/p_bg inflate the variance by about (2 - p_gb - p_bg)/p_bg.
    assert within(udp.plr, p, n, inflation=(2 - p_gb - p_bg) / p_bg), (udp.plr, p)


def test_script_drops_exactly_the_listed_data_packets():
    _, udp, port = cbr_run(
        n=50, rate=0.4 * RATE, loss={"model": "script", "drop": [0, 7, 49], "direction": "a_to_b"}
    )
    assert udp.packets_dropped == 3
    assert udp.packets_received == 47
    assert port.error_drops == 3


def test_script_counts_only_data_packets_of_its_direction():
    result = run(loss_testbed("reno", 60))
    assert result.links["wan:h1>h2"].error_drops == 1
    assert result.links["wan:h2>h1"].error_drops == 0
    assert result.flows["f"].packets_dropped == 1
