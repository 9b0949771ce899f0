"""/v1/advice: ask what would make a scenario meet a target, follow it, list its runs, cancel
it, read its curves; and a run's remedies checked by simulation (/v1/runs/{id}/remedies)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from celery import Celery
from fastapi import APIRouter, Body, Query, Request, Response, status
from sqlalchemy.orm import Session

from api.advice import curves, present, service
from api.advice.schemas import (
    AdviceCreate,
    AdviceListItem,
    AdviceOut,
    AdviceRun,
    RemedyCheckCreate,
    RunRemedies,
)
from api.cache import Conditional, Found
from api.compare import table
from api.db import Db
from api.deps import CachedDep, CeleryDep, DbDep, SettingsDep, TenantDep
from api.dispatch import wake
from api.idempotency import IdempotencyKey
from api.pagination import Page, PageParamsDep
from api.responses import OrjsonResponse, created_status, problem_responses
from store.models import RunStatus, StoredWorkflow
from store.workflows import WorkflowRepository

router = APIRouter(prefix="/v1/advice", tags=["advice"])
#: A run's remedies: /v1/runs/{run_id}/remedies and .../remedies/check.
runs_router = APIRouter(prefix="/v1/runs", tags=["advice"])

Kind = Annotated[Literal["advice", "remedy_check"] | None, Query(description="Only this kind")]


def _document(session: Session, wf_id: uuid.UUID) -> dict[str, Any]:
    wf = WorkflowRepository(session).get(wf_id)
    assert wf is not None
    return present.detail(session, wf)


async def _accepted(db: Db, celery: Celery, wf: StoredWorkflow, created: bool) -> Response:
    """A workflow just stored (202, its first step asked of a worker) or found (200)."""
    if created:
        await wake(celery, wf.id)
    return OrjsonResponse(
        await db.read(_document, wf.id),
        status_code=created_status(created, served=False),  # a workflow always has steps to run
        headers={"Location": f"/v1/advice/{wf.id}"},
    )


@router.post(
    "",
    operation_id="create_advice",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=AdviceOut,
    responses={
        200: {
            "model": AdviceOut,
            "description": "A replay of an earlier request with this Idempotency-Key",
        },
        **problem_responses(422),
    },
)
async def create_advice(
    body: AdviceCreate,
    db: DbDep,
    celery: CeleryDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Ask what would make the scenario meet a target: the workers search the levers by
    packet-level simulation, in rounds, within the run budget (every run an ordinary run,
    from the result cache where it can be). 202 and `Location`; follow it with
    `GET /v1/advice/{id}` or its `stream`. A bad target, lever or scenario is a 422 naming
    the field."""
    wf, created = await db(
        service.create,
        tenant_id=tenant_id,
        body=body,
        settings=settings,
        idempotency_key=idempotency_key,
    )
    return await _accepted(db, celery, wf, created)


@router.get(
    "",
    operation_id="list_advice",
    response_model=Page[AdviceListItem],
    responses=problem_responses(422),
)
async def list_advice(
    db: DbDep, tenant_id: TenantDep, page: PageParamsDep, kind: Kind = None
) -> Response:
    """Advice and remedy checks, newest first."""

    found = await db.read(
        service.list_page, tenant_id=tenant_id, kind=kind, cursor=page.cursor, limit=page.limit
    )
    return OrjsonResponse(found)


Render = Callable[[Session, StoredWorkflow], Response]


async def _finished_document(
    db: Db,
    cached: Conditional,
    advice_id: uuid.UUID,
    tenant_id: uuid.UUID,
    render: Render,
) -> Response:
    """A document of the advice: with a strong ETag (and kept in the response cache) once
    it has finished and its runs have stopped too, when it no longer changes."""

    def query(session: Session) -> Found:
        wf = service.get(session, advice_id, tenant_id=tenant_id)
        # Finished, and its runs too (a cancelled advice's runs stop after it has).
        settled = wf.status.finished and not WorkflowRepository(session).active_runs(wf.id)
        tag = cached.tag(wf.id, wf.status.value, wf.updated_at) if settled else None
        if tag is not None and tag.current:
            return tag, None
        response = render(session, wf)
        return tag, lambda: response

    async def find() -> Found:
        return await db.read(query)

    return await cached.answer(find)


