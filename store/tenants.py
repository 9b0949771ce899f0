"""Tenants and their API keys. A key is stored as a hash only (``api.auth`` makes both)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from store.models import ApiKey, Tenant
from store.repository import affected
from store.types import utcnow


class TenantRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def by_name(self, name: str) -> Tenant | None:
        return self.session.scalars(select(Tenant).where(Tenant.name == name)).first()

    def get_or_create(self, name: str) -> Tenant:
        """Tenants are made on demand, by the first key issued for a name."""
        tenant = self.by_name(name)
        if tenant is None:
            tenant = Tenant(name=name)
            self.session.add(tenant)
            self.session.flush()
        return tenant

    def names(self) -> dict[uuid.UUID, str]:
        return dict(self.session.execute(select(Tenant.id, Tenant.name)).tuples().all())


class ApiKeyRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def create(self, *, tenant_id: uuid.UUID, name: str, prefix: str, key_hash: str) -> ApiKey:
        key = ApiKey(tenant_id=tenant_id, name=name, prefix=prefix, key_hash=key_hash)
        self.session.add(key)
        self.session.flush()
        return key

    def by_prefix(self, prefix: str) -> Sequence[ApiKey]:
        """Keys with this public prefix, revoked ones included (the caller decides)."""
        return self.session.scalars(select(ApiKey).where(ApiKey.prefix == prefix)).all()

    def get(self, key_id: uuid.UUID) -> ApiKey | None:
        return self.session.get(ApiKey, key_id)

    def list(self, *, tenant_id: uuid.UUID | None = None) -> Sequence[ApiKey]:
        stmt = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
        if tenant_id is not None:
            stmt = stmt.where(ApiKey.tenant_id == tenant_id)
        return self.session.scalars(stmt).all()

    def revoke(self, key_id: uuid.UUID) -> bool:
        """False when the key was already revoked: revoking is idempotent."""
        stmt = (
            update(ApiKey)
            .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
        return affected(self.session, stmt) == 1

    def touch(self, key_id: uuid.UUID, *, now: datetime, every: timedelta) -> bool:
        """Record a use, at most once per `every`: the condition makes concurrent API
        processes agree on who writes, so a busy key costs one UPDATE a minute, not one
        per request."""
        stmt = (
            update(ApiKey)
            .where(
                ApiKey.id == key_id,
                or_(ApiKey.last_used_at.is_(None), ApiKey.last_used_at < now - every),
            )
            .values(last_used_at=now)
            .execution_options(synchronize_session=False)
        )
        return affected(self.session, stmt) == 1
