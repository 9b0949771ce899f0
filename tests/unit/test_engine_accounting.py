"""Where the time went (engine/accounting.py): every flow's states add up to its duration,
each state's seconds are what physics and TCP theory give, the timeout state is exactly the
waits the retransmission timer itself logged, and the round trip splits into its hops.

Tolerances: sums and re-derived sums are float additions of the same seconds in another
order, so they agree to relative 1e-9 (ROUNDING); shares are checked against bounds
derived here from the presets' own fields, not from the engine's outputs.
"""

from __future__ import annotations

import functools
import math

import pytest
from engine_helpers import bulk, one_link, run, ser
from pydantic import ValidationError

from engine import Scenario, kernel, simulate
from engine.accounting import FIELDS, FlowClock, State, unbalanced
from engine.native import engine_build
from engine.net import wire_bytes
from engine.presets import list_presets, load_preset
from engine.result import FlowTime, Result, TcpFlowSummary
from engine.tcp.sender import TcpSender

pytestmark = pytest.mark.unit

ROUNDING = 1e-9
SCENARIOS = [p.name for p in list_presets() if p.kind == "scenario"]
T1 = 1.544e6
MSS = 1460


@functools.cache
def preset(name: str) -> Result:
    return simulate(load_preset(name))


def states_sum(t: FlowTime) -> float:
    return math.fsum(getattr(t, f) for f in FIELDS)


def check_books(result: Result) -> None:
    """Each TCP flow's states add up to its duration; the duration is its completion time
    when it completed; the state series uses the states' numbers only."""
    for fid, f in result.flows.items():
        if not isinstance(f, TcpFlowSummary):
            continue
        t = f.time
        assert t is not None, fid
        assert unbalanced(t) is None, (fid, unbalanced(t), t)
        assert states_sum(t) == pytest.approx(t.duration, rel=ROUNDING, abs=1e-12), (fid, t)
        if f.completed:
            assert t.duration == pytest.approx(f.completion_time, rel=ROUNDING), fid
        series = result.series.get(f"flow.{fid}.state")
        if t.duration > 0:
            assert series is not None and set(series.v) <= {float(s) for s in State}, fid


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_preset_accounts_for_every_second(name: str) -> None:
    check_books(preset(name))


def _riverbed_path() -> tuple[float, float]:
    """The Riverbed presets' base round trip and the T1's payload rate, from riverbed.md:
    10BaseT Ethernet (38 B framing, 10 us), two T1 Frame Relay links (8 B, 41.75 ms)."""
    links = [(10e6, 10e-6, "ethernet"), (T1, 0.04175, "frame_relay")] * 2
    data = sum(d + ser(wire_bytes(e, MSS + 40), r) for r, d, e in links)
    ack = sum(d + ser(wire_bytes(e, 40), r) for r, d, e in links)
    return data + ack, T1 * MSS / wire_bytes("frame_relay", MSS + 40)


def test_an_8k_window_on_t1_leaves_the_link_idle_as_w_over_rtt_says() -> None:
    """riverbed-t1-8k: a window of W = 8,760 B (6 segments) per round trip R keeps the T1
    busy for W / C of each round trip, C its payload rate, and the sender waits on the
    receive window for the rest: share >= 1 - W*8 / (R * C), with R the base round trip
    (queues only lengthen it). Busy is exactly the T1's transmission of the 25 MB: 17,123
    full frames and the 420 B last segment's."""
    r = preset("riverbed-t1-8k")
    t = r.flows["backup"].time
    assert t is not None
    rtt, payload = _riverbed_path()
    theory = 1 - 8760 * 8 / (rtt * payload)  # 0.748
    assert t.receive_window / t.duration >= theory
    full, last = divmod(25_000_000, MSS)
    frames = full * wire_bytes("frame_relay", MSS + 40) + wire_bytes("frame_relay", last + 40)
    assert t.busy == pytest.approx(ser(frames, T1), rel=ROUNDING)
    assert r.diagnosis["backup"].limit == "receive_window"
    assert r.diagnosis["backup"].limit_time == t.receive_window


def test_a_64k_window_on_t1_keeps_the_link_busy() -> None:
    """riverbed-t1-64k: 65,535 B exceed the path's 34.7 kB bandwidth-delay product, so after
    the handshake and slow start (about 8 round trips of 0.19 s) the T1 never idles."""
    r = preset("riverbed-t1-64k")
    t = r.flows["backup"].time
    assert t is not None
    assert t.busy >= 0.9 * t.duration
    assert t.busy + t.handshake + t.slow_start + t.receive_window == pytest.approx(
        t.duration, rel=ROUNDING
    )
    assert t.handshake + t.slow_start <= 8 * _riverbed_path()[0]
    assert r.diagnosis["backup"].limit == "link_capacity"


