"""/v1/runs: submit, list, read, cancel."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response, status

from api.conditional import cached_or_tag
from api.deps import CeleryDep, SessionDep, SettingsDep, TenantDep
from api.idempotency import IdempotencyKey
from api.pagination import Page, PageParamsDep
from api.responses import problem_responses
from api.runs import service
from api.runs.schemas import (
    RunCreate,
    RunError,
    RunEventOut,
    RunHistory,
    RunLinks,
    RunListItem,
    RunOut,
    RunSummary,
)
from store.models import Run, RunResult, RunStatus
from store.run_events import RunEventRepository
from store.runs import RunRepository

router = APIRouter(prefix="/v1/runs", tags=["runs"])



def _links(run: Run) -> RunLinks:
    base = f"/v1/runs/{run.id}"
    return RunLinks(
        self=base,
        series=f"{base}/series",
        scenario=f"{base}/scenario",
        cancel=f"{base}/cancel",
        events=f"{base}/events",
    )


def _item_fields(run: Run) -> dict[str, Any]:
    error = None
    if run.error:
        error = RunError(
            type=str(run.error.get("type", "Error")), message=str(run.error.get("message", ""))
        )
    return dict(
        id=run.id,
        status=run.status,
        progress=run.progress,
        cancel_requested=run.cancel_requested,
        scenario_id=run.scenario_id,
        preset=run.preset,
        scenario_name=run.scenario_name,
        scenario_hash=run.scenario_hash,
        seed=run.seed,
        engine_version=run.engine_version,
        cache_hit=run.cache_hit,
        source_run_id=run.source_run_id,
        attempts=run.attempts,
        created_at=run.created_at,
        started_at=run.started_at,
        heartbeat_at=run.heartbeat_at,
        finished_at=run.finished_at,
        error=error,
        links=_links(run),
    )


def to_out(run: Run, result: RunResult | None) -> RunOut:
    summary = diagnosis = None
    if result is not None:
        summary = RunSummary(
            sim_time=result.sim_time,
            wall_time=result.wall_time,
            events=result.events,
            warnings=result.warnings,
            flows=result.flows,
            links=result.links,
            pvcs=result.pvcs,
            extra=result.extra,
        )
        diagnosis = result.diagnosis
    return RunOut(**_item_fields(run), summary=summary, diagnosis=diagnosis)


@router.post(
    "",
    operation_id="create_run",
    status_code=status.HTTP_202_ACCEPTED,
    responses={
        201: {"model": RunOut, "description": "Served from the result cache: already succeeded"},
        200: {
            "model": RunOut,
            "description": "A replay of an earlier request with this Idempotency-Key",
        },
        **problem_responses(422),
    },
)
def create_run(
    body: RunCreate,
    session: SessionDep,
    celery: CeleryDep,
    tenant_id: TenantDep,
    settings: SettingsDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> RunOut:
    """Submit a run: 202 and a queued run, or 201 and a finished one from the cache. A
    scenario estimated over the budget is a 422 (`type` .../over-budget) with `estimate`
    and `budget`; `POST /v1/scenarios/validate` shows both beforehand."""
    run, created = service.create(
        session,
        celery,
        tenant_id=tenant_id,
        body=body,
        idempotency_key=idempotency_key,
        settings=settings,
    )
    response.headers["Location"] = f"/v1/runs/{run.id}"
    if not created:
        response.status_code = status.HTTP_200_OK
    elif run.cache_hit:
        response.status_code = status.HTTP_201_CREATED
    return to_out(run, service.result_of(session, run))


@router.get("", operation_id="list_runs", responses=problem_responses(422))
def list_runs(
    session: SessionDep,
    tenant_id: TenantDep,
    page: PageParamsDep,
    status: Annotated[RunStatus | None, Query(description="Only runs in this state")] = None,
    scenario_id: Annotated[uuid.UUID | None, Query()] = None,
    # No NUL: PostgreSQL cannot compare text holding one (a 500 otherwise).
    preset: Annotated[str | None, Query(max_length=200, pattern=r"^[^\x00]*$")] = None,
) -> Page[RunListItem]:
    """Runs, newest first."""
    result = RunRepository(session).list(
        tenant_id=tenant_id,
        cursor=page.cursor,
        limit=page.limit,
        status=status,
        scenario_id=scenario_id,
        preset=preset,
    )
    return Page(
        items=[RunListItem(**_item_fields(r)) for r in result.items], next_cursor=result.next_cursor
    )


@router.get(
    "/{run_id}",
    operation_id="get_run",
    response_model=RunOut,
    responses={
        304: {"description": "Not modified (finished runs carry a strong ETag)"},
        **problem_responses(404),
    },
)
def get_run(
    run_id: uuid.UUID,
    session: SessionDep,
    tenant_id: TenantDep,
    request: Request,
    response: Response,
) -> Any:
    """A run: status, progress, timestamps, error; summary and diagnosis once it succeeded."""
    run = service.get(session, run_id, tenant_id=tenant_id)
    if run.status.finished:
        cached = cached_or_tag(request, response, run.id, run.status.value, run.finished_at)
        if cached is not None:
            return cached
    return to_out(run, service.result_of(session, run))


@router.get("/{run_id}/scenario", operation_id="get_run_scenario", responses=problem_responses(404))
def get_run_scenario(
    run_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep
) -> dict[str, Any]:
    """The scenario the run simulates, in canonical form: post it back to reproduce the run."""
    return service.get(session, run_id, tenant_id=tenant_id).scenario


@router.post(
    "/{run_id}/cancel",
    operation_id="cancel_run",
    status_code=status.HTTP_202_ACCEPTED,
    responses=problem_responses(404, 409),
)
def cancel_run(run_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep) -> RunOut:
    """Cancel a queued run at once, or ask the worker running it to stop (cooperatively)."""
    run = service.cancel(session, run_id, tenant_id=tenant_id)
    return to_out(run, None)


@router.get("/{run_id}/events", operation_id="get_run_events", responses=problem_responses(404))
def get_run_events(run_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep) -> RunHistory:
    """The run's history, oldest first: queued, sent, each start (attempt, worker), each
    retry or take-back and why, and how it ended."""
    run = service.get(session, run_id, tenant_id=tenant_id)
    events = RunEventRepository(session).history(run.id)
    return RunHistory(
        run_id=run.id,
        status=run.status,
        attempts=run.attempts,
        events=[
            RunEventOut(at=e.at, event=e.event, attempt=e.attempt, worker=e.worker, detail=e.detail)
            for e in events
        ],
    )
