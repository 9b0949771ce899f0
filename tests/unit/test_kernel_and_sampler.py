"""The scale-minded scheduling and sampling pieces keep results as they were: a `Line` of
packets runs its deliveries in the order one `Call` each would, and the block-wise
`RateSampler` records the same points as sampling each series point by point."""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
import pytest
from engine_helpers import built, bulk, dumbbell, one_link, tcp_flows
from hypothesis import given, settings
from hypothesis import strategies as st
from simpy.events import Event

from engine.kernel import Call, Kernel, Later, Line, Periodic
from engine.packet import Kind, Packet
from engine.sampler import RateSampler
from engine.trace import Trace

pytestmark = pytest.mark.unit


#: A real flow for the packets (whose owner is typed): the line never reads it.
_FLOW = tcp_flows(built(one_link()))


class Sink:
    def __init__(self, log: list, name: str) -> None:
        self.log, self.name = log, name

    def accept(self, pkt: Packet) -> None:
        self.log.append((self.name, pkt.seq))


def run_schedule(plan: list[tuple[int, int, float]], lines: bool) -> tuple[list, int]:
    """`plan`: (when to schedule, which link, delay). Each link's deliveries are sent with
    non-decreasing arrival times, as a link's are; with `lines` they use a Line per link,
    otherwise a Call each. Returns the delivery order and the number of events."""
    env = Kernel()
    flow = _FLOW[0]
    log: list = []
    sinks = [Sink(log, f"link{k}") for k in range(3)]
    queues = [Line(env) for _ in range(3)]
    last = [0.0, 0.0, 0.0]

    def send(item) -> None:
        index, link, delay = item
        arrival = max(env.now + delay, last[link])
        last[link] = arrival
        pkt = Packet(flow, Kind.DATA, 40, (sinks[link],), env.now)
        pkt.seq = index
        if lines:
            queues[link].add(arrival - env.now, pkt)
        else:
            Call(env, arrival - env.now, sinks[link].accept, pkt)

    for index, (at, link, delay) in enumerate(plan):
        Call(env, at, send, (index, link, delay))
    env.run()
    return log, env.next_eid()


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


def run_mixed(
    plan: list[tuple[float, bool, int]],
    later: bool,
    slices: str | None = None,
    periodic: bool = False,
) -> tuple[list, int]:
    """`plan`: (delay, through `later`, how many more to schedule when it fires). Each event
    schedules its followers from inside its callback, as timers re-arm and flows start
    others; with `later` the marked ones go through the kernel's second heap. `slices`
    ("run" or "advance"): run to 60 s in half-second slices with SimPy's `run(until)` or
    the kernel's `advance`, beside a SimPy process ticking every 0.75 s (as the sampler
    does; with `periodic`, the kernel's `Periodic` instead, as the sampler's beat is now).
    Returns the firing order and the number of events."""
    env = Kernel()
    log: list = []
    pending = list(range(len(plan)))

    def fire(index: int) -> None:
        log.append((env.now, index))
        for _ in range(plan[index][2]):
            if pending:
                schedule(pending.pop())

    def schedule(index: int) -> None:
        delay, far, _ = plan[index]
        if later and far:
            Later(env, delay, fire, index)
        else:
            Call(env, delay, fire, index)

    for _ in range(3):
        if pending:
            schedule(pending.pop())
    if slices is None:
        env.run()
        return log, env.next_eid()

    def ticker() -> Generator[Event, None, None]:
        while True:
            yield env.timeout(0.75)
            log.append((env.now, "tick"))

    if periodic:
        Periodic(env, 0.75, lambda now: log.append((now, "tick")))
    else:
        env.process(ticker())
    for k in range(1, 121):  # slice ends at 1.0, 2.0 ... fall on the plan's times
        if slices == "run":
            env.run(until=k * 0.5)
        else:
            env.advance(k * 0.5)
    return log, env.next_eid()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 1.0, 2.0, 3.5, 50.0]), st.booleans(), st.integers(0, 3)),
        max_size=60,
    )
)
def test_later_events_fire_in_the_order_and_number_of_one_heap(plan) -> None:
    # Equal times are common, so the order among them rests on the event ids `Later` keeps.
    assert run_mixed(plan, later=True) == run_mixed(plan, later=False)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 1.0, 2.0, 3.5, 50.0]), st.booleans(), st.integers(0, 3)),
        max_size=60,
    )
)
def test_advance_runs_what_simpys_run_until_runs_and_takes_the_same_ids(plan) -> None:
    # Events due exactly at a slice's end run in the next slice, as SimPy's URGENT `until`
    # event orders them; the count of ids (a Result's `events`) is the same.
    assert run_mixed(plan, True, "advance") == run_mixed(plan, True, "run")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.75, 1.0, 2.0, 3.5]), st.booleans(), st.integers(0, 3)),
        max_size=60,
    ),
    st.sampled_from(["run", "advance"]),
)
def test_a_periodic_event_beats_as_a_simpy_process_and_takes_the_same_ids(plan, slices) -> None:
    # The sampler's beat: at the same times, in the same order among equal times, with the
    # same count of ids (a Result's `events`), under SimPy's run(until) and under advance.
    assert run_mixed(plan, True, slices, periodic=True) == run_mixed(plan, True, "run")


def test_events_far_ahead_stay_out_of_simpys_heap() -> None:
    # A thousand flows' timers pending at once: SimPy's heap holds only the earliest.
    env = Kernel()
    fired: list[int] = []
    for i in range(1000):
        Later(env, 10.0 + i % 7, fired.append, i)
    assert len(env._queue) == 1 and len(env.later) == 1000
    env.run()
    assert len(fired) == 1000
    assert fired == sorted(range(1000), key=lambda i: (i % 7, i))


#: Two flows and their ports, built and never run: the sampler reads them as they are set.
_SAMPLED = built(dumbbell(flows=[bulk("a"), bulk("b")]))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 300), st.integers(0, 3), st.integers(2, 40), st.integers(0, 2**31))
def test_block_sampling_equals_point_by_point_sampling(beats, n_ports, cap, seed) -> None:
    rng = np.random.default_rng(seed)
    interval = 0.1
    net = _SAMPLED
    flows = tcp_flows(net)
    ports = list(net.ports.values())[:n_ports]
    for f in flows:
        f.delivered_bytes = 0
    for p in ports:
        p.busy_total = p.busy_until = 0.0
        assert p.probe is not None
        p.probe.utilization = Trace("ratio", cap, True)
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
