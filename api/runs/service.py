"""Runs: resolve what to simulate, serve from the cache or queue it, cancel it."""

from __future__ import annotations

import difflib
import hashlib
import logging
import uuid
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import orjson
from pydantic import ValidationError
from sqlalchemy.orm import Session

import engine
from api.exceptions import Conflict, InvalidScenario, NotFound, field_error, field_errors, found
from api.idempotency import create_once
from api.limits import enforce_budget, reserve_runs
from api.runs.present import run_history
from api.runs.schemas import RunCreate
from engine.analysis.warnings import scenario_warnings
from engine.presets import PresetError, UnknownPreset, list_presets, load_preset
from settings import Settings
from store import results as stored_results
from store.models import Run, RunResult, RunStatus
from store.new_runs import cache_hit, scenario_document
from store.results import ResultRepository
from store.run_events import RunEventRepository
from store.runs import RunRepository
from store.scenarios import ScenarioRepository

log = logging.getLogger(__name__)


def fingerprint(body: RunCreate) -> str:
    raw = orjson.dumps(body.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def warnings_of(run: Run) -> list[str]:
    """The scenario's advisory warnings (a transfer that cannot finish within `duration`,
    a window above the BDP without scaling ...): the run is valid and queued regardless."""
    try:
        return list(scenario_warnings(engine.Scenario.model_validate(run.scenario)))
    except (ValidationError, ValueError, LookupError, ArithmeticError):
        return []


class ScenarioSource(Protocol):
    """A request that names a scenario by one of these (a run's, an advice's)."""

    scenario: engine.Scenario | None
    scenario_id: uuid.UUID | None
    preset: str | None


def resolve_scenario(
    session: Session, body: ScenarioSource, *, tenant_id: uuid.UUID
) -> tuple[engine.Scenario, uuid.UUID | None, str | None]:
    """The scenario `body` names, the stored scenario's id or the preset's name it came
    from; a 422 naming the field when there is no such scenario."""
    if body.scenario is not None:
        return body.scenario, None, None
    if body.scenario_id is not None:
        # Another tenant's scenario is unknown here, exactly like one that never existed.
        stored = ScenarioRepository(session).owned(body.scenario_id, tenant_id=tenant_id)
        if stored is None:
            raise InvalidScenario(
                f"no scenario with id {body.scenario_id}",
                errors=[field_error(["body", "scenario_id"], "unknown scenario id", "not_found")],
            )
        try:
            return engine.Scenario.model_validate(stored.body), stored.id, None
        except ValidationError as exc:
            raise InvalidScenario(
                "the stored scenario no longer validates against this engine",
                errors=field_errors(exc.errors(), prefix=["body", "scenario_id"]),
            ) from exc
    assert body.preset is not None
    return preset_scenario(body.preset, loc=["body", "preset"]), None, body.preset


def preset_scenario(name: str, *, loc: list[str | int]) -> engine.Scenario:
    kinds = {p.name: p.kind for p in list_presets()}
    if name not in kinds:
        close = difflib.get_close_matches(name, [n for n, k in kinds.items() if k == "scenario"])
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidScenario(
            f"unknown preset {name!r}{hint}",
            errors=[
                field_error(loc, f"unknown preset{hint}; GET /v1/presets lists them", "not_found")
            ],
        )
    if kinds[name] != "scenario":
        raise InvalidScenario(
            f"preset {name!r} is a {kinds[name]}, not a single scenario",
            errors=[
                field_error(loc, f"preset of kind {kinds[name]!r} cannot be run as one scenario")
            ],
        )
    try:
        return load_preset(name)
    except (UnknownPreset, PresetError) as exc:
        raise InvalidScenario(str(exc), errors=[field_error(loc, str(exc))]) from exc


def create(
    session: Session,
    *,
    tenant_id: uuid.UUID,
    body: RunCreate,
    idempotency_key: str | None,
    settings: Settings,
) -> tuple[Run, bool]:
    """Returns the run and whether this request created it (False: an idempotent replay).
    A created run that is queued is committed but not sent: the caller sends it
    (``api.dispatch.enqueue``), off the event loop."""
    runs = RunRepository(session)

    def insert() -> Run:
        scenario, scenario_id, preset = resolve_scenario(session, body, tenant_id=tenant_id)
        # Over the budget is refused before anything is stored, a cache hit included:
        # whether a request is accepted must not depend on what someone ran before.
        source = next(
            f for f in ("scenario", "scenario_id", "preset") if getattr(body, f) is not None
        )
        enforce_budget(scenario, settings, loc=("body", source))
        seed = body.seed if body.seed is not None else scenario.seed
        fields: dict[str, Any] = dict(
            tenant_id=tenant_id,
            scenario_id=scenario_id,
            preset=preset,
            scenario_name=scenario.name,
            scenario_hash=scenario.scenario_hash(),
            scenario=scenario_document(scenario),
            seed=seed,
            engine_version=engine.ENGINE_VERSION,
            idempotency_key=idempotency_key,
            request_fingerprint=print_,
        )
        cached = None
        if body.cache == "reuse":
            # The cache is per tenant. A hit across tenants would tell B that someone
            # already simulated this exact network (a scenario describes a customer's WAN),
            # hand B the id of A's run as source_run_id, and let B's reads of results and
            # series go through A's run. Re-simulating is the price of that isolation; the
            # results are the same to the bit anyway.
            cached = runs.find_cached(
                scenario_hash=fields["scenario_hash"],
                seed=seed,
                engine_version=engine.ENGINE_VERSION,
                tenant_id=tenant_id,
            )
        if cached is not None:
            fields.update(cache_hit(cached.id))
        else:
            reserve_runs(session, tenant_id=tenant_id, count=1, settings=settings)
        return runs.create(**fields)

    print_ = fingerprint(body)
    lookup = partial(runs.by_idempotency_key, tenant_id=tenant_id)
    return create_once(
        session, key=idempotency_key, fingerprint=print_, lookup=lookup, insert=insert
    )


def get(session: Session, run_id: uuid.UUID, *, tenant_id: uuid.UUID) -> Run:
    """The tenant's run; another tenant's is a 404, so ids reveal nothing across tenants."""
    return found(RunRepository(session).owned(run_id, tenant_id=tenant_id), "run", run_id)


def history(session: Session, run_id: uuid.UUID, *, tenant_id: uuid.UUID) -> dict[str, Any]:
    """The tenant's run's history (`RunHistory`), JSON-ready."""
    run = get(session, run_id, tenant_id=tenant_id)
    return run_history(run, RunEventRepository(session).history(run.id))


def get_with_result(
    session: Session, run_id: uuid.UUID, *, tenant_id: uuid.UUID
) -> tuple[Run, RunResult | None]:
    """The tenant's run and, once it succeeded, its result (its cache source's for a hit)."""
    owned = RunRepository(session).owned_with_result(run_id, tenant_id=tenant_id)
    run, result = found(owned, "run", run_id)
    return run, result if run.status is RunStatus.succeeded else None


def result_of(session: Session, run: Run) -> RunResult | None:
    if run.status is not RunStatus.succeeded:
        return None
    return ResultRepository(session).get(run.result_run_id)


@dataclass
class CaptureFile:
    link: str
    direction: str
    sha256: str
    codec: str
    stored: bytes  # the libpcap file, packed as `codec` says

    def data(self) -> bytes:
        """The libpcap file (CPU work: call it off the event loop)."""
        return stored_results.pcap(self.codec, self.stored)


def capture_file(
    session: Session,
    run_id: uuid.UUID,
    *,
    tenant_id: uuid.UUID,
    link: str,
    direction: str | None,
) -> CaptureFile:
    """A succeeded run's libpcap file of `link` (in `direction`; may be left out when the
    link was captured once). 404 naming the captures there are when it has no such one."""
    run = get(session, run_id, tenant_id=tenant_id)
    if run.status is not RunStatus.succeeded:
        raise Conflict(
            f"run {run_id} is {run.status.value}: its captures exist once it has succeeded",
            status_value=run.status.value,
        )
    results = ResultRepository(session)
    taken = results.captures(run.result_run_id)
    here = [way for (name, way, *_) in taken if name == link]
    if direction is None and len(here) == 1:
        direction = here[0]
    row = results.capture(run.result_run_id, link, direction) if direction else None
    if row is None:
        what = f"link {link!r}" + (f" in direction {direction}" if direction else "")
        if here and direction is None:
            msg = (
                f"run {run_id} captured link {link!r} more than once: give direction "
                f"({', '.join(here)})"
            )
        elif taken:
            listed = ", ".join(f"{name} {way}" for (name, way, *_) in taken)
            msg = f"run {run_id} has no capture of {what}; it has: {listed}"
        else:
            msg = (
                f"run {run_id} has no capture of {what}: its scenario asked for none "
                "(add `capture: [{link, direction, max_packets}]` to the scenario)"
            )
        raise NotFound(
            msg, captures=[{"link": name, "direction": way} for (name, way, *_) in taken]
        )
    return CaptureFile(row.link, row.direction, row.sha256, row.codec, row.data)


def cancel(session: Session, run_id: uuid.UUID, *, tenant_id: uuid.UUID) -> Run:
    """Queued: cancelled at once. Running: flagged, and the worker stops at its next
    heartbeat. Already cancelled: unchanged. Succeeded or failed: a conflict."""
    run = get(session, run_id, tenant_id=tenant_id)
    runs = RunRepository(session)
    # Conditional updates in this order cover a run that starts between the two.
    if runs.cancel_queued(run_id) or runs.request_cancel(run_id):
        session.commit()
    session.refresh(run)
    if run.status in (RunStatus.succeeded, RunStatus.failed):
        raise Conflict(
            f"run {run_id} has already {run.status.value}", status_value=run.status.value
        )
    return run
