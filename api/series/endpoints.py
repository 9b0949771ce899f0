"""/v1/runs/{id}/series: the index, one series, several as a frame. JSON or CSV."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from sqlalchemy.orm import Session

from api.cache import Conditional, Found, Tag
from api.conditional import REVALIDATE_HEADERS, not_modified
from api.db import Db
from api.deps import CachedDep, DbDep, SettingsDep, TenantDep
from api.exceptions import Unprocessable, field_error
from api.responses import OrjsonResponse, problem_responses
from api.series import axis, service
from api.series.axis import End, Start, TimeAxis
from api.series.schemas import SeriesData, SeriesFrame, SeriesIndex
from settings import Settings
from store.models import Run

router = APIRouter(prefix="/v1/runs/{run_id}", tags=["series"])

MaxPoints = Annotated[
    int | None,
    Query(ge=3, description="Downsample to at most this many points (default from settings, 1000)"),
]
Format = Annotated[
    Literal["json", "csv"] | None,
    Query(description="Overrides the Accept header: `csv` is text/csv"),
]
AggQuery = Annotated[
    Literal["mean", "min", "max", "last"] | None,
    Query(
        description="How a downsampled bucket is summarised. Default per series kind: rates "
        "(`*_bps`, `*utilization`) `mean`, the time-weighted mean (their integral is kept); "
        "step series (cwnd, queue, counters…) MinMaxLTTB, which keeps the peaks. `min`, `max`, "
        "`last`: of each equal-width time bucket"
    ),
]


@dataclass
class WindowQuery:
    """The query both data routes read: which stretch of the series, how many points, how a
    bucket is summarised, on which time axis, in which format."""

    start: Start = None
    end: End = None
    max_points: MaxPoints = None
    format: Format = None
    time_axis: TimeAxis = "sim"
    agg: AggQuery = None


WindowQueryDep = Annotated[WindowQuery, Depends()]
#: Reads of a running run's rows again when a snapshot landed between them and the version.
SNAPSHOT_RETRIES = 3
CSV_RESPONSE = {"content": {"text/csv": {"schema": {"type": "string"}}}}
DATA_ERRORS = problem_responses(404, 409, 422)


def max_points_within(settings: Settings, requested: int | None) -> int:
    """The points asked for (or the default), a 422 past the server's limit."""
    value = requested or settings.series_max_points
    if value > settings.series_max_points_limit:
        raise Unprocessable(
            "max_points too large",
            errors=[
                field_error(
                    ["query", "max_points"], f"must be <= {settings.series_max_points_limit}"
                )
            ],
        )
    return value


def _wants_csv(request: Request, fmt: str | None) -> bool:
    if fmt is not None:
        return fmt == "csv"
    accept = request.headers.get("accept", "")
    return "text/csv" in accept and "application/json" not in accept.split("text/csv")[0]


#: A series document from its run and windows: the JSON body, and the columns of its CSV.
Render = Callable[[Run, list[service.Window]], tuple[dict[str, Any], dict[str, Any]]]


async def _settled(
    db: Db,
    load: Callable[[Session], list[service.Window]],
    run_id: uuid.UUID,
    version: tuple[int, float] | None,
) -> tuple[list[service.Window], tuple[int, float] | None]:
    """The rows `load` reads, and the version they are of. A running run's series are
    replaced by each snapshot, and the version and the rows are two reads: the rows are of
    the version only when no snapshot came between (the version only grows), else they are
    read again under the new one. A finished run's (`version` None) are read once."""
    windows = await db.read(load)
    for _ in range(SNAPSHOT_RETRIES):
        if version is None or (now := await db.read(service.stored_version, run_id)) == version:
            break
        version = now
        windows = await db.read(load)
    return windows, version


async def _answer(
    cached: Conditional,
    db: Db,
    tenant_id: uuid.UUID,
    run_id: uuid.UUID,
    names: list[str],
    render: Render,
    *,
    settings: Settings,
    window: WindowQuery,
    loc: list[str | int],
) -> Response:
    """The series' windows rendered by `render`, as JSON or CSV as the request asks: a
    succeeded run's data tagged and kept; a running run's tagged by how far its stored
    series go, revalidated on every request and never kept (it settles when the run ends)."""
    limit = max_points_within(settings, window.max_points)
    axis.check_window(window.start, window.end, window.time_axis)

    async def find() -> Found:
        readable = await db.read(service.readable_run, run_id, tenant_id=tenant_id)
        run = readable.run
        start, end = axis.sim_window(
            window.start, window.end, axis.origin_ms(run, window.time_axis)
        )
        tag: Tag | None = None
        headers = {"Vary": "Accept"}  # a tagged answer gets its ETag from the cache
        if readable.version is None:
            tag = cached.tag(run.result_run_id, limit)
            if tag.current:
                return tag, None
        else:
            # Not a tag for the cache (Found's None): the ETag, which changes with every
            # snapshot, goes on the response itself, and the client asks again each time.
            etag = cached.tag(run_id, limit, "running", *readable.version).etag
            headers = {"Vary": "Accept", "ETag": etag, **REVALIDATE_HEADERS}
            if (same := not_modified(cached.request, etag, REVALIDATE_HEADERS)) is not None:
                return None, lambda: same

        def load(session: Session) -> list[service.Window]:
            return service.load(
                session,
                run,
                names,
                start=start,
                end=end,
                max_points=limit,
                loc=loc,
                agg=window.agg,
                partial=readable.partial,
            )

        windows, version = await _settled(db, load, run.id, readable.version)
        if version != readable.version and version is not None:
            headers["ETag"] = cached.tag(run_id, limit, "running", *version).etag
        csv = _wants_csv(cached.request, window.format)
        return tag, _response(render(run, windows), readable.partial, csv, headers)

    return await cached.answer(find)


