"""Stored scenarios."""

from __future__ import annotations

from typing import Any

from store.models import StoredScenario
from store.repository import Page, Repository


class ScenarioRepository(Repository[StoredScenario]):
    model = StoredScenario

    def create(self, *, name: str, scenario_hash: str, body: dict[str, Any]) -> StoredScenario:
        row = StoredScenario(name=name, scenario_hash=scenario_hash, body=body)
        self.session.add(row)
        self.session.flush()
        return row

    def list(self, *, cursor: str | None, limit: int) -> Page[StoredScenario]:
        return self.page(self.select(), cursor=cursor, limit=limit)

    def delete(self, row: StoredScenario) -> None:
        self.session.delete(row)
        self.session.flush()