@router.get(
    "/{advice_id}",
    operation_id="get_advice",
    response_model=AdviceOut,
    responses={
        304: {"description": "Not modified (finished advice carries an ETag)"},
        **problem_responses(404),
    },
)
async def get_advice(
    advice_id: uuid.UUID, db: DbDep, cached: CachedDep, tenant_id: TenantDep
) -> Response:
    """An advice: status, progress, and the report so far (final once succeeded): the fixes
    that meet the target ranked cheapest first, each with its measured outcome, interval and
    cost; the levers that cannot reach it and why; the best reachable value."""

    def render(session: Session, wf: StoredWorkflow) -> Response:
        return OrjsonResponse(present.detail(session, wf))

    return await _finished_document(db, cached, advice_id, tenant_id, render)


@router.get(
    "/{advice_id}/runs",
    operation_id="list_advice_runs",
    response_model=Page[AdviceRun],
    responses=problem_responses(404, 422),
)
async def list_advice_runs(
    advice_id: uuid.UUID,
    db: DbDep,
    tenant_id: TenantDep,
    page: PageParamsDep,
    status: Annotated[RunStatus | None, Query(description="Only runs in this state")] = None,
) -> Response:
    """The runs the advice made, in the order it made them, each with the changes it tried."""

    found = await db.read(
        service.runs_page,
        advice_id,
        tenant_id=tenant_id,
        cursor=page.cursor,
        limit=page.limit,
        status=status,
    )
    return OrjsonResponse(found)


@router.post(
    "/{advice_id}/cancel",
    operation_id="cancel_advice",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=AdviceOut,
    responses=problem_responses(404),
)
async def cancel_advice(advice_id: uuid.UUID, db: DbDep, tenant_id: TenantDep) -> Response:
    """Stop it: its queued runs are cancelled at once, running ones stop at their next
    heartbeat; the report keeps what was measured. Idempotent."""

    doc = await db(service.cancel, advice_id, tenant_id=tenant_id)
    return OrjsonResponse(doc, status_code=status.HTTP_202_ACCEPTED)


@router.get(
    "/{advice_id}/curves",
    operation_id="get_advice_curves",
    response_model=None,
    responses={
        200: curves.responses(),
        304: {"description": "Not modified (finished advice carries an ETag)"},
        **problem_responses(404, 422),
    },
)
async def get_advice_curves(
    advice_id: uuid.UUID,
    db: DbDep,
    cached: CachedDep,
    tenant_id: TenantDep,
    request: Request,
    format: table.TableFormat = None,
) -> Response:
    """For each lever, the target's metric against the lever's value: the measured points
    (mean and 95% interval over the seeds) beside the analytic bound, as QuickPredict draws
    them. As a table (`format=csv` or `Accept: text/csv`; `format=records` for JSON): one row
    per lever and value."""
    shape = table.wants(request, format)

    def render(session: Session, wf: StoredWorkflow) -> Response:
        return curves.respond(wf, shape, None)

    return await _finished_document(db, cached, advice_id, tenant_id, render)


# --- a run's remedies ----------------------------------------------------------------------


@runs_router.post(
    "/{run_id}/remedies/check",
    operation_id="check_run_remedies",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=AdviceOut,
    responses={
        200: {"model": AdviceOut, "description": "The check already made (or under way)"},
        **problem_responses(404, 409, 422),
    },
)
async def check_run_remedies(
    run_id: uuid.UUID,
    db: DbDep,
    celery: CeleryDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    body: Annotated[RemedyCheckCreate | None, Body()] = None,
) -> Response:
    """Simulate each remedy of a succeeded run's diagnosis on the run's seeds, through the
    normal run machinery and the result cache: each gets its measured effect ("be 32 → 100
    kbit: 986 → 538 s (−45%)"); one that makes things worse is reported so, never
    recommended. 202 and `Location` (the check, an advice of kind `remedy_check`); 200 with
    the check already made for this run. `GET /v1/runs/{id}/remedies` shows the result."""
    wf, created = await db(
        service.create_check,
        run_id,
        tenant_id=tenant_id,
        body=body or RemedyCheckCreate(),
        settings=settings,
    )
    return await _accepted(db, celery, wf, created)


@runs_router.get(
    "/{run_id}/remedies",
    operation_id="get_run_remedies",
    response_model=RunRemedies,
    responses=problem_responses(404),
)
async def get_run_remedies(run_id: uuid.UUID, db: DbDep, tenant_id: TenantDep) -> Response:
    """A run's remedies: each flow's, as its diagnosis predicts them (from the analytic
    bounds), and, once checked (`POST .../remedies/check`), the check with each remedy's
    measured effect. Not part of the run's own document: a finished run's document never
    changes (it is cached for a day), and a check can come at any time."""

    return OrjsonResponse(await db.read(service.remedies, run_id, tenant_id=tenant_id))
