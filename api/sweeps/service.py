"""Sweeps: create one run per point and seed (from the result cache where it can), fan
them out to the workers; read and cancel them. What is checked before a sweep exists is
``api.sweeps.plan``, what it would cost ``api.sweeps.pricing``; its state (status, time
left) is ``api.sweeps.state``, its documents ``api.sweeps.present``, its summary
``api.sweeps.summary``."""

from __future__ import annotations

import logging
import uuid
from functools import partial
from typing import Any

from sqlalchemy.orm import Session

from api.exceptions import found
from api.idempotency import create_once
from api.limits import reserve_runs
from api.pagination import Page
from api.sweeps import present
from api.sweeps.plan import Plan, fingerprint, plan, warnings
from api.sweeps.schemas import SweepCreate, SweepListItem, SweepOut
from settings import Settings
from store.models import Run, RunStatus, Sweep
from store.new_runs import add_runs, new_run
from store.sweeps import Progress, SweepHead, SweepRepository
from store.types import utcnow

log = logging.getLogger(__name__)

# --- creating ---------------------------------------------------------------------------


def create(
    session: Session,
    *,
    tenant_id: uuid.UUID,
    body: SweepCreate,
    settings: Settings,
    idempotency_key: str | None,
    study_preset: str | None = None,
) -> tuple[Sweep, bool, list[uuid.UUID], list[str]]:
    """The sweep, whether this request created it (False: an idempotent replay), the
    runs to send, committed and in the order to send them (``api.dispatch.enqueue``), and
    the points' validation warnings."""
    repo = SweepRepository(session)
    print_ = fingerprint(body, study_preset)
    made: list[Run] = []
    warned: list[str] = []

    def insert() -> Sweep:
        p = plan(
            session, tenant_id=tenant_id, body=body, settings=settings, study_preset=study_preset
        )
        sweep, runs = _insert(
            session,
            p,
            tenant_id=tenant_id,
            body=body,
            settings=settings,
            idempotency_key=idempotency_key,
            study_preset=study_preset,
            fingerprint=print_,
        )
        made.extend(runs)
        warned.extend(warnings(p))
        return sweep

    # The key's race may show at the sweep's insert or at its runs'; either way the first
    # request won and this one replays it.
    lookup = partial(repo.by_idempotency_key, tenant_id=tenant_id)
    sweep, created = create_once(
        session, key=idempotency_key, fingerprint=print_, lookup=lookup, insert=insert
    )
    if not created:
        return sweep, False, [], []
    # Replication-major order: every point gets its first result early, so a partial
    # summary covers the whole design before it gets precise.
    queued = sorted(
        (r for r in made if r.status is RunStatus.queued),
        key=lambda r: (r.replication or 0, r.point_index or 0),
    )
    return sweep, True, [r.id for r in queued], warned


def _insert(
    session: Session,
    p: Plan,
    *,
    tenant_id: uuid.UUID,
    body: SweepCreate,
    settings: Settings,
    idempotency_key: str | None,
    study_preset: str | None,
    fingerprint: str,
) -> tuple[Sweep, list[Run]]:
    """The sweep and its runs, added to the session once the tenant's quota has room for
    the runs to simulate."""
    queued = p.run_count - p.cached_count()
    reserve_runs(session, tenant_id=tenant_id, count=queued, settings=settings)
    sweep = SweepRepository(session).create(
        tenant_id=tenant_id,
        name=p.name[:200],
        preset=study_preset,
        spec=body.model_dump(mode="json"),
        points=_point_rows(p),
        seeds=p.seeds,
        baseline_index=p.baseline_index,
        run_count=p.run_count,
        cache=body.cache,
        idempotency_key=idempotency_key,
        request_fingerprint=fingerprint,
    )
    runs = _new_runs(p, tenant_id=tenant_id, sweep_id=sweep.id)
    add_runs(session, runs)
    return sweep, runs


def _point_rows(p: Plan) -> list[dict[str, Any]]:
    """The points as the sweep stores them, with their estimated size."""
    return [
        {
            "index": pt.index,
            "parameters": pt.parameters,
            # JSONB keeps an object's keys in its own order: this keeps the client's.
            "order": list(pt.parameters),
            "scenario_hash": pt.scenario.scenario_hash(),
            "is_baseline": pt.is_baseline,
            "est_events": int(est["events"]),
            "est_packets": int(est["packets"]),
        }
        for pt, est in zip(p.points, p.estimates, strict=True)
    ]


def _new_runs(p: Plan, *, tenant_id: uuid.UUID, sweep_id: uuid.UUID) -> list[Run]:
    """One run per point and seed, born finished where the cache holds its result."""
    now = utcnow()
    runs = []
    for pt in p.points:
        same = pt.scenario.scenario_hash() == p.base_hash
        for r, seed in enumerate(p.seeds):
            runs.append(
                new_run(
                    tenant_id=tenant_id,
                    scenario=pt.scenario,
                    seed=seed,
                    source=p.cached.get((pt.scenario.scenario_hash(), seed)),
                    now=now,
                    sweep_id=sweep_id,
                    point_index=pt.index,
                    replication=r,
                    # A point is the base preset or stored scenario only if unchanged.
                    scenario_id=p.scenario_id if same else None,
                    preset=p.preset if same else None,
                )
            )
    return runs


# --- reading ----------------------------------------------------------------------------


def get(session: Session, sweep_id: uuid.UUID, *, tenant_id: uuid.UUID) -> Sweep:
    return found(SweepRepository(session).owned(sweep_id, tenant_id=tenant_id), "sweep", sweep_id)


def poll(
    session: Session, sweep_id: uuid.UUID, *, tenant_id: uuid.UUID
) -> tuple[SweepHead, Progress]:
    """What a poll's version is computed from, in one statement (SweepRepository.poll)."""
    return found(SweepRepository(session).poll(sweep_id, tenant_id=tenant_id), "sweep", sweep_id)


def list_page(
    session: Session, *, tenant_id: uuid.UUID, cursor: str | None, limit: int, settings: Settings
) -> Page[SweepListItem]:
    """The tenant's sweeps, newest first."""
    result = SweepRepository(session).list(tenant_id=tenant_id, cursor=cursor, limit=limit)
    items = [present.item(session, s, settings) for s in result.items]
    return Page[SweepListItem](items=items, next_cursor=result.next_cursor)


def run_page(
    session: Session,
    sweep_id: uuid.UUID,
    *,
    tenant_id: uuid.UUID,
    cursor: str | None,
    limit: int,
    status: RunStatus | None,
    point_index: int | None,
) -> dict[str, Any]:
    """A page of the sweep's runs in point order, then replication, JSON-ready."""
    sweep = get(session, sweep_id, tenant_id=tenant_id)
    result = SweepRepository(session).run_page(
        sweep.id, cursor=cursor, limit=limit, status=status, point_index=point_index
    )
    return {
        "items": [present.sweep_run(r) for r in result.items],
        "next_cursor": result.next_cursor,
    }


def cancel(
    session: Session, sweep_id: uuid.UUID, *, tenant_id: uuid.UUID, settings: Settings
) -> SweepOut:
    """Queued runs are cancelled at once, running ones stop at their next heartbeat.
    Idempotent: a finished sweep is left as it is."""
    sweep = get(session, sweep_id, tenant_id=tenant_id)
    SweepRepository(session).cancel(sweep.id)
    session.commit()
    session.refresh(sweep)
    return present.detail(session, sweep, settings)
