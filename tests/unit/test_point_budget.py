"""The run-wide point budget (engine/budget.py `PointBudget`): a run's series together hold
at most the budget, however many there are; a series whose share never runs out is recorded
exactly as with a fixed TRACE_CAP; a thinned series says how it was thinned."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from engine import Scenario, simulate
from engine.budget import FIRST_CAP, MIN_CAP, POINT_BUDGET, TRACE_CAP, PointBudget
from engine.trace import Trace

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from engine_scale import flows_dumbbell  # noqa: E402

pytestmark = pytest.mark.unit


def _feed(trace: Trace, n: int, seed: int, *, sampled: bool) -> None:
    rnd = random.Random(seed)
    for i in range(n):
        if sampled:
            trace.sample(i * 0.01, rnd.random())
        else:
            trace.add(i * 0.01, float(rnd.randrange(50)))


@pytest.mark.parametrize("sampled", [False, True])
def test_a_series_within_the_budget_is_recorded_as_with_a_fixed_cap(sampled: bool) -> None:
    """Its share doubles from FIRST_CAP to TRACE_CAP as it fills, so it thins at the same
    points, with the same spacing, as a trace capped at TRACE_CAP from the start."""
    budget = PointBudget(total=10 * TRACE_CAP, series=3)
    shared, fixed = Trace("x", rate=sampled).share(budget), Trace("x", rate=sampled)
    assert shared.cap == FIRST_CAP
    for trace in (shared, fixed):
        _feed(trace, 3 * TRACE_CAP, seed=7, sampled=sampled)
    assert shared.cap == TRACE_CAP
    assert shared.t == fixed.t and shared.v == fixed.v and shared.width == fixed.width
    assert shared.halvings == fixed.halvings >= 1


def test_series_together_hold_at_most_the_budget() -> None:
    total, n = 10_000, 40
    budget = PointBudget(total=total, series=n)
    traces = [Trace("x", rate=i % 2 == 0).share(budget) for i in range(n)]
    for i, trace in enumerate(traces):
        _feed(trace, 5_000, seed=i, sampled=trace.rate)
    assert sum(t.cap for t in traces) <= total
    assert sum(len(t.t) for t in traces) <= total
    for trace in traces:
        how = trace.series().thinning
        assert how is not None and how.halvings == trace.halvings >= 1
        assert how.cap == trace.cap <= TRACE_CAP
        assert how.method == ("stride_mean" if trace.rate else "bucket_m4")
        assert (how.samples_per_point is None) != trace.rate
        assert (how.bucket is None) == trace.rate


def test_more_series_than_the_budget_has_room_for_get_the_least_share() -> None:
    """1,000 series for 1,000 points: each gets MIN_CAP, and once the shares have taken the
    budget, a full series thins instead of growing."""
    budget = PointBudget(total=1_000, series=1_000)
    assert budget.first == MIN_CAP
    traces = [Trace("x").share(budget) for _ in range(1_000 // MIN_CAP)]
    _feed(traces[0], 100, seed=1, sampled=False)
    assert traces[0].cap == MIN_CAP and len(traces[0].t) <= MIN_CAP
    assert traces[0].halvings >= 1


def test_a_run_of_many_fast_sampled_series_stays_within_the_budget() -> None:
    """100 flows sampled every 0.1 ms for 2 s: 304 rate series of 20,000 beats each want
    6.1 M points; the run holds at most POINT_BUDGET, and each rate series says it was
    thinned, by means of equal runs of samples, below its share."""
    doc = flows_dumbbell(100, 2.0)
    doc["sample_interval"] = 0.0001
    result = simulate(Scenario.model_validate(doc))
    rates = [k for k in result.series if k.endswith(("goodput_bps", "utilization"))]
    assert len(rates) * 2.0 / 0.0001 > POINT_BUDGET
    assert sum(len(s.t) for s in result.series.values()) <= POINT_BUDGET
    for key in rates:
        how = result.series[key].thinning
        assert how is not None and how.method == "stride_mean" and how.halvings >= 1, key
        assert how.samples_per_point == 2**how.halvings, key
        assert len(result.series[key].t) <= how.cap <= TRACE_CAP
