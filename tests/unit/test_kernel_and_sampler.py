"""The scale-minded scheduling and sampling pieces keep results as they were: a `Line` of
deliveries runs its events in the order one `Call` each would, and the block-wise
`RateSampler` records the same points as sampling each series point by point."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kernel import Call, Line
from engine.recorder import RateSampler, Trace

pytestmark = pytest.mark.unit


class Sink:
    def __init__(self, log: list, name: str) -> None:
        self.log, self.name = log, name

    def accept(self, value) -> None:
        self.log.append((self.name, value))


def run_schedule(plan: list[tuple[int, int, float]], lines: bool) -> tuple[list, int]:
    """`plan`: (when to schedule, which link, delay). Each link's deliveries are sent with
    non-decreasing arrival times, as a link's are; with `lines` they use a Line per link,
    otherwise a Call each. Returns the delivery order and the number of events."""
    env = simpy.Environment()
    log: list = []
    sinks = [Sink(log, f"link{k}") for k in range(3)]
    queues = [Line(env) for _ in range(3)]
    last = [0.0, 0.0, 0.0]

    def send(item) -> None:
        index, link, delay = item
        arrival = max(env.now + delay, last[link])
        last[link] = arrival
        if lines:
            queues[link].add(arrival - env.now, sinks[link], index)
        else:
            Call(env, arrival - env.now, sinks[link].accept, index)

    for index, (at, link, delay) in enumerate(plan):
        Call(env, at, send, (index, link, delay))
    env.run()
    return log, next(env._eid)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 2), st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5])),
        max_size=40,
    )
)
def test_a_line_delivers_in_the_order_and_number_of_one_call_each(plan) -> None:
    # Small integer times: many deliveries fall due at the same instant, so the order is
    # decided by the events' ids, which a Line must keep.
    assert run_schedule(plan, lines=True) == run_schedule(plan, lines=False)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 300), st.integers(0, 3), st.integers(2, 40), st.integers(0, 2**31))
def test_block_sampling_equals_point_by_point_sampling(beats, n_ports, cap, seed) -> None:
    rng = np.random.default_rng(seed)
    interval = 0.1
    flows = [SimpleNamespace(delivered_bytes=0) for _ in range(2)]
    ports = [
        SimpleNamespace(
            busy_total=0.0,
            busy_until=0.0,
            probe=SimpleNamespace(utilization=Trace("ratio", cap, True)),
        )
        for _ in range(n_ports)
    ]
    goodput = [Trace("bit/s", cap, True) for _ in flows]
    sampler = RateSampler(interval, flows, goodput, ports)
    ref_goodput = [Trace("bit/s", cap, True) for _ in flows]
    ref_util = [Trace("ratio", cap, True) for _ in ports]
    last_bytes, last_busy = [0] * len(flows), [0.0] * len(ports)
    now = 0.0
    for _ in range(beats):
        now += interval
        for f in flows:
            f.delivered_bytes += int(rng.integers(0, 10**6))
        for p in ports:
            p.busy_total += float(rng.random()) * interval
            p.busy_until = now + float(rng.random()) * interval - interval / 2
        sampler.beat(now)
        for i, f in enumerate(flows):  # what the sampler did one point at a time
            ref_goodput[i].sample(now, (f.delivered_bytes - last_bytes[i]) * 8 / interval)
            last_bytes[i] = f.delivered_bytes
        for i, p in enumerate(ports):
            busy = max(0.0, p.busy_total - max(0.0, p.busy_until - now))
            ref_util[i].sample(now, (busy - last_busy[i]) / interval)
            last_busy[i] = busy
    sampler.flush()
    for got, want in zip(
        goodput + [p.probe.utilization for p in ports], ref_goodput + ref_util, strict=True
    ):
        assert got.series() == want.series()
