"""Metrics by observation. Components keep plain counters and call a probe at a few named
points: a sender its `TcpProbe`, a port its `LinkProbe`; `simulate()`'s `RateSampler`
reads the counters on a beat for the rate series, and each flow keeps its `DelayStats`.
They turn those calls into bounded time-series and summary statistics. With no probe
attached a component pays one `is None` test.

Memory is bounded: a change-driven trace keeps at most `cap` points (on overflow it drops
every other point and doubles its minimum spacing); a sampled rate series averages
adjacent pairs instead, so its integral is preserved; delay statistics keep a fixed-size
reservoir for the percentiles and exact running sums for the means. The caps come from
the run's `PointBudget`, so that the run as a whole holds a bounded number of points
however many series it has.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, cast

import numpy as np

from engine.net import stream
from engine.result import Series, Thinning

if TYPE_CHECKING:  # the port, the flows and the sender import this module
    from engine.flows import TcpFlow
    from engine.net import Egress
    from engine.tcp.cc.bbr import Bbr
    from engine.tcp.sender import TcpSender

TRACE_CAP = 20_000  # the most points one series holds
RESERVOIR = 50_000
#: The most points all the series of one run hold together (engine.analysis.memory says
#: what they cost a worker). It leaves every preset, scale case and seed study as they
#: were (the thousand-flow case's 15,009 series need 2.1 M of it).
POINT_BUDGET = 4_000_000
FIRST_CAP = 64  # a series' first share of the budget, doubled as it fills
MIN_CAP = 16  # the least share, when a run has more series than FIRST_CAP each allows


class PointBudget:
    """The points of one run's series, shared out: each series (`attach`) starts with a
    small share and doubles it, up to TRACE_CAP, each time it fills while the budget has
    room; a series whose share cannot grow thins instead. The shares never add up to more
    than `total` (unless the run has more than total / MIN_CAP series), so a run holds a
    bounded number of points whatever its duration, sample_interval or flows.

    Growing is asked for only when a series is full, where thinning was already decided:
    the per-packet path pays nothing. A run that stays within the budget thins each series
    exactly where a fixed TRACE_CAP did."""

    __slots__ = ("free", "first")

    def __init__(self, total: int = POINT_BUDGET, series: int = 1):
        self.free = total
        self.first = max(MIN_CAP, min(FIRST_CAP, total // max(series, 1)))

    def attach(self, trace: Trace) -> Trace:
        trace.budget = self
        trace.cap = self.first
        self.free -= self.first
        return trace

    def grow(self, cap: int) -> int:
        """A full series' new cap: doubled when the budget has room, else as it was."""
        more = min(cap * 2, TRACE_CAP) - cap
        if more <= 0 or more > self.free:
            return cap
        self.free -= more
        return cap + more


class Trace:
    """A change-driven series: a point when the value changes, at most `cap` points."""

    __slots__ = ("unit", "t", "v", "cap", "min_dt", "last_v", "rate", "budget", "halvings")

    def __init__(self, unit: str, cap: int = TRACE_CAP, rate: bool = False):
        self.unit = unit
        self.t = array("d")
        self.v = array("d")
        self.cap = cap
        self.min_dt = 0.0
        self.last_v: float | None = None
        self.rate = rate
        self.budget: PointBudget | None = None  # set by PointBudget.attach
        self.halvings = 0

    def add(self, t: float, v: float) -> None:
        if v == self.last_v:
            return
        self.last_v = v
        ts = self.t
        if ts and t - ts[-1] < self.min_dt:
            self.v[-1] = v  # within the current resolution: keep the latest value
            return
        ts.append(t)
        self.v.append(v)
        if len(ts) >= self.cap:
            self._full()

    def sample(self, t: float, v: float) -> None:
        """A sampled value (rate series): always recorded, thinned by pair averages."""
        self.t.append(t)
        self.v.append(v)
        if len(self.t) >= self.cap:
            self._full()

    def sample_block(self, t: np.ndarray, v: np.ndarray) -> None:
        """`sample()` for each (t[i], v[i]) in turn, a run of points at a time."""
        i, n = 0, len(t)
        while i < n:
            k = min(self.cap - len(self.t), n - i)
            self.t.frombytes(t[i : i + k].tobytes())
            self.v.frombytes(v[i : i + k].tobytes())
            i += k
            if len(self.t) >= self.cap:
                self._full()

    def _full(self) -> None:
        """At the cap: a larger share of the run's budget, or else thinned."""
        if self.budget is not None and self.cap < TRACE_CAP:
            grown = self.budget.grow(self.cap)
            if grown > self.cap:
                self.cap = grown
                return
        self._thin()

    def _thin(self) -> None:
        self.halvings += 1
        if self.rate:
            n = len(self.v) // 2 * 2
            v = np.frombuffer(self.v, dtype=np.float64)[:n].reshape(-1, 2).mean(axis=1)
            t = np.frombuffer(self.t, dtype=np.float64)[1:n:2]
            self.v = array("d", v.tobytes())
            self.t = array("d", t.tobytes())
        else:
            self.t = self.t[::2]
            self.v = self.v[::2]
            span = self.t[-1] - self.t[0] if len(self.t) > 1 else 0.0
            self.min_dt = max(self.min_dt * 2, span / self.cap)

    def series(self) -> Series:
        # Not validated again: the lists are the floats this trace recorded (a run of a
        # thousand flows has tens of thousands of series).
        series = Series.model_construct(unit=self.unit, t=self.t.tolist(), v=self.v.tolist())
        if self.halvings:
            series.thinned(self.thinning())
        return series

    def thinning(self) -> Thinning:
        """How this series was kept within its cap."""
        return Thinning(
            method="pair_mean" if self.rate else "every_other",
            halvings=self.halvings,
            cap=self.cap,
            min_spacing=None if self.rate else self.min_dt,
        )


