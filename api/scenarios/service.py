"""Scenarios: store, read, delete, and the dry run."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

import engine
from api.exceptions import InvalidScenario, found
from engine.analysis.warnings import scenario_warnings
from store.models import StoredScenario
from store.new_runs import scenario_document
from store.scenarios import ScenarioRepository


def create(session: Session, scenario: engine.Scenario, *, tenant_id: uuid.UUID) -> StoredScenario:
    row = ScenarioRepository(session).create(
        tenant_id=tenant_id,
        name=scenario.name,
        scenario_hash=scenario.scenario_hash(),
        body=scenario_document(scenario),
    )
    session.commit()
    return row


def get(session: Session, scenario_id: uuid.UUID, *, tenant_id: uuid.UUID) -> StoredScenario:
    """The tenant's scenario; another tenant's is a 404, like one that does not exist."""
    row = ScenarioRepository(session).owned(scenario_id, tenant_id=tenant_id)
    return found(row, "scenario", scenario_id)


def delete(session: Session, scenario_id: uuid.UUID, *, tenant_id: uuid.UUID) -> None:
    ScenarioRepository(session).delete(get(session, scenario_id, tenant_id=tenant_id))
    session.commit()


def warnings_of(body: dict[str, Any]) -> list[str]:
    try:
        return list(scenario_warnings(engine.Scenario.model_validate(body)))
    except Exception:  # a scenario stored by an older engine: show it, warn nothing
        return []


def describe(scenario: engine.Scenario) -> dict[str, Any]:
    """The engine's dry-run facts. A scenario that validates but cannot be laid out
    (no route between a flow's ends, say) is the client's problem: a 422."""
    try:
        return engine.describe(scenario)
    except (ValueError, KeyError, LookupError, ArithmeticError) as exc:
        raise InvalidScenario(f"the scenario cannot be simulated: {exc}") from exc
