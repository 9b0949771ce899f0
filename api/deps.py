"""Dependencies as ``Annotated`` aliases: what an endpoint needs, by name.

Every dependency is ``async def``: FastAPI runs a plain ``def`` dependency in its thread
pool, and a request path that needs a thread to finish (a session's teardown, say) can
deadlock that pool against the connection pool under load. Nothing here takes a thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Concatenate, ParamSpec, TypeVar

from celery import Celery
from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from api.auth import PresentedKey, tenant_for
from api.cache import DocumentCache
from api.ratelimit import RateLimiter
from store.config import Settings
from store.models import DEFAULT_TENANT_ID

P = ParamSpec("P")
R = TypeVar("R")


class Db:
    """The request's way to the database. ``await db(fn, *args, **kwargs)`` opens a session,
    runs ``fn(session, *args, **kwargs)`` (the same repository and service code the workers
    run with sync sessions) on an asyncio connection, through SQLAlchemy's ``run_sync``: a
    greenlet on the event loop, not a thread; then closes the session. A connection is held
    only while that code runs, never while the request waits for anything else."""

    __slots__ = ("_sessions",)

    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def __call__(
        self, fn: Callable[Concatenate[Session, P], R], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        async with self._sessions() as session:
            return await session.run_sync(fn, *args, **kwargs)


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def get_db(request: Request) -> Db:
    return request.app.state.db  # type: ignore[no-any-return]


async def get_celery(request: Request) -> Celery:
    return request.app.state.celery  # type: ignore[no-any-return]


async def get_cache(request: Request) -> DocumentCache:
    return request.app.state.cache  # type: ignore[no-any-return]


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbDep = Annotated[Db, Depends(get_db)]
CeleryDep = Annotated[Celery, Depends(get_celery)]
CacheDep = Annotated[DocumentCache, Depends(get_cache)]


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
