"""Dependencies as ``Annotated`` aliases: what an endpoint needs, by name.

Every dependency is ``async def``: FastAPI runs a plain ``def`` dependency in its thread
pool, and a request path that needs a thread to finish (a session's teardown, say) can
deadlock that pool against the connection pool under load (``api.db``).
"""

from __future__ import annotations

import uuid
from typing import Annotated

from celery import Celery
from fastapi import Depends, Request

from api.auth import PresentedKey, tenant_for
from api.cache import Conditional
from api.db import Db
from api.ratelimit import RateLimiter
from settings import Settings
from store.models import DEFAULT_TENANT_ID


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_db(request: Request) -> Db:
    return request.app.state.db


async def get_celery(request: Request) -> Celery:
    return request.app.state.celery


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbDep = Annotated[Db, Depends(get_db)]
CeleryDep = Annotated[Celery, Depends(get_celery)]


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


async def get_conditional(request: Request, tenant_id: TenantDep) -> Conditional:
    state = request.app.state
    return Conditional(request, tenant_id, state.cache, state.db)


CachedDep = Annotated[Conditional, Depends(get_conditional)]