class DelayStats:
    """One-way delays: exact mean and jitter, percentiles from a seeded reservoir."""

    __slots__ = ("n", "total", "prev", "jitter_sum", "reservoir", "random", "seed", "component")

    def __init__(self, seed: int, component: str):
        self.n = 0
        self.total = 0.0
        self.prev: float | None = None
        self.jitter_sum = 0.0
        self.reservoir = array("d")
        # The stream is first needed when the reservoir is full, which most flows never
        # reach: it is derived then (the same stream, drawn from the same point).
        self.random: Callable[[], float] | None = None
        self.seed = seed
        self.component = component

    def add(self, d: float) -> None:
        self.n += 1
        self.total += d
        if self.prev is not None:
            self.jitter_sum += abs(d - self.prev)
        self.prev = d
        res = self.reservoir
        if len(res) < RESERVOIR:
            res.append(d)
        else:
            if self.random is None:
                self.random = stream(self.seed, self.component).random
            j = int(self.random() * self.n)  # Vitter's algorithm R
            if j < RESERVOIR:
                res[j] = d

    def summary(self) -> dict[str, float | None]:
        if self.n == 0:
            return {
                "delay_mean": None,
                "delay_p50": None,
                "delay_p95": None,
                "delay_p99": None,
                "jitter": None,
            }
        p50, p95, p99 = np.percentile(np.frombuffer(self.reservoir), [50, 95, 99]).tolist()
        return {
            "delay_mean": self.total / self.n,
            "delay_p50": p50,
            "delay_p95": p95,
            "delay_p99": p99,
            # Mean absolute difference of consecutive packets' delays (RFC 3550's D).
            "jitter": self.jitter_sum / (self.n - 1) if self.n > 1 else 0.0,
        }


