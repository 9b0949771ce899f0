"""/v1/scenarios: validate (dry run), store, list, read, delete."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Response, status

from api.deps import SessionDep, SettingsDep, TenantDep
from api.limits import cost_of
from api.pagination import Page, PageParamsDep
from api.responses import problem_responses
from api.scenarios import service
from api.scenarios.schemas import ScenarioFacts, ScenarioListItem, ScenarioOut
from engine import Scenario
from store.models import StoredScenario
from store.scenarios import ScenarioRepository

router = APIRouter(prefix="/v1/scenarios", tags=["scenarios"])


def _out(row: StoredScenario) -> ScenarioOut:
    return ScenarioOut(
        id=row.id,
        name=row.name,
        scenario_hash=row.scenario_hash,
        created_at=row.created_at,
        scenario=row.body,
        warnings=service.warnings_of(row.body),
    )


@router.post("/validate", operation_id="validate_scenario", responses=problem_responses(422))
def validate_scenario(scenario: Scenario, settings: SettingsDep) -> ScenarioFacts:
    """Dry run: validate, and return the derived facts, warnings and the estimated cost
    against the budget of one run; stores nothing."""
    facts = service.describe(scenario)
    return ScenarioFacts(
        name=scenario.name,
        scenario_hash=scenario.scenario_hash(),
        warnings=list(scenario.warnings()),
        facts=facts,
        cost=cost_of(facts["estimate"], settings),
    )


@router.post(
    "",
    operation_id="create_scenario",
    status_code=status.HTTP_201_CREATED,
    responses=problem_responses(422),
)
def create_scenario(
    scenario: Scenario, session: SessionDep, tenant_id: TenantDep, response: Response
) -> ScenarioOut:
    """Store a scenario; run it later with `{"scenario_id": ...}`."""
    row = service.create(session, scenario, tenant_id=tenant_id)
    response.headers["Location"] = f"/v1/scenarios/{row.id}"
    return _out(row)


@router.get("", operation_id="list_scenarios", responses=problem_responses(422))
def list_scenarios(
    session: SessionDep, tenant_id: TenantDep, page: PageParamsDep
) -> Page[ScenarioListItem]:
    """Stored scenarios, newest first."""
    result = ScenarioRepository(session).list(
        tenant_id=tenant_id, cursor=page.cursor, limit=page.limit
    )
    items = [
        ScenarioListItem(
            id=r.id, name=r.name, scenario_hash=r.scenario_hash, created_at=r.created_at
        )
        for r in result.items
    ]
    return Page(items=items, next_cursor=result.next_cursor)


@router.get("/{scenario_id}", operation_id="get_scenario", responses=problem_responses(404))
def get_scenario(scenario_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep) -> ScenarioOut:
    return _out(service.get(session, scenario_id, tenant_id=tenant_id))


@router.delete(
    "/{scenario_id}",
    operation_id="delete_scenario",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404),
)
def delete_scenario(scenario_id: uuid.UUID, session: SessionDep, tenant_id: TenantDep) -> None:
    """Delete a stored scenario; runs made from it keep their own copy."""
    service.delete(session, scenario_id, tenant_id=tenant_id)
