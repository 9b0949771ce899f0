"""New runs: a scenario and a seed made into a run row, served from the result cache when a
result for the same (scenario hash, seed, engine version) is stored, each with the first
event of its history.

One home for what a single run (``api.runs``), a sweep's points (``api.sweeps``) and a
workflow's candidates (``worker.workflows``) all create: the API and the worker ask here
rather than each building the cache-hit fields and the history of a run born finished.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select, true
from sqlalchemy.orm import Session

from engine import ENGINE_VERSION, Scenario
from store.models import Run, RunStatus
from store.run_events import EventKind, RunEventRepository
from store.types import utcnow

#: Rows per IN (...) list: well under every driver's parameter limit.
_CHUNK = 500


def scenario_document(scenario: Scenario) -> dict[str, Any]:
    """What a run stores and a worker re-validates: the whole scenario in SI numbers."""
    return scenario.model_dump(mode="json")


def cache_hit(source_run_id: uuid.UUID, now: datetime | None = None) -> dict[str, Any]:
    """The fields of a run born finished, serving the result `source_run_id` owns."""
    now = now or utcnow()
    return dict(
        status=RunStatus.succeeded,
        cache_hit=True,
        source_run_id=source_run_id,
        progress=1.0,
        started_at=now,
        finished_at=now,
    )


def new_run(
    *,
    tenant_id: uuid.UUID,
    scenario: Scenario,
    seed: int,
    source: uuid.UUID | None = None,
    now: datetime | None = None,
    **fields: Any,
) -> Run:
    """A run of `scenario` with `seed` (not added to the session): queued, or a cache hit of
    `source`. `fields`: the rest of the row (sweep or point, scenario_id, preset, ...)."""
    hit = cache_hit(source, now) if source is not None else {}
    return Run(
        tenant_id=tenant_id,
        scenario_name=scenario.name,
        scenario_hash=scenario.scenario_hash(),
        scenario=scenario_document(scenario),
        seed=seed,
        engine_version=ENGINE_VERSION,
        **hit,
        **fields,
    )


def add_runs(session: Session, runs: Sequence[Run]) -> None:
    """Insert new runs, each with the first row of its history, in the caller's transaction."""
    session.add_all(runs)
    session.flush()
    events = RunEventRepository(session)
    events.add_many([r.id for r in runs if not r.cache_hit], EventKind.queued)
    for r in runs:
        if r.cache_hit:
            events.add(r.id, EventKind.cache_hit, source_run_id=str(r.source_run_id))


def cached_sources(
    session: Session,
    keys: Iterable[tuple[str, int]],
    *,
    engine_version: str,
    tenant_id: uuid.UUID,
) -> dict[tuple[str, int], uuid.UUID]:
    """For each (scenario_hash, seed) that has a result, the newest run owning it:
    ``RunRepository.find_cached`` for many keys in a few queries. The cache is per tenant
    (``api.runs.service.create`` says why)."""
    wanted = set(keys)
    hashes = sorted({h for h, _ in wanted})
    seeds = sorted({s for _, s in wanted})
    found: dict[tuple[str, int], uuid.UUID] = {}
    for i in range(0, len(hashes), _CHUNK):
        stmt = select(Run.id, Run.scenario_hash, Run.seed).where(
            Run.tenant_id == tenant_id,
            Run.scenario_hash.in_(hashes[i : i + _CHUNK]),
            Run.seed.in_(seeds) if len(seeds) <= _CHUNK else true(),
            Run.engine_version == engine_version,
            Run.status == RunStatus.succeeded,
            Run.source_run_id.is_(None),
        )
        for run_id, scenario_hash, seed in session.execute(stmt):
            key = (scenario_hash, seed)
            # uuid7 ids sort by creation: keep the newest, as find_cached does.
            if key in wanted and (key not in found or run_id > found[key]):
                found[key] = run_id
    return found
