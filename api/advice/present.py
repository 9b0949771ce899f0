"""Advice documents as ``api.advice.schemas`` has them, JSON-ready: the workflow's status and
progress from its runs, its report, its runs each with the candidate it answers."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from api.runs import service as runs
from api.runs.present import run_brief, run_error
from store.models import Run, RunStatus, StoredWorkflow, WorkflowRun
from store.run_groups import Progress
from store.workflows import WorkflowRepository


def links(wf: StoredWorkflow) -> dict[str, Any]:
    base = f"/v1/advice/{wf.id}"
    return {
        "self": base,
        "runs": f"{base}/runs",
        "cancel": f"{base}/cancel",
        "stream": f"{base}/stream",
        "curves": f"{base}/curves",
        "base_run": f"/v1/runs/{wf.base_run_id}" if wf.base_run_id else None,
    }


def progress_of(wf: StoredWorkflow, progress: Progress) -> dict[str, Any]:
    c = progress.counts
    if wf.status.finished:
        fraction = 1.0
    else:
        done = progress.finished + progress.running_progress
        fraction = min(done / max(wf.run_budget, 1), 0.99)
    return {
        "counts": {s.value: c[s] for s in RunStatus},
        "runs": progress.total,
        "run_budget": wf.run_budget,
        "cache_hits": progress.cache_hits,
        "fraction": round(fraction, 4),
        "steps": wf.steps,
    }


def item(session: Session, wf: StoredWorkflow) -> dict[str, Any]:
    """The workflow as `AdviceListItem` has it."""
    progress = WorkflowRepository(session).progress(wf.id)
    return {
        "id": wf.id,
        "kind": wf.kind,
        "name": wf.name,
        "status": wf.status.value,
        "cancel_requested": wf.cancel_requested,
        "created_at": wf.created_at,
        "updated_at": wf.updated_at,
        "finished_at": wf.finished_at,
        "base": {
            "run_id": wf.base_run_id,
            "scenario_id": wf.scenario_id,
            "preset": wf.preset,
            "scenario_name": wf.scenario_name,
            "scenario_hash": wf.scenario_hash,
            "seed": wf.seed,
        },
        "progress": progress_of(wf, progress),
        "error": run_error(wf.error),
        "links": links(wf),
    }


def detail(session: Session, wf: StoredWorkflow) -> dict[str, Any]:
    """The workflow as `AdviceOut` has it: with its request and its report so far."""
    return {**item(session, wf), "request": wf.request, "report": wf.report}


def run_item(link: WorkflowRun, run: Run) -> dict[str, Any]:
    return {
        **run_brief(run),
        "key": link.key,
        "round": link.round,
        "changes": link.changes,
        "observed": link.observed,
    }


def runs_page(
    session: Session, wf_id: uuid.UUID, *, cursor: str | None, limit: int, status: RunStatus | None
) -> dict[str, Any]:
    found = WorkflowRepository(session).run_page(wf_id, cursor=cursor, limit=limit, status=status)
    return {
        "items": [run_item(link, run) for link, run in found.items],
        "next_cursor": found.next_cursor,
    }


def run_remedies(session: Session, run: Run, check: StoredWorkflow | None) -> dict[str, Any]:
    """A run's remedies as `RunRemedies` has them."""
    result = runs.result_of(session, run)
    predicted = None
    if result is not None:
        predicted = {
            flow: list(d.get("remedies") or [])
            for flow, d in (result.diagnosis or {}).items()
            if isinstance(d, dict)
        }
    return {
        "run_id": run.id,
        "status": run.status,
        "predicted": predicted,
        "check": detail(session, check) if check is not None else None,
        "links": {
            "run": f"/v1/runs/{run.id}",
            "check": f"/v1/runs/{run.id}/remedies/check",
        },
    }
