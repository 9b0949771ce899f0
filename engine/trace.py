"""A time-series as the recorder keeps it (`Trace`): a point when a value changes, or one per
sample, at most `cap` points, thinned evenly over the whole run when it has more.

- A **change-driven** series (cwnd, in flight, queue…) is stored exactly until it fills its
  cap. From then on time is cut into buckets of equal width from the series' first point,
  and each bucket keeps at most four of its points, the M4 rule (Jugel et al., "M4: a
  visualization-oriented time series data aggregation", VLDB 2014): its first, its least,
  its greatest and its last. Every stored point is a recorded one, so the series' extremes
  (the summary's `cwnd_max`, `queue_max`) and each bucket's are kept, and the held value at
  every bucket's end is right. When a point falls past the cap's last bucket the width
  doubles and pairs of buckets merge (M4 of a union of buckets is M4 of their kept points),
  so the resolution stays even from the first point to the last.
- A **sampled** series (goodput and utilisation per beat, per-packet delay) keeps each
  point the mean of the same number of consecutive samples (`stride`, a power of two): at
  the cap adjacent points average in pairs and the stride doubles, so the integral (a
  rate's bytes, the delays' sum) is kept and every point stands for as many samples as
  every other but the last, which stands for those since the last full one.

Each trace's cap is its share of the run's `PointBudget` (engine/budget.py: a bounded number
of points per run).
Per packet O(1), a comparison or two; thinning, O(points kept), once per doubling of the run.
"""

from __future__ import annotations

import math
import struct
from array import array
from typing import Final

import numpy as np

from engine.budget import TRACE_CAP, PointBudget
from engine.result import Series, Thinning

KEEP: Final = 4  # points a bucket keeps: first, least, greatest, last (M4)
#: Points a trace holds in its list before they join its arrays (Trace._flush).
STAGED: Final = 64
#: STAGED floats as the doubles an array holds (native size and order, as array("d")):
#: struct reads each with PyFloat_AsDouble, where numpy's array() of a list spent ~37k
#: instructions a call finding out what the list holds.
_PACK_BLOCK: Final = struct.Struct(f"{STAGED}d").pack
#: A bucket width for points that all came at one instant (time cannot be cut by zero):
#: the next later point doubles it to its scale.
TINY_WIDTH = 1e-9


# What else the last point of the current bucket is (Trace.role): nothing, so a later point
# replaces it; its greatest (least) only, so a greater (lesser) one replaces it; or its first,
# or both extremes, so it stays.
FREE: Final = 0
TOP: Final = 1
BOTTOM: Final = 2
HELD: Final = 3


def _role(last: int, first: int, least: int, greatest: int) -> int:
    if last == first:
        return HELD
    if last == greatest:
        return HELD if last == least else TOP
    return BOTTOM if last == least else FREE