class TcpProbe:
    """Traces a TCP sender's state after each ACK, timeout and transmission burst; a
    pacing sender's rate too, and BBR's mode and bandwidth estimate."""

    #: The traces, in the order `series()` lists them: `flow.<id>.<name>`.
    SERIES = (
        "cwnd",
        "ssthresh",
        "rwnd",
        "inflight",
        "srtt",
        "rto",
        "seq",
        "ack",
        "retransmissions",
        "delay",
        "pacing_rate",
        "bbr_state",
        "bbr_bw",
    )
    __slots__ = (
        "prefix",
        *SERIES,
        "cwnd_max",
        "cwnd_area",
        "_cwnd_since",
        "_cwnd_now",
        "_ssthresh",
        "_rwnd",
        "_srtt",
        "_rto",
        "_retransmissions",
        "_bbr",
        "budget",
    )
    #: The sender's strategy when it is rate-based (BBR's), set by `start` with the BBR
    #: traces and read only when they are set.
    _bbr: Bbr

    def __init__(self, flow_id: str):
        self.prefix = f"flow.{flow_id}."
        self.cwnd = Trace("bytes")
        self.ssthresh = Trace("bytes")
        self.rwnd = Trace("bytes")
        self.inflight = Trace("bytes")
        self.srtt = Trace("s")
        self.rto = Trace("s")
        self.seq = Trace("bytes")
        self.ack = Trace("bytes")
        self.retransmissions = Trace("packets")
        # One point per data packet arriving (its one-way delay), as seed 002 plots it;
        # past the cap adjacent points average in pairs, so a point may then stand for
        # several consecutive packets.
        self.delay = Trace("s", rate=True)
        # The last values of ssthresh, rwnd, srtt, rto and retransmissions, as their traces
        # hold them: read here, on every ACK, instead of in five trace objects (each a
        # cold cache line when a thousand flows take turns).
        self._ssthresh: int | None = None
        self._rwnd: int | None = None
        self._srtt: float | None = None
        self._rto: float | None = None
        self._retransmissions: int | None = None
        self.cwnd_max = 0
        self.cwnd_area = 0.0
        self._cwnd_since = 0.0  # when the current cwnd began (start() sets it)
        self._cwnd_now = 0
        self.pacing_rate: Trace | None = None  # set by `start` when the sender paces
        self.bbr_state: Trace | None = None
        self.bbr_bw: Trace | None = None
        # The run's budget, for the traces `start` adds (simulate() attaches the rest).
        self.budget: PointBudget | None = None

    def effective_cwnd(self, snd: TcpSender) -> int:
        return snd.window() if not snd.cc.limits_window else snd.st.cwnd

    def start(self, snd: TcpSender) -> None:
        self._cwnd_since = snd.env.now
        self._cwnd_now = self.effective_cwnd(snd)
        self.cwnd_max = self._cwnd_now
        self.cwnd.add(snd.env.now, self._cwnd_now)
        if snd.pacing:
            self.pacing_rate = self._late_trace("bit/s")
        if snd.cc.rate_based:
            self.bbr_state = self._late_trace("state")
            self.bbr_bw = self._late_trace("bit/s")
            self._bbr = cast("Bbr", snd.cc)  # the one rate-based strategy

    def _late_trace(self, unit: str) -> Trace:
        trace = Trace(unit)
        return trace if self.budget is None else self.budget.attach(trace)

    def on_send(self, snd: TcpSender) -> None:
        now = snd.env.now
        self.seq.add(now, snd.st.snd_max)
        self.inflight.add(now, snd.st.snd_nxt - snd.st.snd_una)
        if snd.retransmissions != self._retransmissions:
            self._retransmissions = snd.retransmissions
            self.retransmissions.add(now, snd.retransmissions)

    def on_state(self, snd: TcpSender) -> None:
        """The sender's state after an ACK or a retransmission timeout."""
        now = snd.env.now
        st = snd.st
        cwnd = self.effective_cwnd(snd)
        if cwnd != self._cwnd_now:
            self.cwnd_area += self._cwnd_now * (now - self._cwnd_since)
            self._cwnd_since = now
            self._cwnd_now = cwnd
            if cwnd > self.cwnd_max:
                self.cwnd_max = cwnd
            self.cwnd.add(now, cwnd)
        # Most of these change rarely: Trace.add's own test, saving a call per ACK each.
        if st.ssthresh < 1 << 40 and st.ssthresh != self._ssthresh:
            self._ssthresh = st.ssthresh
            self.ssthresh.add(now, st.ssthresh)
        if snd.rwnd != self._rwnd:
            self._rwnd = snd.rwnd
            self.rwnd.add(now, snd.rwnd)
        self.inflight.add(now, st.snd_nxt - st.snd_una)
        self.ack.add(now, st.snd_una)
        rtt = snd.rtt
        if rtt.srtt is not None and rtt.srtt != self._srtt:
            self._srtt = rtt.srtt
            self.srtt.add(now, rtt.srtt)
        if rtt.rto != self._rto:
            self._rto = rtt.rto
            self.rto.add(now, rtt.rto)
        if snd.retransmissions != self._retransmissions:
            self._retransmissions = snd.retransmissions
            self.retransmissions.add(now, snd.retransmissions)
        if self.pacing_rate is not None:
            self._on_pacing(snd, now)

    def _on_pacing(self, snd: TcpSender, now: float) -> None:
        assert self.pacing_rate is not None
        self.pacing_rate.add(now, snd.cc.pacing_rate(snd.st) * 8)
        if self.bbr_state is not None and self.bbr_bw is not None:
            cc = self._bbr
            self.bbr_state.add(now, int(cc.mode))
            self.bbr_bw.add(now, cc.bw.get() * 8)

    def cwnd_mean(self, end: float) -> float | None:
        if not self.cwnd.t:  # not started: start() records the first point
            return None
        area = self.cwnd_area + self._cwnd_now * (end - self._cwnd_since)
        start = self._start_time
        return area / (end - start) if end > start else float(self._cwnd_now)

    @property
    def _start_time(self) -> float:
        return self.cwnd.t[0] if len(self.cwnd.t) else 0.0

    def series(self) -> dict[str, Trace]:
        names = self.SERIES
        return {self.prefix + n: trace for n in names if (trace := getattr(self, n)) is not None}


