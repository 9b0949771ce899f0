"""Liveness and readiness."""

from __future__ import annotations

import logging
from typing import Any

import anyio
from fastapi import APIRouter, Request
from sqlalchemy import text

from api.dispatch import SENDERS
from api.exception_handlers import DATABASE_RETRY_AFTER
from api.responses import OrjsonResponse
from api.version import API_VERSION, ENGINE_VERSION

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)


@router.get("/healthz", operation_id="healthz")
async def healthz() -> dict[str, str]:
    """The process serves HTTP; `version` is the API's (the package's), `engine_version` the
    simulator's (a result's identity includes it)."""
    return {"status": "ok", "version": API_VERSION, "engine_version": ENGINE_VERSION}


@router.get(
    "/readyz",
    operation_id="readyz",
    responses={
        503: {
            "description": "The database or the broker is not reachable; `Retry-After` says "
            "when to ask again",
            "headers": {"Retry-After": {"schema": {"type": "integer"}}},
        }
    },
)
async def readyz(request: Request) -> Any:
    """The database answers and has the schema, and the broker accepts connections."""
    checks: dict[str, str] = {}
    state = request.app.state
    try:
        await state.db(lambda session: session.execute(text("SELECT 1 FROM runs LIMIT 1")))
        checks["database"] = "ok"
    except Exception as exc:  # readiness reports, it does not raise
        checks["database"] = f"error: {type(exc).__name__}"

    def broker() -> None:
        with state.celery.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)

    try:
        await anyio.to_thread.run_sync(broker, limiter=SENDERS)
        checks["broker"] = "ok"
    except Exception as exc:
        checks["broker"] = f"error: {type(exc).__name__}"
    ready = all(v == "ok" for v in checks.values())
    return OrjsonResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks},
        status_code=200 if ready else 503,
        # As every other 503 here: when to ask again (a restarting database takes seconds).
        headers=None if ready else {"Retry-After": str(DATABASE_RETRY_AFTER)},
    )
