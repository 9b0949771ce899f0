"""How a sweep is rendered: the list's item, the sweep document, its points and its state
alone, JSON-ready through their schemas."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from api.runs.present import run_brief
from api.sweeps import speed
from api.sweeps.schemas import (
    SweepLinks,
    SweepListItem,
    SweepOut,
    SweepPoint,
    SweepState,
)
from api.sweeps.state import ACTIVE, progress_of, status_of
from settings import Settings
from store.models import Run, Sweep
from store.sweeps import Progress, SweepRepository


def sweep_run(run: Run) -> dict[str, Any]:
    """A run as a sweep's list of runs shows it, JSON-ready (``SweepRun``)."""
    return {
        **run_brief(run),
        "point_index": run.point_index or 0,
        "replication": run.replication or 0,
    }


def links(sweep_id: uuid.UUID) -> SweepLinks:
    base = f"/v1/sweeps/{sweep_id}"
    return SweepLinks(
        self=base, runs=f"{base}/runs", summary=f"{base}/summary", cancel=f"{base}/cancel"
    )


def _item_fields(
    session: Session, sweep: Sweep, settings: Settings, progress: Progress | None = None
) -> dict[str, Any]:
    progress = progress or SweepRepository(session).progress(sweep.id)
    return dict(
        id=sweep.id,
        name=sweep.name,
        preset=sweep.preset,
        status=status_of(progress, sweep.run_count, cancel_requested=sweep.cancel_requested),
        cancel_requested=sweep.cancel_requested,
        run_count=sweep.run_count,
        cache=sweep.cache,
        cache_hits=progress.cache_hits,
        simulations=sweep.run_count - progress.cache_hits,
        created_at=sweep.created_at,
        progress=progress_of(
            sweep,
            progress,
            settings,
            speed.speed(session, settings) if progress.simulated_done == 0 else None,
        ),
        links=links(sweep.id),
    )


def item(session: Session, sweep: Sweep, settings: Settings) -> SweepListItem:
    return SweepListItem(**_item_fields(session, sweep, settings))


def detail(
    session: Session, sweep: Sweep, settings: Settings, progress: Progress | None = None
) -> SweepOut:
    spec = sweep.spec
    return SweepOut(
        **_item_fields(session, sweep, settings, progress),
        mode=spec.get("mode", "grid"),
        replications=len(sweep.seeds),
        seeds=sweep.seeds,
        baseline_index=sweep.baseline_index,
        parameters=paths_of(sweep),
        spec=spec,
        points=[_point_out(p) for p in sweep.points],
    )


def paths_of(sweep: Sweep) -> list[str]:
    """The swept paths in the order the client gave them."""
    first = sweep.points[0] if sweep.points else {}
    return list(first.get("order") or sweep.spec.get("parameters", {}))


def ordered(p: dict[str, Any]) -> dict[str, Any]:
    values = p["parameters"]
    return {k: values[k] for k in p.get("order", values) if k in values}


def _point_out(p: dict[str, Any]) -> SweepPoint:
    return SweepPoint(
        index=p["index"],
        parameters=ordered(p),
        is_baseline=p["is_baseline"],
        scenario_hash=p["scenario_hash"],
        est_events=p.get("est_events", 0),
    )


def progress_view(
    session: Session, sweep: Sweep, settings: Settings, progress: Progress
) -> SweepState:
    """The sweep's state alone: what a dashboard polls."""
    fields = _item_fields(session, sweep, settings, progress)
    return SweepState(
        **{k: fields[k] for k in SweepState.model_fields if k in fields},
        finished_at=progress.last_finished_at if fields["status"] not in ACTIVE else None,
    )