class LinkProbe:
    """Traces one egress port's queue length (change-driven) and cumulative drops."""

    def __init__(self, port: Egress):
        self.prefix = f"link.{port.link_id}.{port.src}>{port.dst}."
        self.queue = Trace("packets")
        self.drops = Trace("packets")
        self.utilization = Trace("ratio", rate=True)

    def on_queue(self, port: Egress, now: float, waiting: int) -> None:
        """The queue length changed (the port calls only then)."""
        self.queue.add(now, waiting)

    def on_drop(self, port: Egress, now: float, waiting: int) -> None:
        self.queue.add(now, waiting)
        self.drops.add(now, port.drops + port.error_drops)

    def series(self) -> dict[str, Trace]:
        return {
            self.prefix + "queue_packets": self.queue,
            self.prefix + "utilization": self.utilization,
            self.prefix + "drops": self.drops,
        }


SAMPLER_BLOCK = 64  # beats read before they become points: bounded memory, numpy per block
_DELIVERED = attrgetter("delivered_bytes")
_BUSY_TOTAL = attrgetter("busy_total")
_BUSY_UNTIL = attrgetter("busy_until")


class RateSampler:
    """The rate series sampled every `interval`: goodput per TCP flow, utilisation per port.

    A beat only reads each flow's delivered bytes and each port's busy-time counters into a
    row, at the cost of a list comprehension; every SAMPLER_BLOCK beats, and on `flush()`,
    numpy turns the rows into rates and each series takes its points in one call. Values
    and thinning are those of sampling each series point by point: the same IEEE
    operations on the same numbers, appended in the same order.
    """

    def __init__(
        self, interval: float, flows: list[TcpFlow], goodput: list[Trace], ports: list[Egress]
    ):
        self.interval = interval
        self.flows = flows  # TcpFlow objects, and their goodput traces in the same order
        self.goodput = goodput
        self.ports = ports
        self.utilization: list[Trace] = []
        for port in ports:  # once per run
            assert port.probe is not None  # simulate() gives every port a probe
            self.utilization.append(port.probe.utilization)
        self.last_bytes = np.zeros(len(flows), dtype=np.int64)
        self.last_busy = np.zeros(len(ports))
        # A block of beats, one row each, as numbers the collector never sees (lists of
        # a thousand ints and floats per beat were traversed by every collection).
        self._t = np.empty(SAMPLER_BLOCK)
        self._delivered = np.empty((SAMPLER_BLOCK, len(flows)), dtype=np.int64)
        self._busy_total = np.empty((SAMPLER_BLOCK, len(ports)))
        self._busy_until = np.empty((SAMPLER_BLOCK, len(ports)))
        self._beats = 0

    def beat(self, now: float) -> None:
        k = self._beats
        self._t[k] = now
        self._delivered[k] = np.fromiter(map(_DELIVERED, self.flows), np.int64)
        self._busy_total[k] = np.fromiter(map(_BUSY_TOTAL, self.ports), np.float64)
        self._busy_until[k] = np.fromiter(map(_BUSY_UNTIL, self.ports), np.float64)
        self._beats = k + 1
        if self._beats >= SAMPLER_BLOCK:
            self.flush()

    def flush(self) -> None:
        """Turn the beats read so far into points of every series."""
        k = self._beats
        if not k:
            return
        t = self._t[:k]
        interval = self.interval
        if self.flows:
            delivered = self._delivered[:k]
            before = np.vstack([self.last_bytes, delivered[:-1]])
            rates = (delivered - before) * 8 / interval
            self.last_bytes = delivered[-1].copy()
            for j, trace in enumerate(self.goodput):
                trace.sample_block(t, rates[:, j])
        if self.ports:
            # Egress.busy_time(now) for every port and beat.
            until = self._busy_until[:k] - t[:, None]
            busy = np.maximum(0.0, self._busy_total[:k] - np.maximum(0.0, until))
            before = np.vstack([self.last_busy, busy[:-1]])
            ratios = (busy - before) / interval
            self.last_busy = busy[-1]
            for j, trace in enumerate(self.utilization):
                trace.sample_block(t, ratios[:, j])
        self._beats = 0
