"""Sweeps: create one run per point and seed (from the result cache where it can), fan
them out to the workers; status and time left, cancel, the summary. What is checked
before a sweep exists is in ``api.sweeps.plan``."""

from __future__ import annotations

import logging
import math
import uuid
from functools import partial
from typing import Any, Literal

from sqlalchemy.orm import Session

from api.comparison import report
from api.exceptions import NotFound
from api.idempotency import create_once
from api.limits import reserve_runs
from api.sweeps import speed
from api.sweeps.plan import Plan, fingerprint, plan, warnings
from api.sweeps.schemas import (
    RunCounts,
    SweepCreate,
    SweepEstimate,
    SweepLinks,
    SweepListItem,
    SweepOut,
    SweepPlan,
    SweepPoint,
    SweepProgress,
    SweepState,
    SweepStatus,
    SweepSummary,
)
from engine.study import NOT_SIMULATED, flatten
from settings import Settings
from store.models import Run, RunStatus, Sweep
from store.new_runs import add_runs, new_run
from store.sweeps import Progress, SweepRepository
from store.types import utcnow

log = logging.getLogger(__name__)

# --- creating ---------------------------------------------------------------------------


def create(
    session: Session,
    *,
    tenant_id: uuid.UUID,
    body: SweepCreate,
    settings: Settings,
    idempotency_key: str | None,
    study_preset: str | None = None,
) -> tuple[Sweep, bool, list[uuid.UUID], list[str]]:
    """The sweep, whether this request created it (False: an idempotent replay), the
    runs to send, committed and in the order to send them (``api.dispatch.enqueue``), and
    the points' validation warnings."""
    repo = SweepRepository(session)
    print_ = fingerprint(body, study_preset)
    made: list[Run] = []
    warned: list[str] = []

    def insert() -> Sweep:
        p = plan(
            session, tenant_id=tenant_id, body=body, settings=settings, study_preset=study_preset
        )
        sweep, runs = _insert(
            session,
            p,
            tenant_id=tenant_id,
            body=body,
            settings=settings,
            idempotency_key=idempotency_key,
            study_preset=study_preset,
            fingerprint=print_,
        )
        made.extend(runs)
        warned.extend(warnings(p))
        return sweep

    # The key's race may show at the sweep's insert or at its runs'; either way the first
    # request won and this one replays it.
    lookup = partial(repo.by_idempotency_key, tenant_id=tenant_id)
    sweep, created = create_once(
        session, key=idempotency_key, fingerprint=print_, lookup=lookup, insert=insert
    )
    if not created:
        return sweep, False, [], []
    # Replication-major order: every point gets its first result early, so a partial
    # summary covers the whole design before it gets precise.
    queued = sorted(
        (r for r in made if r.status is RunStatus.queued),
        key=lambda r: (r.replication or 0, r.point_index or 0),
    )
    return sweep, True, [r.id for r in queued], warned


def _insert(
    session: Session,
    p: Plan,
    *,
    tenant_id: uuid.UUID,
    body: SweepCreate,
    settings: Settings,
    idempotency_key: str | None,
    study_preset: str | None,
    fingerprint: str,
) -> tuple[Sweep, list[Run]]:
    """The sweep and its runs, added to the session once the tenant's quota has room for
    the runs to simulate."""
    queued = p.run_count - p.cached_count()
    reserve_runs(session, tenant_id=tenant_id, count=queued, settings=settings)
    sweep = SweepRepository(session).create(
        tenant_id=tenant_id,
        name=p.name[:200],
        preset=study_preset,
        spec=body.model_dump(mode="json"),
        points=_point_rows(p),
        seeds=p.seeds,
        baseline_index=p.baseline_index,
        run_count=p.run_count,
        cache=body.cache,
        idempotency_key=idempotency_key,
        request_fingerprint=fingerprint,
    )
    runs = _new_runs(p, tenant_id=tenant_id, sweep_id=sweep.id)
    add_runs(session, runs)
    return sweep, runs


def _point_rows(p: Plan) -> list[dict[str, Any]]:
    """The points as the sweep stores them, with their estimated size."""
    return [
        {
            "index": pt.index,
            "parameters": pt.parameters,
            # JSONB keeps an object's keys in its own order: this keeps the client's.
            "order": list(pt.parameters),
            "scenario_hash": pt.scenario.scenario_hash(),
            "is_baseline": pt.is_baseline,
            "est_events": int(est["events"]),
            "est_packets": int(est["packets"]),
        }
        for pt, est in zip(p.points, p.estimates, strict=True)
    ]


def _new_runs(p: Plan, *, tenant_id: uuid.UUID, sweep_id: uuid.UUID) -> list[Run]:
    """One run per point and seed, born finished where the cache holds its result."""
    now = utcnow()
    runs = []
    for pt in p.points:
        same = pt.scenario.scenario_hash() == p.base_hash
        for r, seed in enumerate(p.seeds):
            runs.append(
                new_run(
                    tenant_id=tenant_id,
                    scenario=pt.scenario,
                    seed=seed,
                    source=p.cached.get((pt.scenario.scenario_hash(), seed)),
                    now=now,
                    sweep_id=sweep_id,
                    point_index=pt.index,
                    replication=r,
                    # A point is the base preset or stored scenario only if unchanged.
                    scenario_id=p.scenario_id if same else None,
                    preset=p.preset if same else None,
                )
            )
    return runs


# --- reading ----------------------------------------------------------------------------


def get(session: Session, sweep_id: uuid.UUID, *, tenant_id: uuid.UUID) -> Sweep:
    sweep = SweepRepository(session).owned(sweep_id, tenant_id=tenant_id)
    if sweep is None:
        raise NotFound(f"no sweep with id {sweep_id}")
    return sweep


