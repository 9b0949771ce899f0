"""RED (Floyd & Jacobson 1993) as ns-2's queue/red.cc and ns-3's RedQueueDisc run it by
default: the average is updated on every arrival from the packets waiting (the one being
serialised excluded), decayed over idle time as if packets of 500 B had left; early drops
need avg >= min_th and more than one packet waiting; with ns's `wait` option (default
on) the drop probability is p_b / (2 - count * p_b), zero below count = 1 / p_b, so
drops come every 1/p_b to 2/p_b arrivals; above max_th (2 max_th when gentle) every
arrival is dropped.

The discipline is driven directly, with a stand-in for the port it guards.
"""

import functools
import random

import pytest
from engine_helpers import built, bulk, dumbbell, one_link, run, segment, tcp_flows

from engine.net import Egress, Red
from engine.packet import Packet
from engine.scenario import QueueSpec
from engine.simulation import Network

pytestmark = pytest.mark.unit

RATE = 1e6
WIRE = 1000


def red(**spec) -> Red:
    fields = {
        "discipline": "red",
        "limit_packets": 1000,
        "min_th": 5,
        "max_th": 15,
        "max_p": 0.1,
        "weight": 0.002,
    }
    fields.update(spec)
    return Red(QueueSpec.model_validate(fields), random.Random(7))


class Always:
    """A random stream that always returns `value`."""

    def __init__(self, value: float):
        self.value = value

    def random(self) -> float:
        return self.value


@functools.cache
def _network() -> Network:
    return built(one_link(rate=RATE))


def busy_port(now: float = 10.0, busy_until: float | None = None) -> Egress:
    """The 1 Mbit/s link's port, serialising until `busy_until` (a second past `now`)."""
    port = _network().ports[("wan", "h1", "h2")]
    port.busy_until = now + 1.0 if busy_until is None else busy_until
    port.queued_bytes = 0
    return port


def arriving() -> Packet:
    return segment(tcp_flows(_network())[0])


def arrive(q: Red, waiting: int, now: float = 10.0, port: Egress | None = None) -> bool:
    return q.admit(port or busy_port(now), waiting, WIRE, now, arriving())


def test_the_average_is_an_ewma_of_the_waiting_packets():
    q = red(weight=0.01)
    for _ in range(100):
        arrive(q, 3)
    assert q.avg == pytest.approx(3 * (1 - 0.99**100), rel=1e-12)


def test_idle_time_decays_the_average_as_if_small_packets_had_left():
    q = red(weight=0.02)
    q.avg = 8.0
    arrive(q, 0, now=1.05, port=busy_port(busy_until=1.0))
    m = int(0.05 * RATE / (8 * 500))  # 12 packets of 500 B in 50 ms at 1 Mbit/s
    assert q.avg == pytest.approx(8.0 * 0.98 ** (m + 1), rel=1e-12)


@pytest.mark.parametrize("waiting", [0, 1])
def test_no_early_drop_while_at_most_one_packet_waits(waiting):
    q = red(weight=1e-12)
    q.random = Always(0.0).random
    q.avg = 14.0
    assert all(arrive(q, waiting) for _ in range(1000))


def test_the_first_arrival_above_min_th_is_admitted_and_starts_the_count():
    q = red(weight=1e-12)
    q.random = Always(0.0).random
    q.avg = 10.0
    assert arrive(q, 10)
    assert q.count == 1


@pytest.mark.parametrize(
    ("gentle", "avg", "dropped"),
    [(False, 15, True), (True, 15, False), (True, 29, False), (True, 30, True)],
)
def test_forced_drops_above_max_th_or_twice_max_th_when_gentle(gentle, avg, dropped):
    # The arrival that finds avg above min_th first is never dropped early, so only a
    # forced drop can refuse it.
    q = red(weight=0.5, gentle=gentle)
    q.avg = float(avg)
    assert (not arrive(q, avg)) == dropped


def drop_gaps(q: Red, arrivals: int) -> list[int]:
    gaps, since = [], 0
    for _ in range(arrivals):
        since += 1
        if not arrive(q, 10):
            gaps.append(since)
            since = 0
    return gaps[1:]  # the first gap starts at the min_th crossing


def expected_gap(p_b: float) -> float:
    """Mean arrivals between early drops with ns's `wait`: P(drop at count k) =
    p_k * prod_{j<k} (1 - p_j), p_k = 0 if k p_b < 1, p_b / (2 - k p_b) if < 2, else 1."""
    mean, survive, k = 0.0, 1.0, 0
    while survive > 1e-15:
        k += 1
        x = k * p_b
        p = 0.0 if x < 1 else (p_b / (2 - x) if x < 2 else 1.0)
        mean += k * survive * p
        survive *= 1 - p
    return mean


@pytest.mark.parametrize(("avg", "gentle"), [(10.0, False), (7.5, False), (20.0, True)])
def test_early_drops_come_every_one_to_two_over_p_b_arrivals(avg, gentle):
    q = red(weight=1e-12, gentle=gentle)
    q.avg = avg
    below_max = 0.1 * (avg - 5) / (15 - 5)
    p_b = below_max if avg < 15 else 0.1 + (1 - 0.1) * (avg - 15) / 15
    gaps = drop_gaps(q, 40_000)
    assert min(gaps) >= int(1 / p_b) and max(gaps) <= int(2 / p_b) + 1
    mean = sum(gaps) / len(gaps)
    assert mean == pytest.approx(expected_gap(p_b), rel=0.03)


def test_a_tcp_flow_through_red_keeps_the_queue_near_the_thresholds_without_overflow():
    """A long-lived flow whose window far exceeds the 1 Mbit/s bottleneck's BDP: drop-tail
    would fill all 100 places; RED holds the time-average queue between its thresholds
    and never lets it reach the limit."""
    flow = bulk(nbytes=None, variant="newreno", rcv_buf=1_000_000, window_scaling=True)
    sc = dumbbell(rate=1e6, delay=0.02, flows=[flow], duration=200.0)
    data = sc.model_dump(mode="json")
    data["links"][1]["queue"] = {
        "discipline": "red",
        "limit_packets": 100,
        "min_th": 5,
        "max_th": 15,
        "max_p": 0.1,
        "weight": 0.002,
    }
    result = run(type(sc).model_validate(data))
    port = result.links["wan:r1>r2"]
    assert port.drops > 0
    assert port.queue_max < 100
    assert 3 <= port.queue_mean <= 15
    assert port.utilization > 0.9
