"""Dependencies as ``Annotated`` aliases: what an endpoint needs, by name.

Every dependency is ``async def``: FastAPI runs a plain ``def`` dependency in its thread
pool, and a request path that needs a thread to finish (a session's teardown, say) can
deadlock that pool against the connection pool under load. Nothing here takes a thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Concatenate, ParamSpec, TypeVar

import anyio
from celery import Celery
from fastapi import Depends, Request
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session, sessionmaker

from api.auth import PresentedKey, tenant_for
from api.cache import DocumentCache
from api.list_cache import ListCache
from api.ratelimit import RateLimiter
from settings import Settings
from store.models import DEFAULT_TENANT_ID

P = ParamSpec("P")
R = TypeVar("R")


class Db:
    """The request's way to the database. ``await db(fn, *args, **kwargs)`` opens a session,
    runs ``fn(session, *args, **kwargs)`` (the same repository and service code the workers
    run with sync sessions) and closes the session: a connection is held only while that
    code runs, never while the request waits for anything else.

    On PostgreSQL the code runs on psycopg's asyncio connection through SQLAlchemy's
    ``run_sync`` (a greenlet on the event loop, not a thread)."""

    __slots__ = ("_sessions",)

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def __call__(
        self, fn: Callable[Concatenate[Session, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        async with self._sessions() as session:
            return await session.run_sync(fn, *args, **kwargs)

    async def read(
        self, fn: Callable[Concatenate[Session, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """As a call, for code that only reads: on an autocommit connection, so a read is
        its statements' round trips alone, without a BEGIN before and a ROLLBACK after."""
        async with self._sessions() as session:
            await session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
            return await session.run_sync(fn, *args, **kwargs)


class ThreadDb(Db):
    """``Db`` for SQLite: the whole call, session opened and closed, in one thread of a
    limiter holding as many tokens as the pool holds connections, so a thread never waits
    for a connection and a request waits for a token without holding anything (a wait
    longer than the pool timeout is a 503). One thread hop per call: aiosqlite hops to its
    connection's thread and back for every step of a statement (checkout, begin, execute,
    fetch, commit); per request that measured 1.3-3x slower than this (in-process medians
    of alternating rounds, list, history, series index, scenario)."""

    __slots__ = ("_sync", "_limiter", "_timeout")

    def __init__(self, sessions: sessionmaker[Session], *, connections: int, timeout: float):
        self._sync = sessions
        self._limiter = anyio.CapacityLimiter(connections)
        self._timeout = timeout

    async def __call__(
        self, fn: Callable[Concatenate[Session, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        def call() -> R:
            with self._sync() as session:
                return fn(session, *args, **kwargs)

        try:
            with anyio.fail_after(self._timeout):
                await self._limiter.acquire()
        except TimeoutError as exc:
            raise sa_exc.TimeoutError("no database connection free in time") from exc
        try:
            return await anyio.to_thread.run_sync(call, limiter=_UNLIMITED)
        finally:
            self._limiter.release()

    async def read(
        self, fn: Callable[Concatenate[Session, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        # pysqlite opens no transaction for a SELECT: a read is a call.
        return await self(fn, *args, **kwargs)


#: ThreadDb's own limiter bounds its threads; anyio's default (40) must not bound them again.
_UNLIMITED = anyio.CapacityLimiter(10_000)


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_db(request: Request) -> Db:
    return request.app.state.db


async def get_celery(request: Request) -> Celery:
    return request.app.state.celery


async def get_cache(request: Request) -> DocumentCache:
    return request.app.state.cache


async def get_list_cache(request: Request) -> ListCache:
    return request.app.state.list_cache


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbDep = Annotated[Db, Depends(get_db)]
CeleryDep = Annotated[Celery, Depends(get_celery)]
CacheDep = Annotated[DocumentCache, Depends(get_cache)]
ListCacheDep = Annotated[ListCache, Depends(get_list_cache)]


async def get_tenant_id(request: Request, key: PresentedKey) -> uuid.UUID:
    """The tenant the request acts for (401 without a valid key when auth is on; the
    default tenant when it is off), within its request rate (429 past it). Every query of a
    tenant's rows filters on it. (It reads the app's state itself rather than through
    sub-dependencies: every request solves this one, and each dependency costs.)"""
    state = request.app.state
    if state.settings.auth:
        db: Db = state.db
        tenant_id = await db(tenant_for, key, auth=True)
    else:
        tenant_id = DEFAULT_TENANT_ID
    limiter: RateLimiter = state.rate_limiter
    await limiter.check(tenant_id)
    return tenant_id


TenantDep = Annotated[uuid.UUID, Depends(get_tenant_id)]