def status_of(progress: Progress, total: int, *, cancel_requested: bool = False) -> SweepStatus:
    """From the runs' states. A sweep the client cancelled is `cancelled` once its runs
    have stopped, whatever finished before (its counts say how many succeeded)."""
    c = progress.counts
    done = c[RunStatus.succeeded] + c[RunStatus.failed] + c[RunStatus.cancelled]
    if done >= total:
        if c[RunStatus.succeeded] == total:
            return "succeeded"
        if cancel_requested and c[RunStatus.cancelled]:
            return "cancelled"
        if c[RunStatus.succeeded] == 0:
            return "failed" if c[RunStatus.failed] else "cancelled"
        return "partial"
    if done == 0 and c[RunStatus.running] == 0:
        return "queued"
    return "running"


def progress_of(
    sweep: Sweep, progress: Progress, settings: Settings, measured: speed.Speed | None = None
) -> SweepProgress:
    c = progress.counts
    finished = c[RunStatus.succeeded] + c[RunStatus.failed] + c[RunStatus.cancelled]
    total = max(sweep.run_count, 1)
    fraction = min((finished + progress.running_progress) / total, 1.0)
    remaining = c[RunStatus.queued] + c[RunStatus.running] - progress.running_progress
    eta = method = None
    if finished < sweep.run_count:
        workers = max(settings.worker_concurrency, 1)
        if progress.mean_run_seconds is not None and progress.simulated_done > 0:
            # What is left, in runs, at what a run of this sweep has taken, as many at a
            # time as run now (the workers it has; none running: the workers, at most the
            # runs left). Not the rate since the first run started: that counts the time
            # the workers spent on other work or starting up, and measured early it said
            # 209 s for a sweep that took 94.
            parallel = c[RunStatus.running] or min(workers, c[RunStatus.queued]) or 1
            eta = remaining * progress.mean_run_seconds / parallel
            method = "run_time"
        else:
            per_run = sum(p.get("est_events", 0) for p in sweep.points) / max(len(sweep.points), 1)
            measured = measured or speed.setting(settings)
            runs = max(0, math.ceil(remaining))
            _, eta = speed.wall_seconds(int(per_run * remaining), runs, workers, measured)
            method = "estimate"
    return SweepProgress(
        counts=RunCounts(**{s.value: c[s] for s in RunStatus}),
        finished=finished,
        fraction=fraction,
        eta_seconds=None if eta is None else round(max(eta, 0.0), 3),
        eta_method=method,
    )


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


def _ordered(p: dict[str, Any]) -> dict[str, Any]:
    values = p["parameters"]
    return {k: values[k] for k in p.get("order", values) if k in values}


def _point_out(p: dict[str, Any]) -> SweepPoint:
    return SweepPoint(
        index=p["index"],
        parameters=_ordered(p),
        is_baseline=p["is_baseline"],
        scenario_hash=p["scenario_hash"],
        est_events=p.get("est_events", 0),
    )


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


def cancel(session: Session, sweep: Sweep) -> None:
    """Queued runs are cancelled at once, running ones stop at their next heartbeat.
    Idempotent: a finished sweep is left as it is."""
    SweepRepository(session).cancel(sweep.id)
    session.commit()
    session.refresh(sweep)


def progress_view(
    session: Session, sweep: Sweep, settings: Settings, progress: Progress
) -> SweepState:
    """The sweep's state alone: what a dashboard polls."""
    fields = _item_fields(session, sweep, settings, progress)
    return SweepState(
        **{k: fields[k] for k in SweepState.model_fields if k in fields},
        finished_at=progress.last_finished_at if fields["status"] not in ACTIVE else None,
    )


def summary(session: Session, sweep: Sweep, progress: Progress | None = None) -> SweepSummary:
    repo = SweepRepository(session)
    runs = repo.runs(sweep.id)
    done = [r for r in runs if r.status is RunStatus.succeeded]
    results = repo.results(r.result_run_id for r in done)
    points = [
        report.PointData(p["index"], _ordered(p), bool(p["is_baseline"]), 0) for p in sweep.points
    ]
    for run in runs:
        point = points[run.point_index or 0]
        point.runs += 1
        point.run_ids.append(run.id)
        result = results.get(run.result_run_id)
        if run.status is RunStatus.succeeded and result is not None:
            point.observations.append(
                report.Observation(
                    run.id, run.source_run_id, run.seed, result.flows, result.diagnosis
                )
            )
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
    comparison = report.build(points, paths_of(sweep), partial_note=note)
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


#: What a sweep's documents show: the sweep (`detail`), its state alone (`progress`), its
#: summary (`summary`, which only finished runs change).
View = Literal["detail", "progress", "summary"]
ACTIVE = ("queued", "running")


def version(sweep: Sweep, progress: Progress, view: View) -> str:
    """What a document of `view` depends on, as a string: equal versions, equal documents
    (but for the time-left estimate, recomputed when the runs' state changes)."""
    c = progress.counts
    status = status_of(progress, sweep.run_count, cancel_requested=sweep.cancel_requested)
    parts: tuple[object, ...]
    if view == "summary":
        finished = (c[RunStatus.succeeded], c[RunStatus.failed], c[RunStatus.cancelled])
        parts = (status, finished, progress.last_finished_at)
    else:
        parts = (
            status,
            sweep.cancel_requested,
            tuple(c[s] for s in RunStatus),
            progress.cache_hits,
            round(progress.running_progress, 4),
            progress.first_started_at,
            progress.last_finished_at,
        )
    return "|".join(map(str, parts))


def settled(sweep: Sweep, progress: Progress) -> bool:
    """Every run has finished: the sweep's documents will not change any more."""
    return progress.finished >= sweep.run_count
