"""/v1/sweeps: submit (or price) a sweep, follow it, list its runs, cancel it, summarise it."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response, status

from api.conditional import cached_or_tag
from api.deps import CeleryDep, SessionDep, SettingsDep, TenantDep
from api.idempotency import IdempotencyKey
from api.pagination import Page, PageParamsDep
from api.responses import OrjsonResponse, problem_responses
from api.sweeps import service
from api.sweeps.schemas import (
    SweepCreate,
    SweepListItem,
    SweepOut,
    SweepPlan,
    SweepRun,
    SweepSummary,
)
from store.models import Run, RunStatus
from store.sweeps import SweepRepository

router = APIRouter(prefix="/v1/sweeps", tags=["sweeps"])

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


def submit(
    *,
    session: Any,
    celery: Any,
    settings: Any,
    tenant_id: uuid.UUID,
    body: SweepCreate,
    response: Response,
    idempotency_key: str | None,
    dry_run: bool,
    study_preset: str | None = None,
) -> Any:
    """Shared by POST /v1/sweeps and POST /v1/presets/{name}/sweep."""
    if dry_run:
        plan = service.dry_run(
            session, tenant_id=tenant_id, body=body, settings=settings, study_preset=study_preset
        )
        return OrjsonResponse(SweepPlan.model_validate(plan).model_dump(mode="json"))
    sweep, created = service.create(
        session,
        celery,
        tenant_id=tenant_id,
        body=body,
        settings=settings,
        idempotency_key=idempotency_key,
        study_preset=study_preset,
    )
    out = SweepOut.model_validate(service.detail(session, sweep, settings))
    response.headers["Location"] = f"/v1/sweeps/{sweep.id}"
    if not created:
        response.status_code = status.HTTP_200_OK
    elif out.cache_hits == out.run_count:
        response.status_code = status.HTTP_201_CREATED
    return out


@router.post(
    "",
    operation_id="create_sweep",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=SweepOut,
    responses=CREATE_RESPONSES,
)
def create_sweep(
    body: SweepCreate,
    session: SessionDep,
    celery: CeleryDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
    dry_run: DryRun = False,
) -> Any:
    """Submit a sweep: every point is checked first (a bad path or value rejects it whole),
    then one run per point and seed is queued, or served from the result cache. 202 and
    `Location`; 201 when the cache served every run."""
    return submit(
        session=session,
        celery=celery,
        settings=settings,
        tenant_id=tenant_id,
        body=body,
        response=response,
        idempotency_key=idempotency_key,
        dry_run=dry_run,
    )


@router.get("", operation_id="list_sweeps", responses=problem_responses(422))
def list_sweeps(
    session: SessionDep, settings: SettingsDep, tenant_id: TenantDep, page: PageParamsDep
) -> Page[SweepListItem]:
    """Sweeps, newest first."""
    result = SweepRepository(session).list(
        tenant_id=tenant_id, cursor=page.cursor, limit=page.limit
    )
    items = [SweepListItem.model_validate(service.item(session, s, settings)) for s in result.items]
    return Page(items=items, next_cursor=result.next_cursor)


def _finished_etag(request: Request, response: Response, session: Any, sweep: Any) -> Any:
    tag = service.finished_tag(session, sweep)
    if tag is None:
        return None
    return cached_or_tag(request, response, *tag)


@router.get(
    "/{sweep_id}",
    operation_id="get_sweep",
    response_model=SweepOut,
    responses={
        304: {"description": "Not modified (finished sweeps carry an ETag)"},
        **problem_responses(404),
    },
)
def get_sweep(
    sweep_id: uuid.UUID,
    session: SessionDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    request: Request,
    response: Response,
) -> Any:
    """A sweep: its points, status from its runs, counts by status and an estimate of time left."""
    sweep = service.get(session, sweep_id, tenant_id=tenant_id)
    if (cached := _finished_etag(request, response, session, sweep)) is not None:
        return cached
    return service.detail(session, sweep, settings)


def _run_item(run: Run) -> SweepRun:
    error = None
    if run.error:
        error = {
            "type": str(run.error.get("type", "Error")),
            "message": str(run.error.get("message", "")),
        }
    return SweepRun(
        id=run.id,
        point_index=run.point_index or 0,
        replication=run.replication or 0,
        seed=run.seed,
        status=run.status,
        progress=run.progress,
        cache_hit=run.cache_hit,
        source_run_id=run.source_run_id,
        scenario_hash=run.scenario_hash,
        started_at=run.started_at,
        finished_at=run.finished_at,
        error=error,
        links={"self": f"/v1/runs/{run.id}"},
    )


@router.get(
    "/{sweep_id}/runs", operation_id="list_sweep_runs", responses=problem_responses(404, 422)
)
def list_sweep_runs(
    sweep_id: uuid.UUID,
    session: SessionDep,
    tenant_id: TenantDep,
    page: PageParamsDep,
    status: Annotated[RunStatus | None, Query(description="Only runs in this state")] = None,
    point: Annotated[
        int | None, Query(ge=0, le=10**6, description="Only this point's runs")
    ] = None,
) -> Page[SweepRun]:
    """The sweep's runs in point order, then replication; each says whether the cache
    served it and which run's result it shows."""
    sweep = service.get(session, sweep_id, tenant_id=tenant_id)
    result = SweepRepository(session).run_page(
        sweep.id, cursor=page.cursor, limit=page.limit, status=status, point_index=point
    )
    return Page(items=[_run_item(r) for r in result.items], next_cursor=result.next_cursor)


@router.post(
    "/{sweep_id}/cancel",
    operation_id="cancel_sweep",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=SweepOut,
    responses=problem_responses(404),
)
def cancel_sweep(
    sweep_id: uuid.UUID, session: SessionDep, settings: SettingsDep, tenant_id: TenantDep
) -> Any:
    """Cancel the queued runs at once and ask the workers to stop the running ones.
    Idempotent; the runs that finished keep their results."""
    sweep = service.get(session, sweep_id, tenant_id=tenant_id)
    service.cancel(session, sweep)
    return service.detail(session, sweep, settings)


@router.get(
    "/{sweep_id}/summary",
    operation_id="get_sweep_summary",
    response_model=SweepSummary,
    responses={
        304: {"description": "Not modified (finished sweeps carry an ETag)"},
        **problem_responses(404),
    },
)
def get_sweep_summary(
    sweep_id: uuid.UUID,
    session: SessionDep,
    tenant_id: TenantDep,
    request: Request,
    response: Response,
) -> Any:
    """Per point and metric: mean, sd and 95% interval over replications, the paired change
    against the baseline, the best point, each parameter's share of the variance, and
    conclusions in words. While runs are still going, a partial summary (`partial: true`)."""
    sweep = service.get(session, sweep_id, tenant_id=tenant_id)
    if (cached := _finished_etag(request, response, session, sweep)) is not None:
        return cached
    return service.summary(session, sweep)
