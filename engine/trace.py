"""A time-series as the recorder keeps it (`Trace`): a point when a value changes, or one per
sampling beat, at most `cap` points. On overflow a change-driven trace drops every other
point and doubles its minimum spacing; a sampled rate series averages adjacent pairs
instead, so its integral is preserved. Each trace's cap is its share of the run's
`PointBudget`, so the run as a whole holds a bounded number of points however many series
it has.
"""

from __future__ import annotations

from array import array

import numpy as np

from engine.result import Series, Thinning

TRACE_CAP = 20_000  # the most points one series holds
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

    def rewind(self, t: float) -> None:
        """Forget the points at or after `t` (a stretch re-booked after the fact)."""
        ts = self.t
        n = len(ts)
        while n and ts[n - 1] >= t:
            n -= 1
        if n < len(ts):
            del self.t[n:]
            del self.v[n:]
            self.last_v = self.v[-1] if n else None

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
