"""The FastAPI app: ``create_app(settings)``; ``api.main:app`` for ASGI servers."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.routing import APIRoute
from fastapi_offline import FastAPIOffline
from sqlalchemy.engine import Engine
from sqlalchemy.ext.asyncio import AsyncEngine

from api import exception_handlers
from api.advice.endpoints import router as advice_router
from api.advice.endpoints import runs_router as run_remedies_router
from api.body_limit import BodyLimit
from api.cache import ResponseCache, ServeCached
from api.compare.endpoints import router as compare_router
from api.db import open_db
from api.deps import get_tenant_id
from api.exports.endpoints import router as exports_router
from api.health.endpoints import router as health_router
from api.overload import LoopLag, ShedWhenBehind
from api.presets.endpoints import router as presets_router
from api.ratelimit import RateLimiter
from api.reconciler import reconcile_forever
from api.responses import problem_responses
from api.runs.endpoints import router as runs_router
from api.scenarios.endpoints import router as scenarios_router
from api.series.endpoints import router as series_router
from api.streams.endpoints import router as streams_router
from api.streams.feed import ChangeFeed
from api.streams.sse import Stopping, StreamSlots
from api.sweeps.endpoints import preset_router as preset_sweeps_router
from api.sweeps.endpoints import router as sweeps_router
from api.ui import endpoints as ui
from api.version import API_VERSION, ENGINE_VERSION
from engine.result import Result
from messaging import make_celery
from settings import Settings, get_settings
from store.db import make_engine, make_sessionmaker

DESCRIPTION = """\
Packet-level simulation of TCP over Frame Relay and other WAN links, as a service.
Submit a scenario (or a preset) to `POST /v1/runs`, poll the run, then read its summary,
its diagnosis (what limits each transfer) and its time-series, downsampled for charts.
What would fix it: `POST /v1/advice` searches the levers you allow, by simulation, for the
cheapest change that meets a target; `POST /v1/runs/{id}/remedies/check` measures a run's
remedies.
Errors are RFC 9457 problem+json; a bad scenario's `errors[].loc` and `pointer` name the field.
"""


log = logging.getLogger("tcpfr.api")
PROTECTED = [Depends(get_tenant_id)]
AUTH_OFF_WARNING = """
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!!! AUTHENTICATION IS OFF: anyone who can reach this port can read and run everything,
!!! as the one default tenant. Fine on a laptop; anywhere else set TCPFR_AUTH=true and
!!! issue keys with `python -m api.keys create --tenant NAME --name WHAT`.
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"""


def _operation_id(route: APIRoute) -> str:
    return route.name


PROBLEM_CONTENT = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
BODY_STATUSES = {
    "400": "The body is not well-formed JSON, or not what this operation reads",
    "408": "The body did not all arrive within TCPFR_BODY_TIMEOUT seconds",
    "413": "The body is larger than TCPFR_MAX_BODY_BYTES",
    "415": "The body is not JSON (`Content-Type` other than application/json or +json)",
}
#: What the server (granian's hyper) answers itself, with no body, before the app sees it.
SERVER_REFUSALS = {
    "414": {"description": "The request's target (path and query) is too long to read"},
    "431": {"description": "The request's headers are too large to read"},
}
RATE_LIMITED = (
    "Too many requests for this tenant (TCPFR_RATE_LIMIT), or, for a submission, too many "
    "runs queued or running (TCPFR_MAX_ACTIVE_RUNS); `Retry-After` says when to retry"
)


def _openapi(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """FastAPI's document, made to say what the app does: every error is problem+json (and
    only that), and each operation declares the statuses it can answer beyond its own:
    400/413/415 where it reads a body, 429 where a tenant's limits apply."""
    build = app.openapi

    def document() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for ops in schema.get("paths", {}).values():
            for op in ops.values():
                responses = op.setdefault("responses", {})
                # The server refuses a request it cannot read (a query too long or not
                # well-formed, headers it cannot parse) before any route sees it.
                responses.setdefault("400", {"description": "The request cannot be read"})
                if "requestBody" in op:
                    for code, text in BODY_STATUSES.items():
                        responses.setdefault(code, {"description": text})
                if op.get("security") or op.get("operationId", "").startswith("create_"):
                    responses.setdefault("429", {"description": RATE_LIMITED})
                for code, response in responses.items():
                    if code[0] in "45":
                        response["content"] = dict(PROBLEM_CONTENT)
                # What the server itself refuses (before the app) is plain text or empty.
                responses["400"]["content"]["text/plain"] = {"schema": {"type": "string"}}
                responses.update(SERVER_REFUSALS)
        # The engine's version beside the API's: a result's identity includes it.
        schema["info"]["x-engine-version"] = ENGINE_VERSION
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        # The engine's Result (docs/scenario.md), which a run's `summary` and `diagnosis`
        # hold in parts and an export bundle's result.json whole: named here so that its
        # fields (the flows' `time`, the diagnosis' `limit_time` ...) are documented.
        result = Result.model_json_schema(
            ref_template="#/components/schemas/{model}", mode="serialization"
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.update(result.pop("$defs"))
        components["Result"] = result
        app.openapi_schema = schema
        return schema

    return document


def _in_background(stack: contextlib.AsyncExitStack, work: Coroutine[Any, Any, None]) -> None:
    """`work` runs until `stack` closes, then is cancelled and awaited."""
    task = asyncio.create_task(work)

    async def stop() -> None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    stack.push_async_callback(stop)


async def _dispose(engine: Engine | AsyncEngine) -> None:
    if isinstance(engine, AsyncEngine):
        await engine.dispose()
    else:
        engine.dispose()


def _freeze_startup_objects() -> None:
    """Everything made by the time the app starts (its modules, routes, schemas, the ORM's
    mappers: about 190,000 objects) lives as long as the process: moved out of the cyclic
    collector's sight (gc.freeze), it is not traversed again by every full collection.
    With it there, one full collection cost ~90 ms of a request's time (a running sweep's
    summary rebuild took 12 ms, and 104 ms each time one ran). Once per process: a second
    app started in it (tests start many) is collected as usual, so its garbage is freed."""
    if gc.get_freeze_count() == 0:
        gc.collect()
        gc.freeze()


def _lifespan(settings: Settings) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        logging.basicConfig(
            level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        if settings.auth:
            log.info("authentication is on: every /v1 route but /v1/presets needs an API key")
        else:
            log.warning(AUTH_OFF_WARNING)
        async with contextlib.AsyncExitStack() as stack:
            app.state.db, db_engine = open_db(settings)
            stack.push_async_callback(_dispose, db_engine)
            stack.push_async_callback(app.state.db.close)
            app.state.celery = make_celery(settings, name="tcpfr-api")
            app.state.rate_limiter = RateLimiter(settings)
            app.state.cache = ResponseCache(settings.response_cache_bytes)
            app.state.stream_slots = StreamSlots(settings.max_streams)
            # Every open stream's looks at the database, on a connection of the feed's own.
            feed_engine = make_engine(settings, pool_size=1, max_overflow=0)
            stack.callback(feed_engine.dispose)
            app.state.feed = ChangeFeed(
                make_sessionmaker(feed_engine), poll=settings.stream_poll_interval
            )
            _in_background(stack, app.state.feed.run())
            if settings.reconcile_interval > 0:
                # The reconciler's passes are sync code in a thread of their own, on an
                # engine of their own: they take no connection or thread from requests.
                sync_engine = make_engine(settings, pool_size=1, max_overflow=1)
                stack.callback(sync_engine.dispose)
                sessions = make_sessionmaker(sync_engine)
                _in_background(stack, reconcile_forever(sessions, app.state.celery, settings))
            app.state.loop_lag = await stack.enter_async_context(LoopLag().watching())
            app.state.stopping = Stopping()
            stack.enter_context(app.state.stopping.watching_signals())
            _freeze_startup_objects()
            yield

    return lifespan


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    # FastAPIOffline: /docs and /redoc from assets shipped in the fastapi-offline package,
    # not a CDN, so they work on a machine without internet.
    app = FastAPIOffline(
        title="tcpfr",
        version=API_VERSION,
        summary="Why is my WAN transfer slow? TCP over Frame Relay, simulated.",
        description=DESCRIPTION,
        lifespan=_lifespan(settings),
        generate_unique_id_function=_operation_id,
        # Any route may meet a database that is away (restarting): 503 with Retry-After.
        responses=problem_responses(503),
        # No call to validator.swagger.io: nothing on /docs leaves this host.
        swagger_ui_parameters={"validatorUrl": None},
    )
    app.state.settings = settings
    app.openapi = _openapi(app)  # type: ignore[method-assign]
    exception_handlers.install(app)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes, timeout=settings.body_timeout)
    app.add_middleware(ServeCached, owner=app)  # a hit skips everything below
    # Outermost: past capacity, a 503 before anything else is spent on the request.
    app.add_middleware(ShedWhenBehind, owner=app, max_wait=settings.max_queue_wait)
    # Every route needs a key (when auth is on) but these: liveness and readiness, and the
    # presets, a public catalogue shipped with the engine that holds no tenant's data.
    for router in (presets_router, preset_sweeps_router, health_router):
        app.include_router(router)
    for router in (
        runs_router,
        series_router,
        streams_router,
        scenarios_router,
        sweeps_router,
        compare_router,
        exports_router,
        advice_router,
        run_remedies_router,
    ):
        app.include_router(router, dependencies=PROTECTED, responses=problem_responses(401))
    # The pages are a client of the API like any other: they hold no data and need no key
    # (they ask the user for one when the API says 401).
    ui.install(app)
    return app


app: FastAPI  # built by __getattr__ on first use


def __getattr__(name: str) -> FastAPI:
    # `api.main:app` is built on first use, so importing this module (for create_app in
    # tests, or the OpenAPI export) does not read the environment.
    if name == "app":
        global app
        app = create_app()
        return app
    raise AttributeError(name)
