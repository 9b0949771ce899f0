"""Metrics by observation. Components keep plain counters and call a probe at a few named
points: a sender its `TcpProbe`, a port its `LinkProbe`; `simulate()`'s `RateSampler`
(engine/sampler.py) reads the counters on a beat for the rate series, and each flow keeps
its `DelayStats`.
They turn those calls into bounded time-series and summary statistics. With no probe
attached a component pays one `is None` test.

Memory is bounded: each series is a `Trace` (engine.trace), capped by its share of the
run's point budget; delay statistics keep a fixed-size reservoir for the percentiles and
exact running sums for the means.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Protocol

import numpy as np

from engine.budget import PointBudget
from engine.kernel import stream
from engine.trace import Trace

if TYPE_CHECKING:
    from engine.kernel import Kernel
    from engine.tcp.cc.base import CongestionOps
    from engine.tcp.rtt import RttEstimator
    from engine.tcp.state import TcpState


# What the probes read of the components that call them. The port, the flows and the
# sender import this module, so it names them by these protocols; each is read once, when
# a probe starts or a run ends: what changes on every packet and ACK comes as arguments,
# and the sender's state record, RTT estimator and strategy are kept as the objects they
# are (the compiled engine reads those natively).


class ProbedSender(Protocol):
    """What `TcpProbe.start` reads of a TCP sender."""

    env: Kernel
    st: TcpState
    rtt: RttEstimator
    cc: CongestionOps
    pacing: bool

    def window(self, extra: int = 0) -> int: ...


class ProbedPort(Protocol):
    """What a `LinkProbe` reads of an egress port."""

    link_id: str
    src: str
    dst: str

    @property
    def probe(self) -> LinkProbe | None: ...


RESERVOIR: Final = 50_000


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
        p50, p95, p99 = percentiles(self.reservoir, (50, 95, 99))
        return {
            "delay_mean": self.total / self.n,
            "delay_p50": p50,
            "delay_p95": p95,
            "delay_p99": p99,
            # Mean absolute difference of consecutive packets' delays (RFC 3550's D).
            "jitter": self.jitter_sum / (self.n - 1) if self.n > 1 else 0.0,
        }


def percentiles(values: array[float], qs: tuple[int, ...]) -> list[float]:
    """`np.percentile(values, qs)` (its default, linear method) to the bit, at a fraction
    of its cost: that call spends ~100 us per flow on its generality, one partition of the
    values on the indexes it reads does the work. The arithmetic is numpy's own (`_lerp`),
    in the same order, on the same float64s; tests/unit/test_recorder_percentiles.py holds
    it to np.percentile."""
    n = len(values)
    virtual = [(n - 1) * (q / 100) for q in qs]
    below = [min(math.floor(v), n - 1) for v in virtual]
    kth = sorted({*below, *(min(i + 1, n - 1) for i in below)})
    ordered = np.frombuffer(values).copy()
    ordered.partition(kth)
    out = []
    for v, i in zip(virtual, below, strict=True):
        if v >= n - 1:  # numpy reads the greatest value on both sides
            a = b = float(ordered[n - 1])
            gamma = v - (-1)
        else:
            a, b = float(ordered[i]), float(ordered[i + 1])
            gamma = v - i
        diff = b - a
        out.append(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)
    return out


class TcpProbe:
    """Traces a TCP sender's state after each ACK, timeout and transmission burst; a
    pacing sender's rate too, and the traces its congestion control names (`traces`:
    BBR's mode and bandwidth estimate)."""

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
        "_samples",
        "_rto",
        "_retransmissions",
        "cc_traces",
        "_st",
        "_rtt",
        "_cc",
        "budget",
    )
    # The sender's state record, RTT estimator and strategy, set by `start`: the probe
    # reads them on every ACK, and a sender keeps the same ones for life.
    _st: TcpState
    _rtt: RttEstimator
    _cc: CongestionOps

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
        # past the cap each point is the mean of as many consecutive packets as every
        # other (engine.trace), so the series' mean stays the packets' mean.
        self.delay = Trace("s", rate=True)
        # The last values of ssthresh, rwnd, srtt, rto and retransmissions, as their traces
        # hold them: read here, on every ACK, instead of in five trace objects (each a
        # cold cache line when a thousand flows take turns). -1 until the first: none of
        # them is ever negative, and the compiled class holds a plain int or float unboxed
        # where an optional one is a pointer to an object of its own, cold too.
        self._ssthresh = -1
        self._rwnd = -1
        self._srtt = -1.0
        self._samples = 0  # the RTT estimator's samples when srtt was last read
        self._rto = -1.0
        self._retransmissions = -1
        self.cwnd_max = 0
        self.cwnd_area = 0.0
        self._cwnd_since = 0.0  # when the current cwnd began (start() sets it)
        self._cwnd_now = 0
        self.pacing_rate: Trace | None = None  # set by `start` when the sender paces
        #: The congestion control's own traces (its `traces`), in its order.
        self.cc_traces: dict[str, Trace] = {}
        # The run's budget, for the traces `start` adds (simulate() attaches the rest).
        self.budget: PointBudget | None = None

    def start(self, snd: ProbedSender) -> None:
        now = snd.env.now
        st = self._st = snd.st
        self._rtt = snd.rtt
        cc = self._cc = snd.cc
        self._cwnd_since = now
        self._cwnd_now = st.cwnd if cc.limits_window else snd.window()  # as show_state's
        self.cwnd_max = self._cwnd_now
        self.cwnd.add(now, self._cwnd_now)
        if snd.pacing:
            self.pacing_rate = self._late_trace("bit/s")
        if cc.traces:
            self.cc_traces = {name: self._late_trace(unit) for name, unit in cc.traces}

    def _late_trace(self, unit: str) -> Trace:
        trace = Trace(unit)
        return trace if self.budget is None else trace.share(self.budget)

    def on_send(self, now: float, retransmissions: int) -> None:
        st = self._st
        self.seq.add(now, st.snd_max)
        self.inflight.add(now, st.snd_nxt - st.snd_una)
        if retransmissions != self._retransmissions:
            self._retransmissions = retransmissions
            self.retransmissions.add(now, retransmissions)

    def on_state(self, now: float, cwnd: int, rwnd: int, retransmissions: int) -> None:
        """The sender's state after an ACK or a retransmission timeout: `cwnd` is the
        window it obeys (engine.tcp.sender's `show_state`)."""
        st = self._st
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
        if rwnd != self._rwnd:
            self._rwnd = rwnd
            self.rwnd.add(now, rwnd)
        self.inflight.add(now, st.snd_nxt - st.snd_una)
        self.ack.add(now, st.snd_una)
        rtt = self._rtt
        # srtt moves only with a sample: its count is read in place, where srtt itself is
        # an object of its own (optional), cold when a thousand flows take turns.
        if rtt.samples != self._samples:
            self._samples = rtt.samples
            if rtt.srtt is not None and rtt.srtt != self._srtt:
                self._srtt = rtt.srtt
                self.srtt.add(now, rtt.srtt)
        if rtt.rto != self._rto:
            self._rto = rtt.rto
            self.rto.add(now, rtt.rto)
        if retransmissions != self._retransmissions:
            self._retransmissions = retransmissions
            self.retransmissions.add(now, retransmissions)
        if self.pacing_rate is not None:
            self.pacing_rate.add(now, self._cc.pacing_rate(st) * 8)
        if self.cc_traces:
            self._on_cc(now)

    def _on_cc(self, now: float) -> None:
        for trace, value in zip(self.cc_traces.values(), self._cc.traced(), strict=True):
            trace.add(now, value)

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
        found = {self.prefix + n: trace for n in names if (trace := getattr(self, n)) is not None}
        found.update({self.prefix + n: trace for n, trace in self.cc_traces.items()})
        return found


class LinkProbe:
    """Traces one egress port's queue length (change-driven) and cumulative drops."""

    def __init__(self, port: ProbedPort):
        self.prefix = f"link.{port.link_id}.{port.src}>{port.dst}."
        self.queue = Trace("packets")
        self.drops = Trace("packets")
        self.utilization = Trace("ratio", rate=True)

    def on_queue(self, now: float, waiting: int) -> None:
        """The queue length changed (the port calls only then)."""
        self.queue.add(now, waiting)

    def on_drop(self, now: float, waiting: int, drops: int) -> None:
        """A packet was dropped; `drops` counts the port's drops so far."""
        self.queue.add(now, waiting)
        self.drops.add(now, drops)

    def series(self) -> dict[str, Trace]:
        return {
            self.prefix + "queue_packets": self.queue,
            self.prefix + "utilization": self.utilization,
            self.prefix + "drops": self.drops,
        }
