"""/v1/sweeps: submit (or price) a sweep, follow it, list its runs, cancel it, summarise it."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from typing import Annotated, Any

import anyio
from cachetools import LRUCache
from celery import Celery
from fastapi import APIRouter, Body, Query, Request, Response, status
from sqlalchemy.orm import Session

from api.cache import Conditional, ListPage, PageSource
from api.compare import report, table
from api.compare.points import Observation
from api.conditional import REPRESENTATION_VERSION
from api.db import Db
from api.deps import CachedDep, CeleryDep, DbDep, SettingsDep, TenantDep
from api.dispatch import enqueue
from api.exceptions import InvalidScenario, NotFound, field_error
from api.idempotency import IdempotencyKey
from api.pagination import Page, PageParamsDep
from api.responses import OrjsonResponse, created_status, problem_responses
from api.sweeps import present, pricing, service, speed, state
from api.sweeps import summary as sweep_summary
from api.sweeps.schemas import (
    PresetSweepCreate,
    SweepCreate,
    SweepListItem,
    SweepOut,
    SweepPlan,
    SweepRun,
    SweepState,
    SweepSummary,
)
from engine.presets import list_presets, load_study
from settings import Settings
from store.models import RunStatus, Sweep
from store.sweeps import STATE_PROBE, Progress, SweepRepository

router = APIRouter(prefix="/v1/sweeps", tags=["sweeps"])
#: POST /v1/presets/{name}/sweep: a study preset launched as a sweep.
preset_router = APIRouter(prefix="/v1/presets", tags=["presets"])

DryRun = Annotated[
    bool,
    Query(description="Check and price the sweep (runs, cached, estimated cost); create nothing"),
]
CREATE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "model": SweepPlan | SweepOut,
        "description": "`dry_run=true`: the plan and its cost, nothing created; or a replay "
        "of an earlier request with this Idempotency-Key",
    },
    201: {"model": SweepOut, "description": "Every run served from the result cache: done"},
    **problem_responses(422),
}


async def submit(
    *,
    db: Db,
    celery: Celery,
    settings: Settings,
    tenant_id: uuid.UUID,
    body: SweepCreate,
    idempotency_key: str | None,
    dry_run: bool,
    study_preset: str | None = None,
) -> Response:
    """Shared by POST /v1/sweeps and POST /v1/presets/{name}/sweep."""
    if dry_run:
        measured = await db(speed.speed, settings)
        if measured.basis == "setting":
            # Too few runs yet to know this machine's speed: measure it (off the loop).
            measured = await anyio.to_thread.run_sync(speed.probe, settings)
        plan = await db(
            pricing.dry_run,
            tenant_id=tenant_id,
            body=body,
            settings=settings,
            study_preset=study_preset,
            measured=measured,
        )
        return OrjsonResponse(plan.model_dump(mode="json"))
    sweep, created, to_send, warnings = await db(
        service.create,
        tenant_id=tenant_id,
        body=body,
        settings=settings,
        idempotency_key=idempotency_key,
        study_preset=study_preset,
    )
    await enqueue(db, celery, to_send)
    out = await db(_detail, sweep.id, settings)
    out.warnings = warnings if created else None
    code = created_status(created, out.cache_hits == out.run_count)
    return OrjsonResponse(
        out.model_dump(mode="json"),
        status_code=code,
        headers={"Location": f"/v1/sweeps/{sweep.id}"},
    )


def _detail(session: Session, sweep_id: uuid.UUID, settings: Settings) -> SweepOut:
    sweep = SweepRepository(session).get(sweep_id)
    assert sweep is not None
    return present.detail(session, sweep, settings)


@router.post(
    "",
    operation_id="create_sweep",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=SweepOut,
    responses=CREATE_RESPONSES,
)
async def create_sweep(
    body: SweepCreate,
    db: DbDep,
    celery: CeleryDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    idempotency_key: IdempotencyKey = None,
    dry_run: DryRun = False,
) -> Response:
    """Submit a sweep: every point is checked first (a bad path or value rejects it whole),
    then one run per point and seed is queued, or served from the result cache. 202 and
    `Location`; 201 when the cache served every run. More runs queued or running than the
    tenant may have (its own, with the sweep's) is a 429 with `Retry-After`."""
    return await submit(
        db=db,
        celery=celery,
        settings=settings,
        tenant_id=tenant_id,
        body=body,
        idempotency_key=idempotency_key,
        dry_run=dry_run,
    )


@router.get(
    "",
    operation_id="list_sweeps",
    response_model=Page[SweepListItem],
    responses=problem_responses(422),
)
async def list_sweeps(
    db: DbDep, settings: SettingsDep, tenant_id: TenantDep, page: PageParamsDep
) -> Response:
    """Sweeps, newest first."""

    page_ = await db(
        service.list_page,
        tenant_id=tenant_id,
        cursor=page.cursor,
        limit=page.limit,
        settings=settings,
    )
    return OrjsonResponse(page_.model_dump(mode="json"))


def _render(session: Session, filters: dict[str, Any]) -> ListPage:
    """A sweep document (`filters`: tenant_id, sweep_id, view, shape, settings) with the
    version of the runs' state it shows: what the response cache keeps and re-reads."""
    sweep = service.get(session, filters["sweep_id"], tenant_id=filters["tenant_id"])
    progress = SweepRepository(session).progress(sweep.id)
    view: state.View = filters["view"]
    version = state.version(sweep, progress, view)
    doc: dict[str, Any]
    if view == "summary":
        doc = _summary(session, sweep, progress, version)
    elif view == "progress":
        doc = present.progress_view(session, sweep, filters["settings"], progress).model_dump(
            mode="json"
        )
    else:
        doc = present.detail(session, sweep, filters["settings"], progress).model_dump(mode="json")
    shape = filters["shape"]
    si = _si_parameters(session, sweep) if shape != "json" else None
    response = table.respond(doc, shape, None, si)
    raw = f"{REPRESENTATION_VERSION}|sweep|{sweep.id}|{view}|{shape}|{version}"
    etag = '"' + hashlib.sha256(raw.encode()).hexdigest()[:40] + '"'
    return ListPage(
        version,
        etag,
        bytes(response.body),
        media_type=response.media_type or "application/json",
        final=state.settled(sweep, progress),
    )


#: The summary last built for each sweep, with the version of its finished runs and when it
#: was built, so that its JSON, CSV and records are rendered from one build (per process),
#: and a running sweep's from one build per SETTLE["summary"] seconds; and the swept values
#: in base units, which never change. Rendering runs in threads: the caches are locked.
_SUMMARIES: LRUCache[uuid.UUID, tuple[str, float, dict[str, Any]]] = LRUCache(maxsize=16)
_SI: LRUCache[uuid.UUID, dict[int, dict[str, Any]]] = LRUCache(maxsize=256)
#: The observations of each sweep's succeeded runs read so far, and its points' rows
#: (sweep_summary.build): a rebuild reads only the results finished since and recomputes
#: only the points they belong to. A 500-run sweep's are a few MB.
_OBSERVED: LRUCache[uuid.UUID, tuple[dict[uuid.UUID, Observation], report.KeptRows]] = LRUCache(
    maxsize=4
)
_LOCK = threading.Lock()


def _summary(session: Session, sweep: Sweep, progress: Progress, version: str) -> dict[str, Any]:
    now = time.monotonic()
    with _LOCK:
        kept = _SUMMARIES.get(sweep.id)
    if kept is not None:
        built_version, built, found = kept
        settled = state.settled(sweep, progress)
        if built_version == version or (not settled and now - built < SETTLE["summary"]):
            return found
    with _LOCK:
        known, rows = _OBSERVED.setdefault(sweep.id, ({}, {}))
    found = sweep_summary.build(session, sweep, progress, known, rows).model_dump(mode="json")
    with _LOCK:
        _SUMMARIES[sweep.id] = (version, now, found)
    return found


def _si_parameters(session: Session, sweep: Sweep) -> dict[int, dict[str, Any]]:
    """The table's parameter columns are in base units, read from the runs' scenarios."""
    with _LOCK:
        found = _SI.get(sweep.id)
    if found is None:
        found = sweep_summary.si_parameters(session, sweep)
        with _LOCK:
            _SI[sweep.id] = found
    return found


#: Seconds a running sweep's documents are answered as built (api/cache.py, settling
#: pages), by view: its progress (a few hundred bytes, cheap to build) is at most 2 s old,
#: its document (the points and spec beside the same counts) and its summary (statistics
#: over the finished runs, in three shapes) at most 5 s. Its status is read on every poll
#: whatever the view (while held, by the state probe alone: _status_now). With 20 panels
#: polling each second on 2 API processes, holding every view 1 s cost the API 4.4-6.5%
#: of a core more than nobody looking and 2 s 3.9-5.8%, and the sweep, its workers on the
#: same two cores, 4-13% longer; these holds, with held polls reading the probe, 1.8-2.6%
#: and +1.3% on average over eight rounds (bench/dashboard_load.py, 500 runs of 50 MB).
SETTLE: dict[state.View, float] = {"progress": 2.0, "detail": 5.0, "summary": 5.0}


def _version(session: Session, filters: dict[str, Any]) -> str:
    head, progress = service.poll(session, filters["sweep_id"], tenant_id=filters["tenant_id"])
    return state.version(head, progress, filters["view"])


async def _status_now(db: Db, filters: dict[str, Any]) -> str | None:
    """A running sweep's status by the state probe (store.sweeps.STATE_PROBE), what a held
    document's poll reads: None once it has no run to go (or it is not found), when its
    counts decide."""
    params = {"sweep_id": filters["sweep_id"], "tenant_id": filters["tenant_id"]}
    row = await db.first(STATE_PROBE, params)
    return None if row is None else state.status_while_active(row[2], row[3])


#: A sweep's documents as the response cache reads them, by view: a poll costs the state
#: probe while the document is held, else the short read of its runs' counts; the
#: document is rebuilt (once per process, however many
#: clients poll) only when those changed, and at most once per its SETTLE seconds (or 50
#: builds' time) while runs finish: a dashboard sees a running sweep's figures at most that
#: old, and its status (a version's first part) at once. Once every run has finished, a
#: kept finished document.
SWEEP_DOCUMENTS: dict[state.View, PageSource] = {
    view: PageSource(
        version=_version,
        render=_render,
        settle=hold,
        urgent=lambda v: v.split("|", 1)[0],
        urgent_now=_status_now,
    )
    for view, hold in SETTLE.items()
}


async def _polled(
    cached: Conditional,
    sweep_id: uuid.UUID,
    tenant_id: uuid.UUID,
    view: state.View,
    settings: Settings,
    shape: str = "json",
) -> Response:
    filters: dict[str, Any] = dict(
        tenant_id=tenant_id, sweep_id=sweep_id, view=view, shape=shape, settings=settings
    )
    return await cached.settling(SWEEP_DOCUMENTS[view], filters)


@router.get(
    "/{sweep_id}",
    operation_id="get_sweep",
    response_model=SweepOut,
    responses={
        304: {"description": "Not modified (finished sweeps carry an ETag)"},
        **problem_responses(404),
    },
)
async def get_sweep(
    sweep_id: uuid.UUID,
    db: DbDep,
    cached: CachedDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
) -> Response:
    """A sweep: its points, status from its runs, counts by status and an estimate of time
    left. Carries an ETag while it runs too: `If-None-Match` gets a 304 until its runs'
    state changes, and while they run it is rebuilt at most every 5 s (its status is current
    on every poll). To poll, `GET /v1/sweeps/{id}/progress` is the same state, without the
    points and spec, at most 2 s old."""
    return await _polled(cached, sweep_id, tenant_id, "detail", settings)


@router.get(
    "/{sweep_id}/progress",
    operation_id="get_sweep_progress",
    response_model=SweepState,
    responses={
        304: {"description": "Not modified: the runs' state is what the client's ETag names"},
        **problem_responses(404),
    },
)
async def get_sweep_progress(
    sweep_id: uuid.UUID, cached: CachedDep, settings: SettingsDep, tenant_id: TenantDep
) -> Response:
    """The sweep's state alone, for dashboards: status, counts by status, fraction done and
    time left, in a few hundred bytes, with an ETag (`If-None-Match`: a 304 until a run's
    state or progress changes; while runs go it is rebuilt at most every 2 s, its status
    current on every poll)."""
    return await _polled(cached, sweep_id, tenant_id, "progress", settings)


@router.get(
    "/{sweep_id}/runs",
    operation_id="list_sweep_runs",
    response_model=Page[SweepRun],
    responses=problem_responses(404, 422),
)
async def list_sweep_runs(
    sweep_id: uuid.UUID,
    db: DbDep,
    tenant_id: TenantDep,
    page: PageParamsDep,
    status: Annotated[RunStatus | None, Query(description="Only runs in this state")] = None,
    point: Annotated[
        int | None, Query(ge=0, le=10**6, description="Only this point's runs")
    ] = None,
) -> Response:
    """The sweep's runs in point order, then replication; each says whether the cache
    served it and which run's result it shows."""

    found = await db(
        service.run_page,
        sweep_id,
        tenant_id=tenant_id,
        cursor=page.cursor,
        limit=page.limit,
        status=status,
        point_index=point,
    )
    return OrjsonResponse(found)


@router.post(
    "/{sweep_id}/cancel",
    operation_id="cancel_sweep",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=SweepOut,
    responses=problem_responses(404),
)
async def cancel_sweep(
    sweep_id: uuid.UUID,
    db: DbDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    cached: CachedDep,
) -> Response:
    """Cancel the queued runs at once and ask the workers to stop the running ones.
    Idempotent; the runs that finished keep their results."""

    out = await db(service.cancel, sweep_id, tenant_id=tenant_id, settings=settings)
    cached.forget(f"/v1/sweeps/{sweep_id}")  # read anew, not after the pages' hold
    return OrjsonResponse(out.model_dump(mode="json"), status_code=status.HTTP_202_ACCEPTED)


@router.get(
    "/{sweep_id}/summary",
    operation_id="get_sweep_summary",
    response_model=None,
    responses={
        200: table.responses(SweepSummary, "The summary"),
        304: {"description": "Not modified (finished sweeps carry an ETag)"},
        **problem_responses(404, 422),
    },
)
async def get_sweep_summary(
    sweep_id: uuid.UUID,
    cached: CachedDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    request: Request,
    format: table.TableFormat = None,
) -> Response:
    """Per point and metric: mean, sd and 95% interval over replications, the paired change
    against the baseline, the best point, each parameter's share of the variance, and
    conclusions in words. While runs are still going, a partial summary (`partial: true`).
    As a table (`format=csv` or `Accept: text/csv`; `format=records` for JSON): one row per
    point and flow, a column per parameter (in base units) and per metric statistic.
    Carries an ETag while partial too; it is rebuilt only when a run finishes, and at most
    every 5 s while runs do (its status is current on every poll)."""
    shape = table.wants(request, format)
    return await _polled(cached, sweep_id, tenant_id, "summary", settings, shape)


@preset_router.post(
    "/{name}/sweep",
    operation_id="create_preset_sweep",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=SweepOut,
    responses={**CREATE_RESPONSES, **problem_responses(401, 404, 422)},
)
async def create_preset_sweep(
    name: str,
    db: DbDep,
    celery: CeleryDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    body: Annotated[PresetSweepCreate | None, Body()] = None,
    idempotency_key: IdempotencyKey = None,
    dry_run: DryRun = False,
) -> Response:
    """Launch a study preset (`*-study`, e.g. `riverbed-study`) as a sweep, optionally with
    other replications, seed or cache policy; `dry_run=true` prices it. Same answers as
    POST /v1/sweeps."""
    info = next((p for p in list_presets() if p.name == name), None)
    if info is None:
        raise NotFound(f"no preset named {name!r}")
    if info.kind != "study":
        raise InvalidScenario(
            f"preset {name!r} is a single scenario: run it with POST /v1/runs",
            errors=[field_error(["path", "name"], "not a study preset", "not_a_study")],
        )
    overrides = (body or PresetSweepCreate()).model_dump(exclude_none=True)
    sweep = SweepCreate.model_validate({**load_study(name), **overrides})
    return await submit(
        db=db,
        celery=celery,
        settings=settings,
        tenant_id=tenant_id,
        body=sweep,
        idempotency_key=idempotency_key,
        dry_run=dry_run,
        study_preset=name,
    )
