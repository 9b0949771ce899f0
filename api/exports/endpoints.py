"""/v1/runs/{id}/export and /v1/sweeps/{id}/export: zip bundles to take away."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Request, Response

from api.conditional import CACHE_HEADERS, etag_for, not_modified
from api.deps import DbDep, TenantDep
from api.exports import service
from api.responses import problem_responses

router = APIRouter(tags=["exports"])

ZIP = "application/zip"
_limiter: anyio.CapacityLimiter | None = None


def _builders() -> anyio.CapacityLimiter:
    """Two bundles built at once per API process at most: each is a few CPU-seconds at
    worst, and the thread pool also serves everything else off the loop."""
    global _limiter
    if _limiter is None:
        _limiter = anyio.CapacityLimiter(2)
    return _limiter


def _zip_responses(what: str) -> dict[int | str, dict[str, Any]]:
    return {
        200: {
            "description": what,
            "content": {ZIP: {"schema": {"type": "string", "format": "binary"}}},
        },
        304: {"description": "Not modified (a finished run or sweep exports to the same bytes)"},
        **problem_responses(404, 409),
    }


async def _bundle(request: Request, etag: str, build: Callable[[], bytes], name: str) -> Response:
    if (cached := not_modified(request, etag)) is not None:
        return cached
    data = await anyio.to_thread.run_sync(build, limiter=_builders())
    return Response(
        data,
        media_type=ZIP,
        headers={
            "ETag": etag,
            "Content-Disposition": f'attachment; filename="{name}"',
            **CACHE_HEADERS,
        },
    )


@router.get(
    "/v1/runs/{run_id}/export",
    operation_id="export_run",
    response_class=Response,
    responses=_zip_responses(
        "A zip: manifest.json (ids, engine version, scenario hash, seed, timestamps, each "
        "file's sha256), request.json (a POST /v1/runs body that reproduces the result), "
        "result.json, series.csv and series.parquet (long form: key, unit, t, v), and "
        "captures/<link>-<direction>.pcap for each packet capture"
    ),
)
async def export_run(
    run_id: uuid.UUID, db: DbDep, tenant_id: TenantDep, request: Request
) -> Response:
    """A succeeded run as a zip bundle (409 before it has succeeded). Every stored sample of
    every series is in it, not downsampled."""
    bundle = await db(service.gather_run, run_id, tenant_id=tenant_id)
    etag = etag_for(request, bundle.run["run_id"], bundle.run["finished_at"], service.RUN_FORMAT)
    return await _bundle(
        request, etag, lambda: service.build_run(bundle), f"tcpfr-run-{run_id}.zip"
    )


@router.get(
    "/v1/sweeps/{sweep_id}/export",
    operation_id="export_sweep",
    response_class=Response,
    responses=_zip_responses(
        "A zip: manifest.json, request.json (the sweep as submitted: POST /v1/sweeps takes "
        "it), table.csv and table.parquet (one row per run: point, replication, seed, "
        "parameters, then `<flow>.<metric>` columns), summary.json, and runs/<point>-"
        "<replication>.json with each run's result"
    ),
)
async def export_sweep(
    sweep_id: uuid.UUID, db: DbDep, tenant_id: TenantDep, request: Request
) -> Response:
    """A finished sweep (every run succeeded, failed or cancelled) as a zip bundle; 409
    while runs are still to finish."""
    bundle = await db(service.gather_sweep, sweep_id, tenant_id=tenant_id)
    last = max((r["finished_at"] for r in bundle.runs if r["finished_at"]), default=None)
    etag = etag_for(request, sweep_id, len(bundle.runs), last, service.SWEEP_FORMAT)
    return await _bundle(
        request, etag, lambda: service.build_sweep(bundle), f"tcpfr-sweep-{sweep_id}.zip"
    )
