"""Multi-run workflows: the pure half (DESIGN.md "Answers").

A workflow decides which simulations to run, round by round, from the results of the ones it
has already seen: the advisor searching for the cheapest fix that meets a target, a check of
a run's remedies, a sweep (one round, every point). Its logic is pure and lives in the engine
(engine/advice/ for the advisor and the remedy check), testable with `simulate()` alone; the
worker side (worker/workflows/) stores its state in the database, turns each `Candidate` into
an ordinary run, and calls `observe` as those runs finish. Nothing here knows about runs, rows
or queues.

The contract every workflow keeps:

- `propose()` returns the candidates of the next round that have not been proposed before
  (each `(key, seed)` at most once over the workflow's life), or `[]` when the workflow is
  waiting for results it has asked for, or when it is finished (`finished()` tells which).
- `observe(key, seed, summary)` hands it the summary (`Result.summary()`: everything but the
  series) of a proposed candidate's run, or `None` when that run failed or was cancelled.
  Observing the same `(key, seed)` twice is harmless (a redelivered message).
- `state()` is JSON-ready and `restore(scenario, request, state)` rebuilds an equal workflow
  from it, so each step can run in a different process (idempotent steps).
- `report()` is the typed answer so far; it is valid at any time, final once `finished()`.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field


class Candidate(BaseModel):
    """One simulation a workflow asks for: the base scenario with `changes` applied."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(description="Stable within the workflow: the same changes, the same key")
    changes: dict[str, Any] = Field(
        description="Dotted path (as sweeps use them: flows.backup.tcp.rcv_buf) -> new value; "
        "empty for the base scenario itself"
    )
    seed: int
    round: int = Field(ge=0, description="The round that first proposed it")


class Workflow(Protocol):
    """What the worker's orchestration drives; see the module docstring for the contract."""

    def propose(self) -> list[Candidate]: ...

    def observe(self, key: str, seed: int, summary: dict[str, Any] | None) -> None: ...

    def finished(self) -> bool: ...

    def state(self) -> dict[str, Any]: ...

    def report(self) -> BaseModel: ...
