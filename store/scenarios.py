"""Stored scenarios."""

from __future__ import annotations

import uuid
from typing import Any

from store.models import StoredScenario
from store.repository import Page, Repository


class ScenarioRepository(Repository[StoredScenario]):
    model = StoredScenario

    def create(
        self, *, tenant_id: uuid.UUID, name: str, scenario_hash: str, body: dict[str, Any]
    ) -> StoredScenario:
        return self.insert(
            StoredScenario(tenant_id=tenant_id, name=name, scenario_hash=scenario_hash, body=body)
        )

    def list(self, *, tenant_id: uuid.UUID, cursor: str | None, limit: int) -> Page[StoredScenario]:
        stmt = self.select().where(StoredScenario.tenant_id == tenant_id)
        return self.page(stmt, cursor=cursor, limit=limit)

    def delete(self, row: StoredScenario) -> None:
        self.session.delete(row)
        self.session.flush()
