"""/v1/runs: submit, list, read, cancel."""

from __future__ import annotations

import hashlib
import uuid
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import APIRouter, Query, Request, Response, status
from sqlalchemy.orm import Session

from api.cache import Found, ListPage, PageSource
from api.conditional import CACHE_HEADERS, REPRESENTATION_VERSION, not_modified
from api.deps import CachedDep, CeleryDep, DbDep, SettingsDep, TenantDep
from api.dispatch import enqueue
from api.idempotency import IdempotencyKey
from api.pagination import Page, PageParamsDep
from api.responses import OrjsonResponse, created_status, problem_responses, render_json
from api.runs import service
from api.runs.present import run_document, run_fields
from api.runs.schemas import RunCreate, RunHistory, RunListItem, RunOut
from api.runs.service import CaptureFile
from store.models import RunStatus
from store.run_list import RunListRepository

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.post(
    "",
    operation_id="create_run",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RunOut,
    responses={
        201: {"model": RunOut, "description": "Served from the result cache: already succeeded"},
        200: {
            "model": RunOut,
            "description": "A replay of an earlier request with this Idempotency-Key",
        },
        **problem_responses(422),
    },
)
async def create_run(
    body: RunCreate,
    db: DbDep,
    celery: CeleryDep,
    tenant_id: TenantDep,
    settings: SettingsDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Submit a run: 202 and a queued run, or 201 and a finished one from the cache. A
    scenario estimated over the budget is a 422 (`type` .../over-budget) with `estimate`
    and `budget`; `POST /v1/scenarios/validate` shows both beforehand. More runs queued or
    running than the tenant may have is a 429 with `Retry-After`."""
    run, created = await db(
        service.create,
        tenant_id=tenant_id,
        body=body,
        idempotency_key=idempotency_key,
        settings=settings,
    )
    if created and run.status is RunStatus.queued:
        await enqueue(db, celery, [run.id])
    code = created_status(created, run.cache_hit)
    result = await db.read(service.result_of, run) if run.status is RunStatus.succeeded else None
    doc = run_document(run, result)
    doc["warnings"] = service.warnings_of(run) if created else None
    return OrjsonResponse(doc, status_code=code, headers={"Location": f"/v1/runs/{run.id}"})


@router.get(
    "",
    operation_id="list_runs",
    response_model=Page[RunListItem],
    responses={
        304: {"description": "Not modified: the page is what the client's ETag names"},
        **problem_responses(422),
    },
)
async def list_runs(
    tenant_id: TenantDep,
    page: PageParamsDep,
    cached: CachedDep,
    status: Annotated[RunStatus | None, Query(description="Only runs in this state")] = None,
    scenario_id: Annotated[uuid.UUID | None, Query()] = None,
    # No NUL: PostgreSQL cannot compare text holding one (a 500 otherwise).
    preset: Annotated[str | None, Query(max_length=200, pattern=r"^[^\x00]*$")] = None,
) -> Response:
    """Runs, newest first. Carries an ETag: `If-None-Match` gets a 304 while the page is
    unchanged."""
    filters: dict[str, Any] = dict(
        tenant_id=tenant_id,
        cursor=page.cursor,
        limit=page.limit,
        status=status,
        scenario_id=scenario_id,
        preset=preset,
    )
    return await cached.page(RUN_PAGES, filters)


def _render_list_page(session: Session, filters: dict[str, Any]) -> ListPage:
    """A page of the runs list (`RunListRepository.list`'s arguments), rendered, with its
    version."""
    listed = RunListRepository(session).list(**filters)
    body = {
        "items": [run_fields(r) for r in listed.page.items],
        "next_cursor": listed.page.next_cursor,
    }
    etag = _list_etag(filters["limit"], listed.version)
    return ListPage(listed.version, etag, render_json(body))


def _list_version(session: Session, filters: dict[str, Any]) -> str:
    return RunListRepository(session).list_version(**filters)


#: The runs list as the response cache reads it: a dashboard polls it, and reading and
#: rendering its rows cost each request more than everything else it does.
RUN_PAGES = PageSource(version=_list_version, render=_render_list_page)


def _list_etag(limit: int, version: str) -> str:
    """A page's bytes follow from its rows (their version) and `limit` (how many of them
    it shows, and so whether it has a next cursor)."""
    raw = f"{REPRESENTATION_VERSION}|runs|{limit}|{version}"
    return '"' + hashlib.sha256(raw.encode()).hexdigest()[:40] + '"'


@router.get(
    "/{run_id}",
    operation_id="get_run",
    response_model=RunOut,
    responses={
        304: {"description": "Not modified (finished runs carry a strong ETag)"},
        **problem_responses(404),
    },
)
async def get_run(
    run_id: uuid.UUID, db: DbDep, tenant_id: TenantDep, cached: CachedDep
) -> Response:
    """A run: status, progress, timestamps, error; summary and diagnosis once it succeeded."""

    async def find() -> Found:
        run, result = await db.read(service.get_with_result, run_id, tenant_id=tenant_id)
        tag = cached.tag(run.id, run.status.value, run.finished_at) if run.status.finished else None
        return tag, lambda: OrjsonResponse(run_document(run, result))

    return await cached.answer(find)


@router.get("/{run_id}/scenario", operation_id="get_run_scenario", responses=problem_responses(404))
async def get_run_scenario(run_id: uuid.UUID, db: DbDep, tenant_id: TenantDep) -> Response:
    """The scenario the run simulates, in canonical form: post it back to reproduce the run."""
    run = await db.read(service.get, run_id, tenant_id=tenant_id)
    return OrjsonResponse(run.scenario)


@router.post(
    "/{run_id}/cancel",
    operation_id="cancel_run",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=RunOut,
    responses=problem_responses(404, 409),
)
async def cancel_run(run_id: uuid.UUID, db: DbDep, tenant_id: TenantDep) -> Response:
    """Cancel a queued run at once, or ask the worker running it to stop (cooperatively)."""
    run = await db(service.cancel, run_id, tenant_id=tenant_id)
    return OrjsonResponse(run_document(run, None), status_code=status.HTTP_202_ACCEPTED)


@router.get(
    "/{run_id}/events",
    operation_id="get_run_events",
    response_model=RunHistory,
    responses=problem_responses(404),
)
async def get_run_events(run_id: uuid.UUID, db: DbDep, tenant_id: TenantDep) -> Response:
    """The run's history, oldest first: queued, enqueued, each start (attempt, worker), each
    retry or take-back and why, and how it ended."""

    return OrjsonResponse(await db.read(service.history, run_id, tenant_id=tenant_id))


PCAP = "application/vnd.tcpdump.pcap"


@router.get(
    "/{run_id}/pcap",
    operation_id="get_run_pcap",
    response_class=Response,
    responses={
        200: {
            "description": "A libpcap file (nanosecond timestamps in simulated time, link "
            "type 101 raw IPv4) that Wireshark, tshark and tcpdump read",
            "content": {PCAP: {"schema": {"type": "string", "format": "binary"}}},
        },
        304: {"description": "Not modified (a capture's bytes never change)"},
        **problem_responses(404, 409, 422),
    },
)
async def get_run_pcap(
    run_id: uuid.UUID,
    db: DbDep,
    tenant_id: TenantDep,
    request: Request,
    link: Annotated[
        str,
        Query(
            min_length=1,
            max_length=64,
            pattern=r"^[A-Za-z0-9_][A-Za-z0-9_\-]*$",
            description="The link's id",
        ),
    ],
    direction: Annotated[
        Literal["a_to_b", "b_to_a", "both"] | None,
        Query(
            description="As the scenario's capture names it; may be left out when the "
            "link was captured once"
        ),
    ] = None,
) -> Response:
    """A packet capture of a succeeded run (its scenario's `capture`), as a libpcap file:
    404 when the run took no such capture (the problem lists those it has), 409 before the
    run has succeeded. The run document's `captures` lists them."""
    found: CaptureFile = await db.read(
        service.capture_file, run_id, tenant_id=tenant_id, link=link, direction=direction
    )
    etag = f'"{found.sha256}"'
    if (cached := not_modified(request, etag)) is not None:
        return cached
    name = f"tcpfr-{run_id}-{found.link}-{found.direction}.pcap"
    return Response(
        await anyio.to_thread.run_sync(found.data),
        media_type=PCAP,
        headers={
            "ETag": etag,
            "Content-Disposition": f'attachment; filename="{name}"',
            **CACHE_HEADERS,
        },
    )
