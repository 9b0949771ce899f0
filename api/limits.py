"""What one run may cost: the engine's estimate of a scenario's size against the budget.

A run costs its simulation events (``engine.analysis.estimate``, within a factor of 2 of
real runs on the presets and the synthetic scenarios of tests/unit/test_estimate.py) and a
worker's memory while it runs (``engine.analysis.memory``, erring high). A scenario
estimated over ``max_events_per_run`` or ``max_run_memory`` is refused with a 422 stating
the estimate, the budget and what to change, before anything is stored: the runs service
checks each run request, the sweeps service each point, and the dry run (``POST
/v1/scenarios/validate``) shows the same figures before anything is submitted. The
worker's time limit and memory ceiling stop what the estimate missed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Literal

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
    memory_bytes: int = Field(
        default=0,
        description="A worker's peak memory while it runs this (its series points, flows, "
        "packets in flight, captures and the process itself), erring high",
    )
    series_points: int = Field(
        default=0, description="Points its time-series will hold (the engine's point budget)"
    )


class Budget(BaseModel):
    events: int = Field(description="The most events a run may be estimated at")
    seconds: float = Field(description="The same in wall-clock seconds of one worker, roughly")
    memory_bytes: int = Field(
        description="The most memory a run may be estimated at; workers stop a run past it"
    )


Overrun = Literal["events", "memory"]

#: What to change in a scenario to bring each estimate down.
REMEDIES: dict[Overrun, str] = {
    "events": "shorten `duration` or the flows' `bytes` or `stop`, lower CBR rates, or raise "
    "`sample_interval`",
    "memory": "raise `sample_interval`, shorten `duration`, use fewer flows or smaller "
    "windows and queues, or lower the captures' `max_packets`",
}


class Cost(BaseModel):
    """A scenario's estimated cost and the budget: what `POST /v1/runs` would decide."""

    estimate: Estimate
    budget: Budget
    within_budget: bool = Field(description="False: `POST /v1/runs` refuses it with a 422")
    over: list[Overrun] = Field(
        default_factory=list, description="What exceeds the budget: `events`, `memory`"
    )

    def refusal(self) -> str:
        """Why a run of this cost is refused, and what would change that."""
        est, budget = self.estimate, self.budget
        said = {
            "events": f"{est.events:,} simulation events (about {est.seconds:,.0f} s of a "
            f"worker) exceed the budget of {budget.events:,} per run",
            "memory": f"{_mib(est.memory_bytes)} of a worker's memory exceeds the budget of "
            f"{_mib(budget.memory_bytes)} per run (TCPFR_MAX_RUN_MEMORY)",
        }
        return "; ".join(f"estimated {said[what]}: {REMEDIES[what]}" for what in self.over)


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


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
    estimated = Estimate(
        packets=size["packets"],
        events=size["events"],
        sim_time=size["sim_time"],
        seconds=round(size["events"] / speed, 3),
        capture_packets=size.get("capture_packets", 0),
        capture_bytes=size.get("capture_bytes", 0),
        memory_bytes=size.get("memory_bytes", 0),
        series_points=size.get("series_points", 0),
    )
    budget = Budget(
        events=settings.max_events_per_run,
        seconds=round(settings.max_events_per_run / speed, 3),
        memory_bytes=settings.max_run_memory,
    )
    over: list[Overrun] = []
    if estimated.events > budget.events:
        over.append("events")
    if estimated.memory_bytes > budget.memory_bytes:
        over.append("memory")
    return Cost(estimate=estimated, budget=budget, within_budget=not over, over=over)


def enforce_budget(
    scenario: Scenario, settings: Settings, *, loc: Loc = ("body", "scenario")
) -> Cost:
    """The scenario's cost, or OverBudget (422 problem+json with `estimate`, `budget`, `over`
    and an error at `loc`, the request field that named the scenario) when it exceeds the
    budget."""
    found = cost(scenario, settings)
    if found.within_budget:
        return found
    msg = found.refusal()
    raise OverBudget(
        msg,
        errors=[field_error(loc, msg, "over_budget")],
        estimate=found.estimate.model_dump(),
        budget=found.budget.model_dump(),
        over=found.over,
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
