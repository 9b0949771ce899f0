"""A summary's intervals stay inside the values a metric can take (api.compare.report):
a loss rate's interval never goes below 0, a delivery ratio's never above 1, a count's
never below 0, and a change never below -100%; an interval that had to move says so."""

from __future__ import annotations

import math
import uuid

import pytest
from engine_helpers import T975_2

from api.compare import report
from api.compare.points import Observation, PointData

pytestmark = pytest.mark.unit


def _point(index: int, flows: list[dict[str, float]], *, baseline: bool = False) -> PointData:
    p = PointData(index, {"x": index}, baseline, len(flows))
    for seed, f in enumerate(flows):
        obs = {"f": {"kind": "tcp", **f}}
        p.observations.append(Observation(uuid.uuid4(), None, seed, obs, {}))
    return p


def _cells(plr: list[float], pdr: list[float], rtx: list[float]) -> list[dict[str, float]]:
    return [
        {"plr": a, "pdr": b, "retransmissions": c} for a, b, c in zip(plr, pdr, rtx, strict=True)
    ]


def test_fractions_and_counts_keep_their_bounds() -> None:
    base = _point(0, _cells([0.02] * 3, [0.98] * 3, [4, 4, 4]), baseline=True)
    point = _point(1, _cells([0.0, 0.0, 0.03], [1.0, 1.0, 0.97], [0, 0, 6]))
    row = report.build([base, point], ["x"]).points[1].metrics["f"]

    # plr: mean 0.01, sd 0.01*sqrt(3); the t-interval's low end (-0.033) is below 0.
    half = T975_2 * 0.01 * math.sqrt(3) / math.sqrt(3)
    plr = row["plr"].ci95
    assert plr is not None and plr.clipped
    assert plr.low == 0.0 and plr.high == pytest.approx(0.01 + half, rel=1e-6)
    # pdr mirrors it: the high end (1.033) is moved to 1.
    pdr = row["pdr"].ci95
    assert pdr is not None and pdr.clipped
    assert pdr.high == 1.0 and pdr.low == pytest.approx(0.99 - half, rel=1e-6)
    # A count (mean 2, sd 2*sqrt(3)) is never below 0; its high end is the t-interval's.
    rtx = row["retransmissions"].ci95
    assert rtx is not None and rtx.clipped and rtx.low == 0.0
    assert rtx.high == pytest.approx(2 + T975_2 * 2, rel=1e-6)

    # plr's change: per-seed -0.02, -0.02, +0.01, mean -0.01, sd sqrt(3e-4); the t-interval
    # (-0.053, 0.033) is cut where the point's loss rate would be below 0: -0.02 (-100%).
    d = row["plr"].delta
    assert d is not None and d.ci95 is not None and d.pct_ci95 is not None
    assert d.mean == pytest.approx(-0.01)
    assert d.ci95.clipped and d.ci95.low == pytest.approx(-0.02)
    assert d.ci95.high == pytest.approx(-0.01 + T975_2 * math.sqrt(3e-4) / math.sqrt(3))
    assert d.pct_ci95.clipped and d.pct_ci95.low == pytest.approx(-100.0)
    assert "clipped" in report.METHOD["interval"]


def test_an_interval_inside_its_bounds_is_the_t_interval_untouched() -> None:
    base = _point(0, _cells([0.5, 0.6, 0.7], [0.5, 0.4, 0.3], [10, 12, 14]), baseline=True)
    point = _point(1, _cells([0.4, 0.5, 0.6], [0.6, 0.5, 0.4], [10, 11, 12]))
    row = report.build([base, point], ["x"]).points[1].metrics["f"]
    plr = row["plr"].ci95
    assert plr is not None and not plr.clipped
    assert (plr.low, plr.high) == pytest.approx(
        (0.5 - T975_2 * 0.1 / math.sqrt(3), 0.5 + T975_2 * 0.1 / math.sqrt(3)), rel=1e-6
    )
    d = row["plr"].delta
    assert d is not None and d.ci95 is not None and not d.ci95.clipped
