"""/v1/runs/{id}/export and /v1/sweeps/{id}/export: zip bundles to take away, streamed."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import anyio
from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from api.conditional import CACHE_HEADERS, etag_for, not_modified
from api.deps import DbDep, TenantDep
from api.exceptions import ServiceUnavailable
from api.exports import service
from api.responses import problem_responses

router = APIRouter(tags=["exports"])

ZIP = "application/zip"
#: Bundles gathered at once per API process: each holds a batch of its data (tens of MiB
#: at most) and a worker thread while it writes one. Past them a request waits, holding
#: nothing, up to EXPORT_WAIT seconds; then a 503 with Retry-After.
EXPORTS_AT_ONCE = 2
EXPORT_WAIT = 120.0
_slots: anyio.Semaphore | None = None
E = TypeVar("E")


def _gathering() -> anyio.Semaphore:
    global _slots
    if _slots is None:
        _slots = anyio.Semaphore(EXPORTS_AT_ONCE)
    return _slots


class _Bundle(StreamingResponse):
    """A bundle sent as it is written; its gathering slot is given back once the response
    is over, however it ends (sent, or its client gone before or during it)."""

    def __init__(self, chunks: AsyncIterator[bytes], slot: anyio.Semaphore, **kw: Any) -> None:
        super().__init__(chunks, media_type=ZIP, **kw)
        self._chunks, self._slot = chunks, slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._chunks.aclose()  # type: ignore[attr-defined]
            self._slot.release()


async def _bundle(
    request: Request,
    gather: Callable[[], Awaitable[E]],
    etag_of: Callable[[E], str],
    write: Callable[[E], AsyncIterator[bytes]],
    name: str,
) -> Response:
    """Take a slot before any data is read; check the target (404, 409) and the client's
    ETag; then stream the bundle, which gives the slot back when it is over."""
    slot = _gathering()
    with anyio.move_on_after(EXPORT_WAIT) as waited:
        await slot.acquire()
    if waited.cancelled_caught:
        raise ServiceUnavailable(
            f"{EXPORTS_AT_ONCE} exports are being gathered by this server; try again shortly",
            retry_after=int(EXPORT_WAIT // 4),
        )
    streaming = False
    try:
        export = await gather()
        etag = etag_of(export)
        if (cached := not_modified(request, etag)) is not None:
            return cached
        response = _Bundle(
            write(export),
            slot,
            headers={
                "ETag": etag,
                "Content-Disposition": f'attachment; filename="{name}"',
                **CACHE_HEADERS,
            },
        )
        streaming = True
        return response
    finally:
        if not streaming:
            slot.release()


def _zip_responses(what: str) -> dict[int | str, dict[str, Any]]:
    return {
        200: {
            "description": what,
            "content": {ZIP: {"schema": {"type": "string", "format": "binary"}}},
        },
        304: {"description": "Not modified (a finished run or sweep exports to the same bytes)"},
        **problem_responses(404, 409, 503),
    }


@router.get(
    "/v1/runs/{run_id}/export",
    operation_id="export_run",
    response_class=Response,
    responses=_zip_responses(
        "A zip: request.json (a POST /v1/runs body that reproduces the result), "
        "result.json, series.csv and series.parquet (long form: key, unit, t, v), "
        "captures/<link>-<direction>.pcap for each packet capture, and manifest.json (ids, "
        "engine version, scenario hash, seed, timestamps, each file's sha256), last"
    ),
)
async def export_run(
    run_id: uuid.UUID, db: DbDep, tenant_id: TenantDep, request: Request
) -> Response:
    """A succeeded run as a zip bundle (409 before it has succeeded), sent as it is
    written. Every stored sample of every series is in it, not downsampled."""
    return await _bundle(
        request,
        lambda: db.read(service.run_export, run_id, tenant_id=tenant_id),
        lambda e: etag_for(request, e.run["run_id"], e.run["finished_at"], service.RUN_FORMAT),
        lambda e: service.run_bundle(db, e),
        f"tcpfr-run-{run_id}.zip",
    )


@router.get(
    "/v1/sweeps/{sweep_id}/export",
    operation_id="export_sweep",
    response_class=Response,
    responses=_zip_responses(
        "A zip: request.json (the sweep as submitted: POST /v1/sweeps takes it), "
        "summary.json, runs/<point>-<replication>.json with each run's result, table.csv "
        "and table.parquet (one row per run: point, replication, seed, parameters, then "
        "`<flow>.<metric>` columns), and manifest.json, last"
    ),
)
async def export_sweep(
    sweep_id: uuid.UUID, db: DbDep, tenant_id: TenantDep, request: Request
) -> Response:
    """A finished sweep (every run succeeded, failed or cancelled) as a zip bundle, sent as
    it is written; 409 while runs are still to finish."""

    def etag_of(e: service.SweepExport) -> str:
        last = max((r["finished_at"] for r in e.runs if r["finished_at"]), default=None)
        return etag_for(request, sweep_id, len(e.runs), last, service.SWEEP_FORMAT)

    return await _bundle(
        request,
        lambda: db.read(service.sweep_export, sweep_id, tenant_id=tenant_id),
        etag_of,
        lambda e: service.sweep_bundle(db, e),
        f"tcpfr-sweep-{sweep_id}.zip",
    )
