"""Sweeps and the runs they own: creation in bulk, the cache look-up for many runs at once,
progress counts, run pages in point order, bulk cancel."""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, true, update
from sqlalchemy.orm import defer

from store.models import Run, RunResult, RunStatus, Sweep
from store.repository import InvalidCursor, Page, Repository
from store.run_events import EventKind, RunEventRepository
from store.types import utcnow

#: Rows per IN (...) list: well under every driver's parameter limit.
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class Progress:
    """What a sweep's status and its time-left estimate are computed from."""

    counts: dict[RunStatus, int]
    cache_hits: int
    running_progress: float  # sum of the running runs' progress fractions
    simulated_done: int  # runs finished by a worker (not served from the cache)
    first_started_at: datetime | None
    last_finished_at: datetime | None


def _encode(point: int, replication: int) -> str:
    return base64.urlsafe_b64encode(f"{point}.{replication}".encode()).decode().rstrip("=")


def _decode(cursor: str) -> tuple[int, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        point, replication = raw.split(".")
        return int(point), int(replication)
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise InvalidCursor(cursor) from exc


class SweepRepository(Repository[Sweep]):
    model = Sweep

    def create(self, **fields: Any) -> Sweep:
        return self.insert(Sweep(**fields))

    def by_idempotency_key(self, key: str, *, tenant_id: uuid.UUID) -> Sweep | None:
        stmt = select(Sweep).where(Sweep.tenant_id == tenant_id, Sweep.idempotency_key == key)
        return self.session.scalars(stmt).first()

    def list(self, *, tenant_id: uuid.UUID, cursor: str | None, limit: int) -> Page[Sweep]:
        stmt = self.select().where(Sweep.tenant_id == tenant_id)
        return self.page(stmt, cursor=cursor, limit=limit)

    def add_runs(self, runs: Sequence[Run]) -> None:
        self.session.add_all(runs)
        self.session.flush()
        # Each run's history starts as a single run's does, in the same transaction.
        events = RunEventRepository(self.session)
        events.add_many([r.id for r in runs if not r.cache_hit], EventKind.queued)
        for r in runs:
            if r.cache_hit:
                events.add(r.id, EventKind.cache_hit, source_run_id=str(r.source_run_id))

    def cached_sources(
        self,
        keys: Iterable[tuple[str, int]],
        *,
        engine_version: str,
        tenant_id: uuid.UUID,
    ) -> dict[tuple[str, int], uuid.UUID]:
        """For each (scenario_hash, seed) that has a result, the newest run owning it:
        ``RunRepository.find_cached`` for many keys in a few queries."""
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
            for run_id, scenario_hash, seed in self.session.execute(stmt):
                key = (scenario_hash, seed)
                # uuid7 ids sort by creation: keep the newest, as find_cached does.
                if key in wanted and (key not in found or run_id > found[key]):
                    found[key] = run_id
        return found

    # -- reading a sweep's runs -------------------------------------------------------

    def runs(self, sweep_id: uuid.UUID) -> Sequence[Run]:
        stmt = (
            select(Run)
            .options(defer(Run.scenario))  # the sweep's points hold what is needed of it
            .where(Run.sweep_id == sweep_id)
            .order_by(Run.point_index, Run.replication)
        )
        return self.session.scalars(stmt).all()

    def run_page(
        self,
        sweep_id: uuid.UUID,
        *,
        cursor: str | None,
        limit: int,
        status: RunStatus | None = None,
        point_index: int | None = None,
    ) -> Page[Run]:
        """Runs in point order, then replication; the cursor is the last (point, replication)."""
        stmt = select(Run).options(defer(Run.scenario)).where(Run.sweep_id == sweep_id)
        if status is not None:
            stmt = stmt.where(Run.status == status)
        if point_index is not None:
            stmt = stmt.where(Run.point_index == point_index)
        if cursor is not None:
            point, replication = _decode(cursor)
            stmt = stmt.where(
                or_(
                    Run.point_index > point,
                    and_(Run.point_index == point, Run.replication > replication),
                )
            )
        stmt = stmt.order_by(Run.point_index, Run.replication).limit(limit + 1)
        rows = self.session.scalars(stmt).all()
        items = rows[:limit]
        more = len(rows) > limit
        last = items[-1] if items else None
        next_cursor = (
            _encode(last.point_index or 0, last.replication or 0) if more and last else None
        )
        return Page(items=items, next_cursor=next_cursor)

    def results(self, run_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, RunResult]:
        ids = sorted(set(run_ids))
        found: dict[uuid.UUID, RunResult] = {}
        for i in range(0, len(ids), _CHUNK):
            stmt = select(RunResult).where(RunResult.run_id.in_(ids[i : i + _CHUNK]))
            found.update((r.run_id, r) for r in self.session.scalars(stmt))
        return found

    def progress(self, sweep_id: uuid.UUID) -> Progress:
        counts = {s: 0 for s in RunStatus}
        stmt = (
            select(Run.status, Run.cache_hit, func.count(), func.sum(Run.progress))
            .where(Run.sweep_id == sweep_id)
            .group_by(Run.status, Run.cache_hit)
        )
        cache_hits = simulated_done = 0
        running_progress = 0.0
        for status, cache_hit, n, progress_sum in self.session.execute(stmt):
            counts[status] += n
            if cache_hit:
                cache_hits += n
            elif status.finished:
                simulated_done += n
            if status is RunStatus.running:
                running_progress += float(progress_sum or 0.0)
        first, last = self.session.execute(
            select(func.min(Run.started_at), func.max(Run.finished_at)).where(
                Run.sweep_id == sweep_id, Run.cache_hit.is_(False)
            )
        ).one()
        return Progress(counts, cache_hits, running_progress, simulated_done, first, last)

    # -- transitions of many runs ------------------------------------------------------

    def cancel(self, sweep_id: uuid.UUID) -> tuple[int, int]:
        """Cancel the queued runs at once and flag the running ones for their worker.
        Returns (cancelled, flagged). In this order, a run that starts between the two
        statements is still flagged."""
        self.session.execute(
            update(Sweep)
            .where(Sweep.id == sweep_id)
            .values(cancel_requested=True)
            .execution_options(synchronize_session=False)
        )
        cancelled = self.session.scalars(
            update(Run)
            .where(Run.sweep_id == sweep_id, Run.status == RunStatus.queued)
            .values(status=RunStatus.cancelled, cancel_requested=True, finished_at=utcnow())
            .returning(Run.id)
            .execution_options(synchronize_session=False)
        ).all()
        flagged = self.session.scalars(
            update(Run)
            .where(
                Run.sweep_id == sweep_id,
                Run.status == RunStatus.running,
                Run.cancel_requested.is_(False),
            )
            .values(cancel_requested=True)
            .returning(Run.id)
            .execution_options(synchronize_session=False)
        ).all()
        events = RunEventRepository(self.session)
        events.add_many(cancelled, EventKind.cancelled, reason="sweep cancelled while queued")
        events.add_many(flagged, EventKind.cancel_requested, reason="sweep cancelled")
        return len(cancelled), len(flagged)
