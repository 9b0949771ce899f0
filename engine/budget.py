"""The points of one run's series, bounded (`PointBudget`): what each series
(engine/trace.py) may hold, and the run's total."""

from __future__ import annotations

TRACE_CAP = 20_000  # the most points one series holds
#: The most points all the series of one run hold together (engine.analysis.memory says
#: what they cost a worker). It leaves every preset, scale case and seed study as they
#: were (the thousand-flow case's 15,009 series need 2.1 M of it).
POINT_BUDGET = 4_000_000
FIRST_CAP = 64  # a series' first share of the budget, doubled as it fills
MIN_CAP = 16  # the least share, when a run has more series than FIRST_CAP each allows


class PointBudget:
    """The points of one run's series, shared out: each series (`Trace.share`) starts with a
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

    def first_share(self) -> int:
        """A new series' first share (engine.trace.Trace.share)."""
        self.free -= self.first
        return self.first

    def grow(self, cap: int) -> int:
        """A full series' new cap: doubled when the budget has room, else as it was."""
        more = min(cap * 2, TRACE_CAP) - cap
        if more <= 0 or more > self.free:
            return cap
        self.free -= more
        return cap + more
