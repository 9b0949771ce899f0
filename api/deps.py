"""Dependencies as ``Annotated`` aliases: what an endpoint needs, by name."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Annotated

from celery import Celery
from fastapi import Depends, Request
from sqlalchemy.orm import Session

from api.auth import PresentedKey, tenant_for
from store.config import Settings


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessions() as session:
        yield session


def get_celery(request: Request) -> Celery:
    return request.app.state.celery


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
CeleryDep = Annotated[Celery, Depends(get_celery)]


def get_tenant_id(session: SessionDep, settings: SettingsDep, key: PresentedKey) -> uuid.UUID:
    """The tenant the request acts for (401 without a valid key when auth is on; the
    default tenant when it is off). Every query of a tenant's rows filters on it."""
    return tenant_for(session, key, auth=settings.auth)


TenantDep = Annotated[uuid.UUID, Depends(get_tenant_id)]