def _response(
    rendered: tuple[dict[str, Any], dict[str, Any]],
    partial: bool,
    csv: bool,
    headers: dict[str, str],
) -> Callable[[], Response]:
    """The rendered windows as CSV (their columns) or JSON (the body, marked `partial` while
    the run is running)."""
    body, columns = rendered
    if partial:
        body["partial"] = True
    if csv:
        text = service.to_csv(columns)
        return lambda: Response(text, media_type="text/csv; charset=utf-8", headers=headers)
    return lambda: OrjsonResponse(body, headers=headers)


@router.get(
    "/series",
    operation_id="list_series",
    response_model=SeriesIndex,
    responses=problem_responses(404, 409),
)
async def list_series(run_id: uuid.UUID, db: DbDep, tenant_id: TenantDep) -> Response:
    """The run's series: key, unit, stored length and time span of each, and how it was
    thinned to its share of the run's points."""

    def query(session: Session) -> tuple[bool, list[tuple[Any, ...]]]:
        readable = service.readable_run(session, run_id, tenant_id=tenant_id)
        return readable.partial, service.index(session, readable.run)

    partial, rows = await db.read(query)
    items = [
        {"key": k, "unit": u, "length": n, "t_start": a, "t_end": b, "thinning": thinning}
        for k, u, n, a, b, thinning in rows
    ]
    return OrjsonResponse({"run_id": str(run_id), "partial": partial, "series": items})


@router.get(
    "/series/{key}",
    operation_id="get_series",
    response_model=SeriesData,
    responses={200: CSV_RESPONSE, 304: {"description": "Not modified"}, **DATA_ERRORS},
)
async def get_series(
    run_id: uuid.UUID,
    key: str,
    db: DbDep,
    cached: CachedDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    window: WindowQueryDep,
) -> Response:
    """One series in [start, end], downsampled to `max_points`: a rate series (goodput,
    utilisation) by time-weighted bucket means, so its mean rate is unchanged; a step series
    (cwnd, queue…) by MinMaxLTTB, keeping its peaks; `agg` chooses. A rate point at `t` is
    the mean rate over the interval ending at `t`. JSON `{t, v}`, or CSV with
    `Accept: text/csv`."""

    def render(run: Run, windows: list[service.Window]) -> tuple[dict[str, Any], dict[str, Any]]:
        (w,) = windows
        t = axis.on_axis(w.t, axis.origin_ms(run, window.time_axis))
        body = {
            "key": w.key,
            "unit": w.unit,
            "length": w.length,
            "points": len(w.t),
            "downsampled": w.downsampled,
            "method": w.method,
            "t": t,
            "v": w.v,
        }
        return body, {"t": t, "v": w.v}

    return await _answer(
        cached,
        db,
        tenant_id,
        run_id,
        [key],
        render,
        settings=settings,
        window=window,
        loc=["path", "key"],
    )


@router.get(
    "/frame",
    operation_id="get_series_frame",
    response_model=SeriesFrame,
    responses={200: CSV_RESPONSE, 304: {"description": "Not modified"}, **DATA_ERRORS},
)
async def get_series_frame(
    run_id: uuid.UUID,
    db: DbDep,
    cached: CachedDep,
    settings: SettingsDep,
    tenant_id: TenantDep,
    keys: Annotated[str, Query(min_length=1, description="Comma-separated series keys")],
    window: WindowQueryDep,
    shape: Annotated[Literal["wide", "long"], Query()] = "wide",
) -> Response:
    """Several series at once for a dashboard, each downsampled to `max_points` as
    `GET .../series/{key}` does (rates by time-weighted bucket means, step series keeping
    their peaks, or `agg`): a wide frame (one time column) or a long one (time, key, value
    rows)."""
    names = list(dict.fromkeys(k.strip() for k in keys.split(",") if k.strip()))
    if not names:
        raise Unprocessable(
            "no series keys given", errors=[field_error(["query", "keys"], "empty")]
        )

    def render(run: Run, windows: list[service.Window]) -> tuple[dict[str, Any], dict[str, Any]]:
        columns = service.frame(windows, shape)
        columns["t"] = axis.on_axis(columns["t"], axis.origin_ms(run, window.time_axis))
        body = {
            "shape": shape,
            "keys": names,
            "units": {w.key: w.unit for w in windows},
            "columns": columns,
        }
        return body, columns

    return await _answer(
        cached,
        db,
        tenant_id,
        run_id,
        names,
        render,
        settings=settings,
        window=window,
        loc=["query", "keys"],
    )
