"""A comparison reads each run's figures once (api.compare.report): a running sweep's summary
is rebuilt as runs finish from the observations it keeps, and a succeeded run's figures
never change, so neither the same build nor the next one reads them again."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from api.compare import report
from api.compare.points import Observation, PointData

pytestmark = pytest.mark.unit


def _points() -> list[PointData]:
    points = []
    for index in range(3):
        p = PointData(index, {"x": index}, index == 0, 4)
        for seed in range(4):
            flow = {
                "kind": "tcp",
                "completion_time": 10.0 + index + seed / 10,
                "goodput_bps": 1e6 / (1 + index) + seed,
                "retransmissions": seed,
                "plr": float("nan") if seed == 3 else 0.01 * seed,  # not finite: left out
                "time": {"busy": 5.0 + seed, "receive_window": 2.0 * index},
            }
            p.observations.append(Observation(uuid.uuid4(), None, seed, {"f": flow}, {}))
        points.append(p)
    return points


def test_a_runs_figures_are_read_once_across_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    points = _points()
    reads: Counter[tuple[int, str]] = Counter()
    read = report.value

    def counted(flow: Any, metric: str) -> Any:
        reads[(id(flow), metric)] += 1
        return read(flow, metric)

    monkeypatch.setattr(report, "value", counted)
    first = report.build(points, ["x"]).model_dump(mode="json")
    assert reads and max(reads.values()) == 1  # once per run and metric in a build
    read_once = sum(reads.values())

    again = report.build(points, ["x"]).model_dump(mode="json")
    assert sum(reads.values()) == read_once  # and not again in the next
    assert again == first

    # What the kept figures give is what reading them afresh gives.
    monkeypatch.setattr(report, "value", read)
    fresh = [
        PointData(
            p.index,
            p.parameters,
            p.is_baseline,
            p.runs,
            [],
            [
                Observation(o.run_id, o.source_run_id, o.seed, o.flows, o.diagnosis)
                for o in p.observations
            ],
        )
        for p in points
    ]
    assert report.build(fresh, ["x"]).model_dump(mode="json") == first
    plr = first["points"][1]["metrics"]["f"]["plr"]
    assert plr["n"] == 3  # the NaN of seed 3 is not a figure


def _partial(points: list[PointData], counts: list[int]) -> list[PointData]:
    """The same points with only their first `counts` observations (runs still running)."""
    return [
        PointData(p.index, p.parameters, p.is_baseline, p.runs, [], p.observations[:n])
        for p, n in zip(points, counts, strict=True)
    ]


def test_a_rebuild_recomputes_only_the_rows_whose_runs_finished_since(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A running sweep's summary is rebuilt as its runs finish: the rows of points whose
    observations (and baseline's) are those of the last build are taken as they were, the
    others recomputed, and what it gives is what a build from nothing gives."""
    points = _points()
    rows: report.KeptRows = {}
    built: list[int] = []
    row = report._row

    def counted(p: PointData, *args: Any) -> Any:
        built.append(p.index)
        return row(p, *args)

    monkeypatch.setattr(report, "_row", counted)
    stages = [[4, 1, 0], [4, 2, 0], [4, 2, 3], [4, 4, 4]]
    expected_built = [[0, 1, 2], [1], [2], [1, 2]]
    last = None
    for counts, recomputed in zip(stages, expected_built, strict=True):
        built.clear()
        now = _partial(points, counts)
        kept = report.build(now, ["x"], kept=rows).model_dump(mode="json")
        assert built == recomputed, counts
        built.clear()
        assert kept == report.build(now, ["x"]).model_dump(mode="json")  # as from nothing
        assert built == [0, 1, 2]
        last = kept
    assert last is not None and [p["succeeded"] for p in last["points"]] == [4, 4, 4]

    # The baseline's runs changing changes every delta: every row is recomputed.
    built.clear()
    report.build(_partial(points, [3, 4, 4]), ["x"], kept=rows)
    assert built == [0, 1, 2]
