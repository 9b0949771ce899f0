"""What an advice is asked (`AdviceRequest`), and what both workflows share: the key of a
configuration and whether a scenario's result depends on its seed (then each configuration
runs on several seeds)."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.advice.levers import CostTable
from engine.advice.options import LeverSpec
from engine.advice.target import Target
from engine.scenario import Scenario, TcpBulkFlow
from engine.tcp.cc import congestion_ops

RANDOM_REPLICATIONS = 3


class AdviceRequest(BaseModel):
    """What an advice is asked: a target, the levers allowed (with their costs), a budget."""

    model_config = ConfigDict(extra="forbid")

    target: Target
    levers: list[LeverSpec] | None = Field(
        default=None, max_length=32, description="Null: every lever that can matter (options.py)"
    )
    budget: int = Field(default=30, ge=1, le=1000, description="Most simulations to run")
    replications: int | None = Field(
        default=None,
        ge=1,
        le=30,
        description="Seeds per configuration; null: 3 when the scenario has randomness, else 1",
    )
    costs: CostTable = Field(default_factory=CostTable)
    combine: bool = Field(default=True, description="Try pairs when no lever alone suffices")
    assurance: Literal["mean", "interval"] = Field(
        default="mean",
        description="When a configuration run on several seeds meets the target: `mean`, "
        "when the mean of its seeds does; `interval`, only when its whole 95% interval does "
        "(the interval's far end), for a user who must be sure. A configuration of a scenario "
        "without randomness runs on one seed and its value is exact either way",
    )


def key_of(changes: dict[str, Any]) -> str:
    """The same changes, the same key: `base`, or `path=value|...` in path order."""
    if not changes:
        return "base"
    return "|".join(f"{p}={json.dumps(changes[p], sort_keys=True)}" for p in sorted(changes))


def replications(scenario: Scenario, asked: int | None) -> int:
    """The seeds a configuration runs on: as asked, else RANDOM_REPLICATIONS for a scenario
    with randomness and one for a scenario without (its one result is exact)."""
    return asked or (RANDOM_REPLICATIONS if is_random(scenario) else 1)


def is_random(scenario: Scenario) -> bool:
    """Whether a different seed can give a different result."""
    for link in scenario.links:
        loss = link.loss
        if loss.model in ("bernoulli", "ber", "gilbert_elliott") and (
            (loss.rate or 0) > 0
            or (loss.ber or 0) > 0
            or (loss.p_gb or 0) > 0
            or loss.loss_good > 0
        ):
            return True
        for direction in ("a_to_b", "b_to_a"):
            if link.queue_of(direction).discipline == "red":
                return True
    pvcs = scenario.frame_relay.pvcs if scenario.frame_relay else []
    if any(p.residual_error_rate > 0 for p in pvcs):
        return True
    return any(
        congestion_ops(f.tcp).randomized for f in scenario.flows if isinstance(f, TcpBulkFlow)
    )
