"""What a sweep would run and cost (``dry_run=true``), before anything is created."""

from __future__ import annotations

import uuid

from sqlalchemy.orm import Session

from api.sweeps import speed
from api.sweeps.plan import plan, warnings
from api.sweeps.schemas import (
    SweepCreate,
    SweepEstimate,
    SweepPlan,
    SweepPoint,
)
from settings import Settings


def dry_run(
    session: Session,
    *,
    tenant_id: uuid.UUID,
    body: SweepCreate,
    settings: Settings,
    study_preset: str | None = None,
    measured: speed.Speed | None = None,
) -> SweepPlan:
    """What the sweep would run and cost; nothing is created or sent. `measured`: the
    engine's speed when the caller has it (`speed.probe`), else from the last runs."""
    p = plan(session, tenant_id=tenant_id, body=body, settings=settings, study_preset=study_preset)
    cached = p.cached_count()
    events = packets = 0
    for pt, est in zip(p.points, p.estimates, strict=True):
        new = sum((pt.scenario.scenario_hash(), s) not in p.cached for s in p.seeds)
        events += new * int(est["events"])
        packets += new * int(est["packets"])
    workers = max(settings.worker_concurrency, 1)
    measured = measured or speed.speed(session, settings)
    cpu, wall = speed.wall_seconds(events, p.run_count - cached, workers, measured)
    return SweepPlan(
        warnings=warnings(p),
        point_count=len(p.points),
        replications=len(p.seeds),
        seeds=p.seeds,
        baseline_index=p.baseline_index,
        estimate=SweepEstimate(
            runs=p.run_count,
            cached=cached,
            to_simulate=p.run_count - cached,
            events=events,
            packets=packets,
            cpu_seconds=cpu,
            wall_seconds=wall,
            workers=workers,
            events_per_second=measured.events_per_second,
            engine_setup_seconds=measured.setup_seconds,
            run_overhead_events=measured.run_overhead_events,
            run_overhead_seconds=measured.run_overhead_seconds,
            speed_basis=measured.basis,
            speed_runs=measured.runs,
        ),
        points=[
            SweepPoint(
                index=pt.index,
                parameters=pt.parameters,
                is_baseline=pt.is_baseline,
                scenario_hash=pt.scenario.scenario_hash(),
                est_events=int(est["events"]),
            )
            for pt, est in zip(p.points, p.estimates, strict=True)
        ],
    )