# Calls between compiled modules do not look attributes up, so a patched method is never
# called there: the timer's own log is kept in pure Python (make test-pure runs it).
pure_only = pytest.mark.skipif(
    engine_build() == "compiled", reason="patches the timer: pure Python only (make test-pure)"
)


class TimerLog:
    """The retransmission timers' own log: each arming (time, delay) and, for every expiry
    the sender acts on (its `timeouts` count grows), the wait since the last arming."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed: dict[int, tuple[float, float]] = {}
        self.waits: list[float] = []
        self.delays: list[float] = []
        start, on_timeout = kernel.Timer.start, TcpSender.on_timeout

        def logged_start(timer: kernel.Timer, delay: float) -> None:
            self.armed[id(timer)] = (timer.env.now, delay)
            start(timer, delay)

        def logged_timeout(snd: TcpSender) -> None:
            before = snd.timeouts
            at, delay = self.armed[id(snd.timer)]
            on_timeout(snd)
            if snd.timeouts > before:
                self.waits.append(snd.env.now - at)
                self.delays.append(delay)

        monkeypatch.setattr(kernel.Timer, "start", logged_start)
        monkeypatch.setattr(TcpSender, "on_timeout", logged_timeout)


@pure_only
def test_the_timeout_state_is_the_waits_the_timer_took(monkeypatch: pytest.MonkeyPatch) -> None:
    """riverbed-drops-none (Reno without fast retransmit: every loss waits for the RTO):
    the seconds booked to `timeout` are the sum of the timer's own waits, each of them the
    RTO it was armed with."""
    log = TimerLog(monkeypatch)
    r = simulate(load_preset("riverbed-drops-none"))
    f = r.flows["backup"]
    assert f.time is not None
    assert len(log.waits) == f.timeouts > 100
    assert log.waits == pytest.approx(log.delays, rel=ROUNDING)
    assert f.time.timeout == pytest.approx(math.fsum(log.waits), rel=ROUNDING)
    check_books(r)


@pure_only
def test_a_path_slower_than_the_timer_is_the_link_not_losses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 300 bit/s link: the SYN alone (48 B with PPP framing) takes 1.28 s to send, past
    the 1 s initial RTO, and each 1,460 B segment 28 s. The timer expires on packets that
    are only queued: the waits are booked to `timeout` (the SYN's too) exactly as the
    timer took them, nothing is lost, and the diagnosis names the link, not losses."""
    log = TimerLog(monkeypatch)
    flow = bulk(nbytes=3 * MSS, handshake=True)
    r = run(one_link(rate=300.0, delay=0.01, flows=[flow], duration=300.0))
    f = r.flows["f"]
    assert f.time is not None
    assert f.packets_dropped == 0 and f.timeouts >= 2
    assert f.time.timeout == pytest.approx(math.fsum(log.waits), rel=ROUNDING)
    assert log.waits[0] == pytest.approx(1.0)  # the first SYN's wait: the initial RTO
    check_books(r)
    assert r.diagnosis["f"].limit == "link_capacity"


def test_the_round_trip_splits_into_its_hops() -> None:
    """A fixed window of 10 segments (variant none, no delayed ACK) over one 1 Mbit/s PPP
    link of 10 ms: propagation 2 x 10 ms and serialisation of a 1,508 B frame and a 48 B
    ACK are exact; the window holds 10 frames at the link's 12.064 ms each, so in steady
    state every segment waits 10 x 12.064 ms less the base round trip behind the others
    (slow start is absent: the first window leaves at once)."""
    rate, delay = 1e6, 0.01
    tx_data, tx_ack = ser(MSS + 48, rate), ser(48, rate)
    flow = bulk(nbytes=2000 * MSS, variant="none", rcv_buf=10 * MSS)
    r = run(one_link(rate=rate, delay=delay, flows=[flow]))
    f = r.flows["f"]
    split = f.rtt_split
    assert split is not None
    assert split.propagation == pytest.approx(2 * delay, rel=ROUNDING)
    assert split.serialisation == pytest.approx(tx_data + tx_ack, rel=ROUNDING)
    (data, ack) = split.hops
    assert (data.hop, data.direction, ack.hop, ack.direction) == (
        "wan:h1>h2",
        "data",
        "wan:h2>h1",
        "ack",
    )
    assert data.packets == f.segments_sent and ack.packets == f.segments_sent
    base = 2 * delay + tx_data + tx_ack
    assert data.queueing == pytest.approx(10 * tx_data - base, rel=0.01)
    assert ack.queueing == 0.0
    assert split.propagation + split.serialisation + split.queueing == pytest.approx(
        f.rtt_mean, rel=0.01
    )


