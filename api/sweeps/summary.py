"""A sweep's summary: its runs' results by point, compared as ``api.compare.report``
builds it, and the swept values in base units for its tables."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from api.compare import report
from api.compare.points import Observation, PointData
from api.sweeps.present import ordered, paths_of
from api.sweeps.schemas import SweepSummary
from api.sweeps.state import status_of
from engine.study import NOT_SIMULATED, flatten
from store.models import RunStatus, Sweep
from store.sweeps import Progress, SweepRepository


def build(
    session: Session,
    sweep: Sweep,
    progress: Progress | None = None,
    known: dict[uuid.UUID, Observation] | None = None,
    rows: report.KeptRows | None = None,
) -> SweepSummary:
    """The summary as the runs stand now. `known` keeps the observations of runs already
    read, by run id (a succeeded run's figures never change): a running sweep's summary,
    rebuilt while a dashboard polls it, reads only the results finished since; the new
    ones are added to it. `rows` keeps its points' rows (``report.build``'s `kept`), so a
    rebuild recomputes only the points whose runs finished since."""
    repo = SweepRepository(session)
    runs = repo.outline(sweep.id)
    known = {} if known is None else known
    done = [r for r in runs if r.status is RunStatus.succeeded]
    figures = repo.figures(r.source_run_id or r.id for r in done if r.id not in known)
    points = [PointData(p["index"], ordered(p), bool(p["is_baseline"]), 0) for p in sweep.points]
    for run in runs:
        point = points[run.point_index or 0]
        point.runs += 1
        point.run_ids.append(run.id)
        if run.status is not RunStatus.succeeded:
            continue
        obs = known.get(run.id)
        if obs is None and (found := figures.get(run.source_run_id or run.id)) is not None:
            obs = known[run.id] = Observation(run.id, run.source_run_id, run.seed, *found)
        if obs is not None:
            point.observations.append(obs)
    finished = sum(r.status.finished for r in runs)
    note = None
    if finished < len(runs):
        note = (
            f"Partial summary: {finished} of {len(runs)} runs have finished, "
            "so these figures will change."
        )
    elif len(done) < len(runs):
        note = (
            f"Only {len(done)} of {len(runs)} runs succeeded (the others failed or were "
            "cancelled): the figures are over those."
        )
    comparison = report.build(points, paths_of(sweep), partial_note=note, kept=rows)
    progress = progress or repo.progress(sweep.id)
    return SweepSummary(
        **dict(comparison),
        sweep_id=sweep.id,
        status=status_of(progress, sweep.run_count, cancel_requested=sweep.cancel_requested),
        partial=finished < len(runs),
        finished=finished,
        run_count=sweep.run_count,
    )


def si_parameters(session: Session, sweep: Sweep) -> dict[int, dict[str, Any]]:
    """Each point's swept values in base units, read from one of its runs' scenarios
    (stored in SI): "T1" is 1544000.0 here."""
    paths = paths_of(sweep)
    out: dict[int, dict[str, Any]] = {}
    for run in SweepRepository(session).runs(sweep.id):
        i = run.point_index or 0
        if i not in out and isinstance(run.scenario, dict):
            flat = flatten(run.scenario, skip=NOT_SIMULATED)
            out[i] = {p: flat[p] for p in paths if p in flat}
    return out
