"""What one run may cost: the engine's estimate of a scenario's size against the budget.

A run costs its simulation events (``engine.analysis.estimate``, within a factor of 2 of
real runs on the presets and the synthetic scenarios of tests/unit/test_estimate.py). A
scenario estimated over ``max_events_per_run`` is refused with a 422 stating the estimate
and the budget, before anything is stored: the runs service checks each run request, the
sweeps service each point, and the dry run (``POST /v1/scenarios/validate``) shows the
same figures before anything is submitted. The worker's time limit stops what the
estimate missed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from api.exceptions import InvalidScenario, OverBudget, TooManyRequests, field_error
from engine import Scenario
from engine.analysis import estimate
from settings import Settings
from store.runs import RunRepository

Loc = Sequence[str | int]


class Estimate(BaseModel):
    packets: int = Field(description="Packets the flows send end to end: data, ACKs, datagrams")
    events: int = Field(description="Simulation events, the cost a budget counts")
    sim_time: float = Field(description="Simulated seconds until the run ends")
    seconds: float = Field(description="Wall-clock seconds of one worker process, roughly")
    capture_packets: int = Field(
        default=0, description="Packets the scenario's captures will hold (in `events` too)"
    )
    capture_bytes: int = Field(
        default=0, description="The most bytes the captures' libpcap files can take"
    )


class Budget(BaseModel):
    events: int = Field(description="The most events a run may be estimated at")
    seconds: float = Field(description="The same in wall-clock seconds of one worker, roughly")


class Cost(BaseModel):
    """A scenario's estimated cost and the budget: what `POST /v1/runs` would decide."""

    estimate: Estimate
    budget: Budget
    within_budget: bool = Field(description="False: `POST /v1/runs` refuses it with a 422")


def cost(scenario: Scenario, settings: Settings) -> Cost:
    """The scenario's estimated cost against the configured budget."""
    try:
        size = estimate(scenario)
    except (ValueError, KeyError, LookupError, ArithmeticError) as exc:
        # Validated but impossible to lay out: the client's problem, as in the dry run.
        raise InvalidScenario(f"the scenario cannot be simulated: {exc}") from exc
    return cost_of(size, settings)


def cost_of(size: dict, settings: Settings) -> Cost:
    """The budget's verdict on an estimate already made (``engine.describe()["estimate"]``)."""
    speed = settings.engine_events_per_second
    return Cost(
        estimate=Estimate(
            packets=size["packets"],
            events=size["events"],
            sim_time=size["sim_time"],
            seconds=round(size["events"] / speed, 3),
            capture_packets=size.get("capture_packets", 0),
            capture_bytes=size.get("capture_bytes", 0),
        ),
        budget=Budget(
            events=settings.max_events_per_run,
            seconds=round(settings.max_events_per_run / speed, 3),
        ),
        within_budget=size["events"] <= settings.max_events_per_run,
    )


def enforce_budget(
    scenario: Scenario, settings: Settings, *, loc: Loc = ("body", "scenario")
) -> Cost:
    """The scenario's cost, or OverBudget (422 problem+json with `estimate`, `budget` and an
    error at `loc`, the request field that named the scenario) when it exceeds the budget."""
    found = cost(scenario, settings)
    if found.within_budget:
        return found
    est, budget = found.estimate, found.budget
    msg = (
        f"estimated {est.events:,} simulation events (about {est.seconds:,.0f} s of a worker) "
        f"exceed the budget of {budget.events:,} per run: shorten `duration` or the flows' "
        "`bytes` or `stop`, lower CBR rates, or raise `sample_interval`"
    )
    raise OverBudget(
        msg,
        errors=[field_error(loc, msg, "over_budget")],
        estimate=est.model_dump(),
        budget=budget.model_dump(),
    )


#: Seconds a client is asked to wait when its tenant has too many runs queued or running.
ACTIVE_RUNS_RETRY_AFTER = 30


def reserve_runs(session: Session, *, tenant_id: uuid.UUID, count: int, settings: Settings) -> None:
    """Room for `count` more queued runs under the tenant's limit of runs queued or running
    at once, or a 429. Holds the tenant's lock until the caller's transaction ends, so
    concurrent submissions are counted one after the other."""
    limit = settings.max_active_runs
    if limit == 0 or count == 0:
        return
    runs = RunRepository(session)
    runs.lock_tenant(tenant_id)
    active = runs.active_count(tenant_id=tenant_id)
    if active + count > limit:
        raise TooManyRequests(
            f"this would make {active + count} runs queued or running for this tenant, over "
            f"its limit of {limit} (it has {active}); wait for some to finish, or cancel some",
            retry_after=ACTIVE_RUNS_RETRY_AFTER,
            limit=limit,
            active=active,
            requested=count,
        )
