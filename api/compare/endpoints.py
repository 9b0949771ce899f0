"""/v1/compare: the comparison of any runs, and one series of several runs on one time axis."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Literal, TypeVar

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy.orm import Session

from api.cache import DocumentCache
from api.compare import service
from api.compare.schemas import CommonSeries, RunComparison
from api.comparison import table
from api.conditional import CACHE_HEADERS, etag_for, not_modified
from api.deps import CacheDep, DbDep, SettingsDep, TenantDep
from api.responses import OrjsonResponse, problem_responses
from api.series.endpoints import AggQuery, max_points_within
from api.series.service import to_csv
from store.models import Run

router = APIRouter(prefix="/v1/compare", tags=["compare"])

Runs = Annotated[
    str,
    Query(
        min_length=1,
        max_length=service.MAX_RUNS * 37,
        description=f"Comma-separated run ids (at most {service.MAX_RUNS}), all succeeded",
    ),
]
ERRORS = problem_responses(404, 409, 422)
T = TypeVar("T")


def _etag(request: Request, runs: list[Run]) -> str:
    # Succeeded runs never change: the comparison of the same runs is the same bytes.
    return etag_for(request, *(f"{r.id}={r.result_run_id}" for r in runs))


async def _of_succeeded(
    db: DbDep,
    cache: DocumentCache,
    request: Request,
    ids: list[uuid.UUID],
    tenant_id: uuid.UUID,
    build: Callable[[Session, list[Run]], T],
) -> Response | tuple[dict[str, str], T]:
    """These succeeded runs' document with its response headers (its ETag); or the answer
    already known: the document cache's copy, or a 304 when the client's copy is current."""
    if (hit := cache.lookup(request, tenant_id)) is not None:
        return hit

    def query(session: Session) -> tuple[str, T | None]:
        found = service.succeeded_runs(session, ids, tenant_id=tenant_id)
        etag = _etag(request, found)
        if not_modified(request, etag) is not None:
            return etag, None
        return etag, build(session, found)

    etag, doc = await db(query)
    headers = {"ETag": etag, **CACHE_HEADERS}
    if doc is None:
        return Response(status_code=304, headers=headers)
    return headers, doc


@router.get(
    "",
    operation_id="compare_runs",
    response_model=None,
    responses={
        200: table.responses(RunComparison, "The comparison"),
        304: {"description": "Not modified"},
        **ERRORS,
    },
)
async def compare_runs(
    runs: Runs,
    db: DbDep,
    cache: CacheDep,
    tenant_id: TenantDep,
    request: Request,
    baseline: Annotated[
        uuid.UUID | None, Query(description="One of `runs` (default: the first)")
    ] = None,
    format: table.TableFormat = None,
) -> Response:
    """The sweep summary's comparison for any runs: runs of the same scenario are
    replications of one point; the scenario paths that differ are its parameters. As a
    table (`format=csv` or `Accept: text/csv`; `format=records` for JSON): one row per
    point and flow, a column per differing path and per metric statistic, in base units."""
    shape = table.wants(request, format)
    ids = service.parse_runs(runs, loc=["query", "runs"])
    found = await _of_succeeded(
        db,
        cache,
        request,
        ids,
        tenant_id,
        lambda session, succeeded: service.compare(session, succeeded, baseline=baseline),
    )
    if isinstance(found, Response):
        return found
    headers, doc = found
    response = table.respond(doc.model_dump(mode="json"), shape, headers)
    return cache.store(request, tenant_id, response)


@router.get(
    "/series",
    operation_id="compare_series",
    response_model=CommonSeries,
    responses={
        200: {"content": {"text/csv": {"schema": {"type": "string"}}}},
        304: {"description": "Not modified"},
        **ERRORS,
    },
)
async def compare_series(
    runs: Runs,
    key: Annotated[str, Query(min_length=1, max_length=255, description="e.g. flow.backup.cwnd")],
    db: DbDep,
    cache: CacheDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    request: Request,
    max_points: Annotated[
        int | None, Query(ge=3, description="Rows of the common axis at most (default 1000)")
    ] = None,
    start: Annotated[
        float | None, Query(allow_inf_nan=False, description="Window start, simulated seconds")
    ] = None,
    end: Annotated[
        float | None, Query(allow_inf_nan=False, description="Window end, simulated seconds")
    ] = None,
    format: Annotated[Literal["json", "csv"], Query(description="`csv`: text/csv")] = "json",
    agg: AggQuery = None,
) -> Response:
    """One metric of several runs on a common time axis, for overlay charts. A rate series
    (goodput, utilisation) is averaged over equal time buckets, the same for every run, so
    each run's mean rate is kept; a step series is downsampled keeping its peaks."""
    ids = service.parse_runs(runs, loc=["query", "runs"])
    limit = max_points_within(settings, max_points)
    found = await _of_succeeded(
        db,
        cache,
        request,
        ids,
        tenant_id,
        lambda session, succeeded: service.common_series(
            session, succeeded, key=key, max_points=limit, start=start, end=end, agg=agg
        ),
    )
    if isinstance(found, Response):
        return found
    headers, body = found
    if format == "csv":
        response = Response(
            to_csv(body["columns"]), media_type="text/csv; charset=utf-8", headers=headers
        )
    else:
        response = OrjsonResponse(body, headers=headers)
    return cache.store(request, tenant_id, response)
