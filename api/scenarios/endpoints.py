"""/v1/scenarios: validate (dry run), store, list, read, delete."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Response, status
from sqlalchemy.orm import Session

from api.deps import DbDep, SettingsDep, TenantDep
from api.limits import cost_of
from api.pagination import Page, PageParamsDep
from api.responses import problem_responses
from api.scenarios import service
from api.scenarios.schemas import ScenarioFacts, ScenarioListItem, ScenarioOut
from engine import Scenario
from engine.analysis.warnings import scenario_warnings
from store.models import StoredScenario
from store.repository import Page as StorePage
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
async def validate_scenario(scenario: Scenario, settings: SettingsDep) -> ScenarioFacts:
    """Dry run: validate, and return the derived facts, warnings and the estimated cost
    against the budget of one run; stores nothing."""
    facts = service.describe(scenario)
    return ScenarioFacts(
        name=scenario.name,
        scenario_hash=scenario.scenario_hash(),
        warnings=list(scenario_warnings(scenario)),
        facts=facts,
        cost=cost_of(facts["estimate"], settings),
    )


@router.post(
    "",
    operation_id="create_scenario",
    status_code=status.HTTP_201_CREATED,
    responses=problem_responses(422),
)
async def create_scenario(
    scenario: Scenario, db: DbDep, tenant_id: TenantDep, response: Response
) -> ScenarioOut:
    """Store a scenario; run it later with `{"scenario_id": ...}`."""
    row = await db(service.create, scenario, tenant_id=tenant_id)
    response.headers["Location"] = f"/v1/scenarios/{row.id}"
    return _out(row)


@router.get("", operation_id="list_scenarios", responses=problem_responses(422))
async def list_scenarios(
    db: DbDep, tenant_id: TenantDep, page: PageParamsDep
) -> Page[ScenarioListItem]:
    """Stored scenarios, newest first."""

    def query(session: Session) -> StorePage[StoredScenario]:
        return ScenarioRepository(session).list(
            tenant_id=tenant_id, cursor=page.cursor, limit=page.limit
        )

    result = await db(query)
    items = [
        ScenarioListItem(
            id=r.id, name=r.name, scenario_hash=r.scenario_hash, created_at=r.created_at
        )
        for r in result.items
    ]
    return Page(items=items, next_cursor=result.next_cursor)


@router.get("/{scenario_id:uuid}", operation_id="get_scenario", responses=problem_responses(404))
async def get_scenario(scenario_id: uuid.UUID, db: DbDep, tenant_id: TenantDep) -> ScenarioOut:
    return _out(await db(service.get, scenario_id, tenant_id=tenant_id))


@router.delete(
    "/{scenario_id:uuid}",
    operation_id="delete_scenario",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(404),
)
async def delete_scenario(scenario_id: uuid.UUID, db: DbDep, tenant_id: TenantDep) -> None:
    """Delete a stored scenario; runs made from it keep their own copy."""
    await db(service.delete, scenario_id, tenant_id=tenant_id)