def test_a_flow_that_never_starts_has_no_time_and_no_limit() -> None:
    """An unlimited flow due at 50 s in a run that stops when the finite transfer is done
    (about 2 s): it never starts, has zero seconds in every state, and the diagnosis says
    it did not finish rather than naming a limit it never met."""
    flows = [bulk("early", nbytes=20 * MSS), bulk("late", nbytes=None, start=50.0)]
    r = run(one_link(flows=flows, duration=100.0, stop_when_done=True))
    assert r.sim_time < 50
    late = r.flows["late"]
    assert late.time is not None and late.time.duration == 0 and states_sum(late.time) == 0
    assert r.diagnosis["late"].limit == "incomplete"
    check_books(r)


def test_a_stopped_flow_ends_its_books_at_stop() -> None:
    """`stop` at 3 s of an unlimited flow started at 1 s: a 2 s life."""
    flow = bulk(nbytes=None, start=1.0, stop=3.0, rcv_buf=8 * MSS)
    r = run(one_link(flows=[flow], duration=10.0))
    t = r.flows["f"].time
    assert t is not None and t.duration == pytest.approx(2.0, rel=ROUNDING)
    check_books(r)


class Line:
    """A pipe's two counters, as a port keeps them (busy_total, busy_until), set by hand."""

    def __init__(self) -> None:
        self.busy_total = 0.0
        self.busy_until = 0.0

    def send(self, start: float, seconds: float) -> None:
        self.busy_total += seconds
        self.busy_until = start + seconds


def test_a_timeout_rebooks_its_wait_from_the_arming_whatever_came_after() -> None:
    """The books by hand: slow start from 0 s, the pipe busy 0.5 s of it; the timer armed
    at 1 s; congestion avoidance from 2 s, recovery from 3 s (states that changed after
    the arming, as a loss-probe or reordering timer could make them); the timer expires
    at 4 s. The timeout takes [1, 4] whole; what was booked from 1 s on is undone; before
    it, slow start keeps its 1 s less the pipe's 0.5 s."""
    line = Line()
    clock = FlowClock(line, windowed=True)
    clock.start(0.0, handshake=False)
    clock.change(State.SLOW_START, 0.0)
    line.send(0.2, 0.5)
    clock.armed_at, clock.armed_busy = 1.0, 0.5  # what the attempt after the arming notes
    line.send(1.5, 0.25)
    clock.change(State.CONGESTION_AVOIDANCE, 2.0)
    clock.change(State.RECOVERY, 3.0)
    clock.timeout(4.0, 1.0)
    clock.change(State.RECOVERY, 4.0)
    clock.finish(5.0)
    t = clock.record()
    assert (t.slow_start, t.busy, t.timeout, t.recovery) == (0.5, 0.5, 3.0, 1.0)
    assert t.congestion_avoidance == 0 and states_sum(t) == t.duration == 5.0
    assert list(clock.trace.v) == [State.SLOW_START, State.TIMEOUT, State.RECOVERY]
    assert list(clock.trace.t) == [0.0, 1.0, 4.0]


def test_a_timeout_in_an_unchanged_state_cuts_it_at_the_arming() -> None:
    """Congestion avoidance from 0 s with the pipe busy [0, 2]; the timer armed at 2.5 s
    and expiring at 3.5 s: 2.5 s of it, 2 busy, then 1 s of timeout."""
    line = Line()
    clock = FlowClock(line, windowed=True)
    clock.start(0.0, handshake=False)
    clock.change(State.CONGESTION_AVOIDANCE, 0.0)
    line.send(0.0, 2.0)
    clock.armed_at, clock.armed_busy = 2.5, 2.0
    clock.timeout(3.5, 2.5)
    clock.finish(3.5)
    t = clock.record()
    assert (t.busy, t.congestion_avoidance, t.timeout) == (2.0, 0.5, 1.0)
    assert states_sum(t) == t.duration == 3.5


@pytest.mark.parametrize(
    ("path", "value"),
    [(("links", 0, "rate"), 1e-320), (("links", 0, "rate"), 0.5), (("flows", 1, "rate"), 1e-300)],
)
def test_a_rate_below_one_bit_per_second_is_refused_naming_its_field(path, value) -> None:
    """1e-320 bit/s would make every transmission last forever (bits / rate overflows):
    such a scenario is refused where the rate is written, with that field's path."""
    data = one_link(
        flows=[bulk(), {"id": "u", "kind": "udp_cbr", "src": "h1", "dst": "h2", "rate": 1000.0}]
    ).model_dump(mode="json")
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate(data)
    (error,) = caught.value.errors()
    assert error["loc"] == path and error["type"] == "greater_than_equal"
    assert error["ctx"] == {"ge": 1.0}