class Trace:
    """A change-driven series (`add`) or a sampled one (`sample`), at most `cap` points."""

    __slots__ = (
        "unit",
        "_t",
        "_v",
        "_staged",
        "cap",
        "last_v",
        "rate",
        "budget",
        "halvings",
        "t0",
        "width",
        "k",
        "o",
        "mn",
        "mx",
        "lo",
        "hi",
        "role",
        "edge",
        "stride",
        "acc",
        "acc_n",
        "pending",
        "pending_t",
        "pending_v",
    )

    def __init__(self, unit: str, cap: int = TRACE_CAP, rate: bool = False):
        # Assigned in the order the compiled class lays its fields out: what `add` and
        # `sample` read on every call first, so that they share the object's first cache
        # lines (with a thousand flows every trace is cold when its flow's turn comes).
        # NaN until the first point: unequal to every value, as None was, and a float the
        # compiled class holds unboxed (a boxed one was a cold object read on every add).
        self.last_v = math.nan
        # Change-driven, once bucketed (width > 0): buckets [t0 + k*width, t0 + (k+1)*width);
        # the current one is bucket `k`, its kept points are t[o:], its least and greatest
        # at indices mn and mx (the earliest of equals), their values lo and hi.
        self.edge = -math.inf  # where bucket k ends; -inf until bucketed
        self.width = 0.0
        self.role = HELD  # what else the last point of the current bucket is
        self.lo = 0.0  # t[mn]'s and t[mx]'s values
        self.hi = 0.0
        # While `pending`, t[-1] and v[-1] are these (_settle): a move on every ACK stores
        # two floats, where compiled item assignments on an array cost ~375 instructions.
        self.pending = False
        self.pending_t = 0.0
        self.pending_v = 0.0
        # The latest points, t and v in turn, not yet in the arrays: a compiled list append
        # costs a few dozen instructions where array.append parsed its float twice with a
        # format string (~710 instructions a value, two a point); `_flush` moves them into
        # the arrays STAGED points at a time, one struct pack each. The series is _t +
        # _staged's times.
        self._staged: list[float] = []
        self._t = array("d")
        self.cap = cap
        # Sampled: samples per point; the last point's sum and count while under `stride`.
        self.acc_n = 0
        self.stride = 1
        self.acc = 0.0
        self._v = array("d")
        self.unit = unit
        self.rate = rate
        self.budget: PointBudget | None = None  # set by share()
        self.halvings = 0
        self.t0 = 0.0
        self.k = 0
        self.o = 0
        self.mn = 0
        self.mx = 0

    def share(self, budget: PointBudget) -> Trace:
        """This series' points come out of the run's `budget`: its first share as its cap."""
        self.budget = budget
        self.cap = budget.first_share()
        return self

    @property
    def t(self) -> array[float]:
        """The times of the points, a moving last point excepted (see `pending`)."""
        self._flush()
        return self._t

    @property
    def v(self) -> array[float]:
        """The values of the points, a moving last point excepted (see `pending`)."""
        self._flush()
        return self._v

    def _len(self) -> int:
        """The number of points, staged ones included."""
        return len(self._t) + len(self._staged) // 2

    def _stage(self, t: float, v: float) -> None:
        """`(t, v)` the last point."""
        staged = self._staged
        staged.append(t)
        staged.append(v)
        if len(staged) >= 2 * STAGED:
            self._flush()

    def _flush(self) -> None:
        """The staged points into the arrays, in one conversion each: the same doubles as
        appending them one by one (a moving last point stays the last, pending)."""
        staged = self._staged
        if staged:
            n = len(staged) // 2
            if n == STAGED:
                self._t.frombytes(_PACK_BLOCK(*staged[0::2]))
                self._v.frombytes(_PACK_BLOCK(*staged[1::2]))
            else:
                self._t.frombytes(struct.pack(f"{n}d", *staged[0::2]))
                self._v.frombytes(struct.pack(f"{n}d", *staged[1::2]))
            self._staged = []

    def _settle(self) -> None:
        """A moved last point written where it is kept, before anything reads or grows it."""
        if self.pending:
            staged = self._staged
            if staged:
                staged[-2] = self.pending_t
                staged[-1] = self.pending_v
            else:
                self._t[-1] = self.pending_t
                self._v[-1] = self.pending_v
            self.pending = False

    # --- change-driven ------------------------------------------------------------------

    def add(self, t: float, v: float) -> None:
        if v == self.last_v:
            return
        self.last_v = v
        if t < self.edge:  # the current bucket
            # The last point moves on when it held no role the new one does not take over:
            # only last, or the greatest (least) exceeded, as a rising (falling) run does.
            role = self.role
            if (
                (role == FREE and self.lo <= v <= self.hi)
                or (role == TOP and v > self.hi)
                or (role == BOTTOM and v < self.lo)
            ):
                self.pending_t = t
                self.pending_v = v
                self.pending = True
                if role == TOP:
                    self.hi = v
                elif role == BOTTOM:
                    self.lo = v
                return
            self._settle()
            self._into_bucket(t, v)
            return
        self._settle()
        if self.width == 0.0:  # not bucketed yet (edge is -inf): every change
            self._stage(t, v)
            if self._len() >= self.cap:
                self._full()
            return
        k = int((t - self.t0) / self.width)
        if k < self.cap // KEEP:
            self._open(k, t, v)
        else:
            self._past_cap(t, v)

    def _edge(self, k: int) -> float:
        """Where bucket `k` ends: the least time `add`'s arithmetic puts in a later bucket
        (the index is monotonic in t, so one comparison tells the current bucket)."""
        t0, width = self.t0, self.width
        e = t0 + (k + 1) * width
        while int((e - t0) / width) <= k:
            e = math.nextafter(e, math.inf)
        while int((math.nextafter(e, -math.inf) - t0) / width) > k:
            e = math.nextafter(e, -math.inf)
        return e

    def _open(self, k: int, t: float, v: float) -> None:
        """`(t, v)` starts bucket `k`."""
        self.k = k
        self.o = self.mn = self.mx = self._len()
        self._stage(t, v)
        self.lo = self.hi = v
        self.role = HELD
        self.edge = self._edge(k)

    def _into_bucket(self, t: float, v: float) -> None:
        """`(t, v)` is the current bucket's latest point: kept as its last, and as its least
        or greatest if it is; a point no longer first, least, greatest or last goes."""
        self._flush()
        ts, vs = self._t, self._v
        last = len(ts) - 1
        o, mn, mx = self.o, self.mn, self.mx
        new = last + 1
        ts.append(t)
        vs.append(v)
        gone = -1  # the old extreme this point replaces
        if v < self.lo:
            gone, mn, self.lo = mn, new, v
        elif v > self.hi:
            gone, mx, self.hi = mx, new, v
        for i in sorted({gone, last}, reverse=True):
            if i > o and i != mn and i != mx:
                del ts[i]
                del vs[i]
                new -= 1
                if mn > i:
                    mn -= 1
                if mx > i:
                    mx -= 1
        self.mn, self.mx = mn, mx
        self.role = _role(new, o, mn, mx)

    def _past_cap(self, t: float, v: float) -> None:
        """A point past the last bucket the cap allows: a larger share of the budget, or
        else wider buckets, as many doublings as the point needs."""
        self._grow()
        width = self.width
        while int((t - self.t0) / width) >= self.cap // KEEP:
            width *= 2.0
            self.halvings += 1
        if width != self.width:
            self._rebucket(width)
        if t < self.edge:
            self._into_bucket(t, v)
        else:
            self._open(int((t - self.t0) / width), t, v)

    def _grow(self) -> None:
        if self.budget is not None and self.cap < TRACE_CAP:
            self.cap = self.budget.grow(self.cap)

    def _rebucket(self, width: float) -> None:
        """Buckets of `width` (a power-of-two multiple of the last, or the first): each keeps
        the first, least, greatest and last of its points (the earliest of equals)."""
        self._flush()
        t = np.frombuffer(self._t, dtype=np.float64)
        v = np.frombuffer(self._v, dtype=np.float64)
        n = len(t)
        # The same arithmetic as `add`'s, so a point stays in the bucket it was kept for.
        k = ((t - self.t0) / width).astype(np.int64)
        pos = np.arange(n)
        starts = np.flatnonzero(np.diff(k, prepend=-1))
        ends = np.append(starts[1:], n) - 1
        lows = np.lexsort((pos, v, k))[starts]  # by bucket, value, then time: least first
        highs = np.lexsort((pos, -v, k))[starts]
        keep = np.unique(np.concatenate((starts, ends, lows, highs)))
        self._t = array("d", t[keep].tobytes())
        self._v = array("d", v[keep].tobytes())
        self.width = width
        self._reopen()

    def _reopen(self) -> None:
        """The last bucket's roles, found again among the kept points."""
        self._flush()
        ts, vs = self._t, self._v
        n = len(ts)
        if not n:
            self.k = self.o = self.mn = self.mx = 0
            self.role = HELD
            self.edge = -math.inf  # the next point opens its bucket
            return
        k = int((ts[n - 1] - self.t0) / self.width)
        o = n - 1
        while o > 0 and int((ts[o - 1] - self.t0) / self.width) == k:
            o -= 1
        mn = mx = o
        for i in range(o + 1, n):
            if vs[i] < vs[mn]:
                mn = i
            if vs[i] > vs[mx]:
                mx = i
        self.k, self.o, self.mn, self.mx = k, o, mn, mx
        self.lo, self.hi = vs[mn], vs[mx]
        self.role = _role(n - 1, o, mn, mx)
        self.edge = self._edge(k)

    # --- sampled --------------------------------------------------------------------------

    def sample(self, t: float, v: float) -> None:
        """A sampled value (rate series, per-packet delay): `stride` samples to a point."""
        if self.acc_n:
            acc = self.acc + v
            n = self.acc_n + 1
            self.pending_t = t
            self.pending_v = acc / n
            self.pending = True
        else:
            self._settle()  # the complete last point may have moved
            self._stage(t, v)
            acc, n = v, 1
        if n < self.stride:
            self.acc, self.acc_n = acc, n
            return
        self.acc_n = 0
        if self._len() >= self.cap:
            self._settle()
            self._full()

    def sample_block(self, t: np.ndarray, v: np.ndarray) -> None:
        """`sample()` for each (t[i], v[i]) in turn, a run of points at a time: the same
        sums, added left to right (cumsum), so the same floats."""
        self._settle()
        self._flush()
        i, n = 0, len(t)
        while i < n:
            stride = self.stride
            if self.acc_n:  # the open point takes what it lacks
                m = min(stride - self.acc_n, n - i)
                acc = float(np.cumsum(np.concatenate(([self.acc], v[i : i + m])))[-1])
                count = self.acc_n + m
                i += m
                self._t[-1] = float(t[i - 1])
                self._v[-1] = acc / count
                if count < stride:
                    self.acc, self.acc_n = acc, count
                    return
                self.acc_n = 0
                if len(self._t) >= self.cap:
                    self._full()
                continue
            full = min(self.cap - len(self._t), (n - i) // stride)
            if full:
                j = i + full * stride
                if stride == 1:
                    means = v[i:j]
                else:
                    means = np.cumsum(v[i:j].reshape(full, stride), axis=1)[:, -1] / stride
                self._t.frombytes(np.ascontiguousarray(t[i + stride - 1 : j : stride]).tobytes())
                self._v.frombytes(np.ascontiguousarray(means, dtype=np.float64).tobytes())
                i = j
                if len(self._t) >= self.cap:
                    self._full()
                    continue
            if i < n:  # fewer than a stride left: an open point
                acc = float(np.cumsum(v[i:n])[-1])
                self._t.append(float(t[n - 1]))
                self._v.append(acc / (n - i))
                self.acc, self.acc_n = acc, n - i
                return

    def _halve(self) -> None:
        """Adjacent points averaged in pairs, each the mean of twice the samples; an odd
        last point becomes the open one, with its samples' sum."""
        self._flush()
        self.halvings += 1
        count = len(self._v)
        n = count // 2 * 2
        v = np.frombuffer(self._v, dtype=np.float64)
        t = np.frombuffer(self._t, dtype=np.float64)
        means = (v[0:n:2] + v[1:n:2]) / 2.0
        ends = t[1:n:2]
        if count > n:
            means = np.append(means, v[n])
            ends = np.append(ends, t[n])
            self.acc = float(v[n]) * self.stride
            self.acc_n = self.stride
        self.stride *= 2
        self._v = array("d", means.tobytes())
        self._t = array("d", ends.tobytes())

    # --- both ---------------------------------------------------------------------------

    def _full(self) -> None:
        """At the cap: a larger share of the run's budget, or else thinned."""
        self._flush()
        cap = self.cap
        self._grow()
        if self.cap > cap:
            return
        if self.rate:
            self._halve()
            return
        # A change-driven series starts its buckets: those of its points so far fill at
        # most half the buckets the cap allows.
        self.t0 = self._t[0]
        span = self._t[-1] - self.t0
        self.halvings += 1
        self._rebucket(span / max(1, self.cap // KEEP // 2) if span > 0 else TINY_WIDTH)

    def rewind(self, t: float) -> None:
        """Forget the points at or after `t` (a stretch re-booked after the fact)."""
        self._settle()
        self._flush()
        ts = self._t
        n = len(ts)
        while n and ts[n - 1] >= t:
            n -= 1
        if n < len(ts):
            del self._t[n:]
            del self._v[n:]
            self.last_v = self._v[-1] if n else math.nan
            if self.width > 0.0:
                self._reopen()

    def series(self) -> Series:
        # Not validated again: the floats recorded (tens of thousands of series per run).
        # Staged points are read where they are: at the end of a run most traces hold a
        # few, and moving them costs more than listing them (~40 ms at 1,000 flows).
        t, v = self._t.tolist(), self._v.tolist()
        staged = self._staged
        if staged:
            # As floats, as the arrays would have held them (the interpreted engine may
            # have staged an int).
            t += [float(x) for x in staged[0::2]]
            v += [float(x) for x in staged[1::2]]
        if self.pending:  # read, not settled: reading leaves the trace as it was
            t[-1], v[-1] = self.pending_t, self.pending_v
        series = Series.recorded(self.unit, t, v)
        if self.halvings:
            series.thinned(self.thinning())
        return series

    def thinning(self) -> Thinning:
        """How this series was kept within its cap."""
        if self.rate:
            return Thinning(
                method="stride_mean",
                halvings=self.halvings,
                cap=self.cap,
                min_spacing=None,
                samples_per_point=self.stride,
            )
        return Thinning(
            method="bucket_m4",
            halvings=self.halvings,
            cap=self.cap,
            min_spacing=None,
            bucket=self.width,
            origin=self.t0,
        )
