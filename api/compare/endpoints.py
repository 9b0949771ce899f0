"""/v1/compare: the comparison of any runs, and one series of several runs on one time axis."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy.orm import Session

from api.cache import Conditional, Found
from api.compare import service, table
from api.compare.schemas import CommonSeries, RunComparison
from api.deps import CachedDep, DbDep, SettingsDep, TenantDep
from api.responses import OrjsonResponse, problem_responses
from api.series import axis
from api.series.axis import End, Start, TimeAxis
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


async def _of_succeeded(
    db: DbDep,
    cached: Conditional,
    ids: list[uuid.UUID],
    tenant_id: uuid.UUID,
    build: Callable[[Session, list[Run]], T],
    respond: Callable[[T], Response],
) -> Response:
    """The document `build` makes of these succeeded runs, answered by `respond`. Succeeded
    runs never change: the comparison of the same runs is the same bytes, tagged and kept."""

    def query(session: Session) -> Found:
        found = service.succeeded_runs(session, ids, tenant_id=tenant_id)
        tag = cached.tag(*(f"{r.id}={r.result_run_id}" for r in found))
        if tag.current:
            return tag, None
        doc = build(session, found)
        return tag, lambda: respond(doc)

    async def find() -> Found:
        return await db(query)

    return await cached.answer(find)


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
    cached: CachedDep,
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
    return await _of_succeeded(
        db,
        cached,
        ids,
        tenant_id,
        lambda session, succeeded: service.compare(session, succeeded, baseline=baseline),
        lambda doc: table.respond(doc.model_dump(mode="json"), shape, None),
    )


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
    cached: CachedDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    max_points: Annotated[
        int | None, Query(ge=3, description="Rows of the common axis at most (default 1000)")
    ] = None,
    start: Start = None,
    end: End = None,
    format: Annotated[Literal["json", "csv"], Query(description="`csv`: text/csv")] = "json",
    agg: AggQuery = None,
    time_axis: TimeAxis = "sim",
) -> Response:
    """One metric of several runs on a common time axis, for overlay charts. A rate series
    (goodput, utilisation) is averaged over equal time buckets, the same for every run, so
    each run's mean rate is kept; a step series is downsampled keeping its peaks. With
    `time=epoch_ms` each run's simulated time is laid from the moment it started, as
    `GET /v1/runs/{id}/series/{key}` lays it, and `start` and `end` are epoch milliseconds."""
    ids = service.parse_runs(runs, loc=["query", "runs"])
    limit = max_points_within(settings, max_points)
    axis.check_window(start, end, time_axis)

    def respond(body: dict[str, Any]) -> Response:
        if format == "csv":
            return Response(to_csv(body["columns"]), media_type="text/csv; charset=utf-8")
        return OrjsonResponse(body)

    return await _of_succeeded(
        db,
        cached,
        ids,
        tenant_id,
        lambda session, succeeded: service.common_series(
            session,
            succeeded,
            key=key,
            max_points=limit,
            start=start,
            end=end,
            agg=agg,
            time_axis=time_axis,
        ),
        respond,
    )
