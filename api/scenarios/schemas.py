"""Bodies of /v1/scenarios."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from api.limits import Cost


class ScenarioListItem(BaseModel):
    id: uuid.UUID
    name: str
    scenario_hash: str
    created_at: datetime


class ScenarioOut(ScenarioListItem):
    scenario: dict[str, Any] = Field(description="The scenario in canonical form (SI numbers)")
    warnings: list[str] = Field(default_factory=list)


class ScenarioFacts(BaseModel):
    """A dry run: what the engine derives from the scenario without simulating it."""

    name: str
    scenario_hash: str
    warnings: list[str]
    facts: dict[str, Any] = Field(
        description="Per flow: path, path RTT, bottleneck link and rate, bandwidth-delay "
        "product, window bound; and an estimate of the simulation's size"
    )
    cost: Cost = Field(
        description="The estimated simulation events against the budget of one run: "
        "`within_budget: false` means `POST /v1/runs` would refuse it (422)"
    )
