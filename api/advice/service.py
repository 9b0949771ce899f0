"""Advice and remedy checks: check what is asked, store the workflow (the worker takes it
from there: ``worker.workflows``), read it back with its progress, cancel it. Nothing here
simulates or decides what to run."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

import engine
from api.advice import present
from api.advice.schemas import AdviceCreate, RemedyCheckCreate
from api.exceptions import Conflict, InvalidScenario, Unprocessable, field_error, found
from api.idempotency import create_once
from api.limits import enforce_budget
from api.runs import service as runs
from engine.advice.check import CheckRequest, RemedyCheck
from engine.advice.search import Advisor
from settings import Settings
from store.models import Run, RunStatus, StoredWorkflow, WorkflowStatus
from store.new_runs import scenario_document
from store.runs import RunRepository
from store.workflows import WorkflowRepository

ADVICE, CHECK = "advice", "remedy_check"
Loc = list[str | int]


def fingerprint(kind: str, body: BaseModel, *extra: object) -> str:
    raw = orjson.dumps(
        [kind, body.model_dump(mode="json"), *map(str, extra)], option=orjson.OPT_SORT_KEYS
    )
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def create(
    session: Session,
    *,
    tenant_id: uuid.UUID,
    body: AdviceCreate,
    settings: Settings,
    idempotency_key: str | None,
) -> tuple[StoredWorkflow, bool]:
    """The advice, and whether this request created it (False: an idempotent replay).
    Committed; the caller wakes a worker for its first step (``api.dispatch.wake``)."""
    repo = WorkflowRepository(session)

    def insert() -> StoredWorkflow:
        scenario, scenario_id, preset, run = _base(session, body, tenant_id, settings)
        request = body.advice_request()
        if request.budget > settings.advice_max_runs:
            msg = f"at most {settings.advice_max_runs} runs (TCPFR_ADVICE_MAX_RUNS)"
            raise Unprocessable(
                f"a budget of {request.budget} runs is over the cap: {msg}",
                errors=[field_error(["body", "budget"], msg, "too_many_runs")],
            )
        _validated(lambda: Advisor(scenario, request), where=_advice_field)
        return repo.create(
            tenant_id=tenant_id,
            kind=ADVICE,
            name=(body.name or f"{scenario.name}: {request.target.text()}")[:200],
            base_run_id=run.id if run is not None else None,
            scenario_id=scenario_id,
            preset=preset,
            scenario_name=scenario.name,
            scenario=scenario_document(scenario),
            scenario_hash=scenario.scenario_hash(),
            seed=scenario.seed,
            request=request.model_dump(mode="json"),
            run_budget=request.budget,
            cache=body.cache,
            engine_version=engine.ENGINE_VERSION,
            idempotency_key=idempotency_key,
            request_fingerprint=request_print,
        )

    request_print = fingerprint(ADVICE, body)
    lookup = partial(repo.by_idempotency_key, tenant_id=tenant_id)
    return create_once(
        session, key=idempotency_key, fingerprint=request_print, lookup=lookup, insert=insert
    )


def _base(
    session: Session, body: AdviceCreate, tenant_id: uuid.UUID, settings: Settings
) -> tuple[engine.Scenario, uuid.UUID | None, str | None, Run | None]:
    """The base scenario, with the seed its runs start from, and where it came from."""
    run = None
    if body.run_id is not None:
        run = _run_named(session, body.run_id, tenant_id, loc=["body", "run_id"])
        scenario = _scenario_of(run, loc=["body", "run_id"])
        scenario_id, preset = run.scenario_id, run.preset
    else:
        scenario, scenario_id, preset = runs.resolve_scenario(session, body, tenant_id=tenant_id)
    if body.seed is not None:
        scenario = scenario.model_copy(update={"seed": body.seed})
    source = next(f for f in ("scenario", "scenario_id", "preset", "run_id") if getattr(body, f))
    enforce_budget(scenario, settings, loc=("body", source))
    return scenario, scenario_id, preset, run


def _run_named(session: Session, run_id: uuid.UUID, tenant_id: uuid.UUID, *, loc: Loc) -> Run:
    run = RunRepository(session).owned(run_id, tenant_id=tenant_id)
    if run is None:
        raise InvalidScenario(
            f"no run with id {run_id}", errors=[field_error(loc, "unknown run id", "not_found")]
        )
    return run


def _scenario_of(run: Run, *, loc: Loc) -> engine.Scenario:
    """The run's scenario, seeded as the run was."""
    try:
        scenario = engine.Scenario.model_validate(run.scenario)
    except ValidationError as exc:
        msg = f"the run's scenario no longer validates against this engine: {exc}"
        raise InvalidScenario(msg, errors=[field_error(loc, msg)]) from exc
    return scenario.model_copy(update={"seed": run.seed})


def _advice_field(message: str) -> Loc:
    """Where in an advice request the advisor's complaint points (it names the field)."""
    for name in ("target", "assurance"):
        if message.startswith(name):
            return ["body", name]
    return ["body", "levers"]


def _validated(build: Callable[[], Any], *, where: Callable[[str], Loc]) -> Any:
    """The workflow `build` makes (it checks the request against the scenario), or a 422
    at the field its complaint names."""
    try:
        return build()
    except (ValueError, LookupError) as exc:
        msg = str(exc)
        raise Unprocessable(msg, errors=[field_error(where(msg), msg)]) from exc


