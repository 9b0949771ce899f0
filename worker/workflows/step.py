"""One step of a workflow, in one transaction under its row lock: tell it how the runs it is
waiting for ended, ask it for the next candidates, make a run for each (from the result
cache when a result is stored), and store its state and report.

Idempotent: the outcomes it was told are marked on their links, and a candidate's run is
made once (``workflow_runs`` is keyed by (workflow, key, seed)), so a step repeated by a
redelivered message, or two steps at once, each see what the other committed and do
nothing twice.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from engine import Scenario
from engine.analysis import estimate
from engine.study import StudyError, apply_changes
from engine.workflow import Candidate, Workflow
from settings import Settings
from store.models import Run, RunStatus, StoredWorkflow, WorkflowRun, WorkflowStatus
from store.new_runs import add_runs, cached_sources, new_run
from store.run_events import EventKind, RunEventRepository
from store.types import utcnow
from store.workflows import WorkflowRepository, summary_of
from worker.workflows.kinds import Kind

log = logging.getLogger(__name__)


class WorkflowError(Exception):
    """The workflow cannot go on (more runs than its budget, a kind this worker does not
    know, an error in its logic): it fails, with this message, keeping the report it had."""


@dataclass
class Step:
    """What one step did."""

    observed: int = 0
    made: list[Run] = field(default_factory=list)
    invalid: int = 0  # candidates whose changes make no valid scenario: observed as failed
    finished: bool = False

    @property
    def to_send(self) -> list[uuid.UUID]:
        """Runs to hand to the broker once the step is committed."""
        return [r.id for r in self.made if r.status is RunStatus.queued]

    @property
    def again(self) -> bool:
        """Runs born finished (served from the cache, or over the budget) can be observed
        at once: another step now rather than a wait for a message."""
        return not self.finished and (self.invalid > 0 or any(r.status.finished for r in self.made))


def step(
    session: Session, workflow_id: uuid.UUID, *, kinds: Mapping[str, Kind], settings: Settings
) -> Step | None:
    """Take one step; None when there is nothing to do (gone, or finished)."""
    repo = WorkflowRepository(session)
    wf = repo.lock(workflow_id)
    if wf is None or wf.status.finished:
        return None
    try:
        done = _advance(session, repo, wf, kinds, settings)
    except SQLAlchemyError:
        raise  # the database's trouble, not the workflow's: the task tries again
    except WorkflowError as exc:
        _fail(wf, "WorkflowError", str(exc))
        return Step(finished=True)
    except Exception as exc:  # the pure workflow's own error: fail it, say what it was
        log.exception("workflow %s failed", wf.id)
        _fail(wf, type(exc).__name__, str(exc) or type(exc).__name__)
        return Step(finished=True)
    return done


def _advance(
    session: Session,
    repo: WorkflowRepository,
    wf: StoredWorkflow,
    kinds: Mapping[str, Kind],
    settings: Settings,
) -> Step:
    """Everything that can fail (the workflow's logic, its candidates) runs before anything
    is written, so a failing step leaves no half-made round behind."""
    kind = kinds.get(wf.kind)
    if kind is None:
        raise WorkflowError(f"this worker knows no workflow of kind {wf.kind!r}")
    base = Scenario.model_validate(wf.scenario)
    workflow = kind.build(base, wf.request, wf.state)
    done = Step()
    for outcome in repo.to_observe(wf.id):
        summary = summary_of(outcome.result) if outcome.result is not None else None
        workflow.observe(outcome.link.key, outcome.link.seed, summary)
        outcome.link.observed = True
        done.observed += 1
    if done.observed:  # what it has learnt stays in its report should the rest fail
        wf.report = workflow.report().model_dump(mode="json")
    planned: list[tuple[Candidate, Run]] = []
    if not workflow.finished():
        planned, invalid = _plan_runs(session, repo, wf, base, workflow, settings)
        for c, why in invalid:  # no run can be made of it: as a run that failed
            log.info("workflow %s: candidate %s is not a valid scenario: %s", wf.id, c.key, why)
            workflow.observe(c.key, c.seed, None)
        done.invalid = len(invalid)
    done.finished = workflow.finished()
    # Stalled only when nothing is left to observe: a run that finished after this step
    # read its outcomes (two runs ending together) is observed by the step its end wakes.
    if not done.finished and not planned and not done.invalid and not repo.unobserved_runs(wf.id):
        raise WorkflowError("the workflow is not finished but asked for no run and waits for none")
    state, report = workflow.state(), workflow.report().model_dump(mode="json")
    curves = [p.model_dump(mode="json") for p in kind.curves(workflow)] if kind.curves else None
    done.made = _add_runs(session, repo, wf, planned)
    now = utcnow()
    wf.state, wf.report, wf.curves, wf.updated_at = state, report, curves, now
    wf.status = WorkflowStatus.succeeded if done.finished else WorkflowStatus.running
    if done.finished:
        wf.finished_at = now
    return done


def _plan_runs(
    session: Session,
    repo: WorkflowRepository,
    wf: StoredWorkflow,
    base: Scenario,
    workflow: Workflow,
    settings: Settings,
) -> tuple[list[tuple[Candidate, Run]], list[tuple[Candidate, str]]]:
    """A run (not stored yet) for each new candidate: queued, served from the cache, or
    failed at once when its estimated cost is over the per-run budget; and the candidates
    whose changes make no valid scenario (a lever value the scenario refuses), with why."""
    have = repo.links(wf.id)
    fresh = [c for c in workflow.propose() if (c.key, c.seed) not in have]
    if len(have) + len(fresh) > wf.run_budget:
        raise WorkflowError(
            f"it asked for {len(have) + len(fresh)} runs, over its budget of {wf.run_budget}"
        )
    scenarios: dict[str, Scenario] = {}
    invalid: list[tuple[Candidate, str]] = []
    for c in fresh:
        try:
            scenarios[c.key] = apply_changes(base, c.changes)
        except (StudyError, ValidationError, ValueError, LookupError) as exc:
            invalid.append((c, str(exc)))
    fresh = [c for c in fresh if c.key in scenarios]
    cached: dict[tuple[str, int], uuid.UUID] = {}
    if wf.cache == "reuse" and fresh:
        cached = cached_sources(
            session,
            {(scenarios[c.key].scenario_hash(), c.seed) for c in fresh},
            engine_version=wf.engine_version,
            tenant_id=wf.tenant_id,
        )
    now = utcnow()
    planned = []
    for c in fresh:
        scenario = scenarios[c.key]
        same = scenario.scenario_hash() == wf.scenario_hash
        fields: dict[str, Any] = dict(
            tenant_id=wf.tenant_id,
            scenario=scenario,
            seed=c.seed,
            source=cached.get((scenario.scenario_hash(), c.seed)),
            now=now,
            scenario_id=wf.scenario_id if same else None,
            preset=wf.preset if same else None,
        )
        if fields["source"] is None and (error := _over_budget(scenario, settings)) is not None:
            fields.update(status=RunStatus.failed, error=error, finished_at=now)
        planned.append((c, new_run(**fields)))
    return planned, invalid


def _add_runs(
    session: Session,
    repo: WorkflowRepository,
    wf: StoredWorkflow,
    planned: Sequence[tuple[Candidate, Run]],
) -> list[Run]:
    """Store the planned runs, each with its link to the candidate it answers."""
    runs = [run for _, run in planned]
    add_runs(session, runs)
    for run in runs:  # born failed: its history is queued (add_runs), then failed
        if run.status is RunStatus.failed:
            RunEventRepository(session).add(run.id, EventKind.failed, error=run.error)
    repo.add_links(
        [
            WorkflowRun(
                workflow_id=wf.id,
                key=c.key,
                seed=c.seed,
                run_id=run.id,
                round=c.round,
                changes=c.changes,
                observed=False,
            )
            for c, run in planned
        ]
    )
    return runs


def _over_budget(scenario: Scenario, settings: Settings) -> dict[str, str] | None:
    """Why a run of `scenario` may not be simulated (``api.limits``' per-run budget), or None."""
    try:
        events = int(estimate(scenario)["events"])
    except (ValueError, KeyError, LookupError, ArithmeticError) as exc:
        return {"type": "InvalidScenario", "message": f"cannot be simulated: {exc}"}
    if events <= settings.max_events_per_run:
        return None
    return {
        "type": "OverBudget",
        "message": f"estimated {events:,} simulation events, over the budget of "
        f"{settings.max_events_per_run:,} per run (TCPFR_MAX_EVENTS_PER_RUN)",
    }


def _fail(wf: StoredWorkflow, kind: str, message: str) -> None:
    now = utcnow()
    wf.status = WorkflowStatus.failed
    wf.error = {"type": kind, "message": message}
    wf.updated_at = wf.finished_at = now