# --- a run's remedy check -----------------------------------------------------------------


def create_check(
    session: Session,
    run_id: uuid.UUID,
    *,
    tenant_id: uuid.UUID,
    body: RemedyCheckCreate,
    settings: Settings,
) -> tuple[StoredWorkflow, bool]:
    """The run's remedies, each simulated on the run's seeds. A check already made or under
    way with the same options is the answer (False): a run's remedies are checked once."""
    run = runs.get(session, run_id, tenant_id=tenant_id)
    if run.status is not RunStatus.succeeded:
        raise Conflict(
            f"run {run_id} is {run.status.value}: its remedies can be checked once it has "
            "succeeded",
            status_value=run.status.value,
        )
    repo = WorkflowRepository(session)
    request_print = fingerprint(CHECK, body, run.id)
    earlier = repo.latest_for_run(run.id, kind=CHECK)
    if (
        earlier is not None
        and earlier.request_fingerprint == request_print
        and earlier.status not in (WorkflowStatus.failed, WorkflowStatus.cancelled)
    ):
        return earlier, False
    scenario = _scenario_of(run, loc=["path", "run_id"])
    first = CheckRequest(replications=body.replications)
    check = _validated(lambda: RemedyCheck(scenario, first), where=lambda _: ["body"])
    # Every configuration on at most `most` seeds: the scenario again and each remedy with
    # a change, within the service's cap on a workflow's runs.
    configurations = 1 + _changing(session, run, first)
    most = max(len(check.seeds), min(check.most, settings.advice_max_runs // configurations))
    request = CheckRequest(replications=body.replications, most_seeds=most)
    budget = min(most * configurations, settings.advice_max_runs)
    wf = repo.create(
        tenant_id=tenant_id,
        kind=CHECK,
        name=f"{run.preset or run.scenario_name}: remedies checked"[:200],
        base_run_id=run.id,
        scenario_id=run.scenario_id,
        preset=run.preset,
        scenario_name=scenario.name,
        scenario=scenario_document(scenario),
        scenario_hash=scenario.scenario_hash(),
        seed=scenario.seed,
        request=request.model_dump(mode="json"),
        run_budget=budget,
        cache=body.cache,
        engine_version=engine.ENGINE_VERSION,
        request_fingerprint=request_print,
    )
    session.commit()
    return wf, True


def _changing(session: Session, run: Run, request: CheckRequest) -> int:
    """The remedies with a change the check will run. Its first seed is the run's own, so
    its first base run is a cache hit of the run and gives the same diagnosis: the remedies
    counted here are the ones it will check."""
    result = runs.result_of(session, run)
    diagnosis = result.diagnosis if result is not None else {}
    flows = [request.flow] if request.flow else list(diagnosis)
    remedies: list[Any] = []
    for flow in flows:
        remedies = (diagnosis.get(flow) or {}).get("remedies") or []
        if remedies:
            break
    return sum(1 for r in remedies if r.get("changes"))


# --- reading, cancelling -------------------------------------------------------------------


def get(session: Session, advice_id: uuid.UUID, *, tenant_id: uuid.UUID) -> StoredWorkflow:
    return found(
        WorkflowRepository(session).owned(advice_id, tenant_id=tenant_id), "advice", advice_id
    )


def latest_check(
    session: Session, run_id: uuid.UUID, *, tenant_id: uuid.UUID
) -> tuple[Run, StoredWorkflow | None]:
    """The run and its newest remedy check, if it has one."""
    run = runs.get(session, run_id, tenant_id=tenant_id)
    return run, WorkflowRepository(session).latest_for_run(run.id, kind=CHECK)


def cancel(session: Session, advice_id: uuid.UUID, *, tenant_id: uuid.UUID) -> dict[str, Any]:
    """Cancel it and its queued runs at once; running ones stop at their next heartbeat.
    Idempotent: a finished one is left as it is, its report kept. The advice, JSON-ready."""
    wf = get(session, advice_id, tenant_id=tenant_id)
    if WorkflowRepository(session).cancel(wf.id, what="advice"):
        session.commit()
    session.refresh(wf)
    return present.detail(session, wf)


def list_page(
    session: Session, *, tenant_id: uuid.UUID, kind: str | None, cursor: str | None, limit: int
) -> dict[str, Any]:
    """The tenant's advice and remedy checks, newest first, JSON-ready."""
    found = WorkflowRepository(session).list(
        tenant_id=tenant_id, kind=kind, cursor=cursor, limit=limit
    )
    items = [present.item(session, wf) for wf in found.items]
    return {"items": items, "next_cursor": found.next_cursor}


def runs_page(
    session: Session,
    advice_id: uuid.UUID,
    *,
    tenant_id: uuid.UUID,
    cursor: str | None,
    limit: int,
    status: RunStatus | None,
) -> dict[str, Any]:
    """A page of the runs the advice made, in the order it made them, JSON-ready."""
    wf = get(session, advice_id, tenant_id=tenant_id)
    return present.runs_page(session, wf.id, cursor=cursor, limit=limit, status=status)


def remedies(session: Session, run_id: uuid.UUID, *, tenant_id: uuid.UUID) -> dict[str, Any]:
    """A run's remedies, predicted and (once checked) measured, JSON-ready."""
    run, check = latest_check(session, run_id, tenant_id=tenant_id)
    return present.run_remedies(session, run, check)
