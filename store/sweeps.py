"""Sweeps and the runs they own: progress counts, run pages in point order, bulk cancel.
(Their runs are made as every run is: ``store.new_runs``.)"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Boolean,
    Integer,
    Row,
    Select,
    TextualSelect,
    Uuid,
    and_,
    bindparam,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.orm import Session, defer

from store import run_groups
from store.models import Run, RunResult, RunStatus, Sweep
from store.repository import InvalidCursor, Page, Repository
from store.run_groups import Progress


@dataclass(frozen=True, slots=True)
class SweepHead:
    """What a sweep's state reads of the sweep itself (api/sweeps/state.py)."""

    run_count: int
    cancel_requested: bool


#: Rows per IN (...) list: well under every driver's parameter limit.
_CHUNK = 500


def _poll_statement(session: Session) -> Select[Any]:
    """SweepRepository.poll's statement, built once per dialect: one statement object
    reused keeps SQLAlchemy's cache key for it, which building it anew recomputes on every
    call (a third of the poll's cost)."""
    return (
        select(Sweep.run_count, Sweep.cancel_requested, *run_groups.columns(session))
        .select_from(Sweep)
        .outerjoin(Run, Run.sweep_id == Sweep.id)
        .where(Sweep.id == bindparam("sweep_id"), Sweep.tenant_id == bindparam("tenant_id"))
        .group_by(Sweep.run_count, Sweep.cancel_requested, Run.status, Run.cache_hit)
    )


_POLLS: dict[str, Select[Any]] = {}


def _progress_statement(session: Session) -> Select[Any]:
    """SweepRepository.progress's statement, built once per dialect as the poll's is: each
    rebuild of a running sweep's polled documents reads it (a dashboard's five views of
    one sweep, about once a second each), and building it anew cost SQLAlchemy its cache
    key every time."""
    return (
        select(*run_groups.columns(session))
        .where(Run.sweep_id == bindparam("sweep_id"))
        .group_by(Run.status, Run.cache_hit)
    )


_PROGRESSES: dict[str, Select[Any]] = {}


def _state_probe() -> TextualSelect:
    def listed(statuses: Iterable[RunStatus]) -> str:
        return ", ".join(f"'{s.value}'" for s in statuses)

    started = [s for s in RunStatus if s is not RunStatus.queued]
    return (
        text(
            "SELECT s.run_count, s.cancel_requested,"
            " EXISTS (SELECT 1 FROM runs r WHERE r.sweep_id = s.id AND r.status IN"
            f" ({listed([RunStatus.queued, RunStatus.running])})) AS active,"
            " EXISTS (SELECT 1 FROM runs r WHERE r.sweep_id = s.id AND r.status IN"
            f" ({listed(started)})) AS started"
            " FROM sweeps s WHERE s.id = :sweep_id AND s.tenant_id = :tenant_id"
        )
        .bindparams(bindparam("sweep_id", type_=Uuid), bindparam("tenant_id", type_=Uuid))
        .columns(run_count=Integer, cancel_requested=Boolean, active=Boolean, started=Boolean)
    )


#: Whether a sweep still has runs to go, and whether any has started, in one short read:
#: (run_count, cancel_requested, any queued or running, any not queued), no row if the
#: tenant has no such sweep. Two probes of ix_runs_sweep_id_status, each stopping at its
#: first match, where counting reads every run's row: with 500 runs, 0.05 ms of the
#: server's CPU against 0.47 ms for the counts (SweepRepository.poll). While runs go, that
#: is all a sweep's status depends on (api/sweeps/state.status_while_active); a polled page
#: held as built reads this alone.
STATE_PROBE = _state_probe()


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

    def poll(self, id: uuid.UUID, *, tenant_id: uuid.UUID) -> tuple[SweepHead, Progress] | None:
        """What a poll's version is made of (the sweep's run count and cancel flag, its
        runs' counts), in one statement and without loading a Sweep: a dashboard polls
        this every second per panel, and three ORM statements cost the API ~2 ms of CPU
        each time (bench/dashboard_load.py). None: no such sweep of the tenant's."""
        dialect = self.session.get_bind().dialect.name
        stmt = _POLLS.get(dialect)
        if stmt is None:
            stmt = _POLLS[dialect] = _poll_statement(self.session)
        params = {"sweep_id": id, "tenant_id": tenant_id}
        rows = self.session.connection().execute(stmt, params).all()
        if not rows:
            return None
        head = SweepHead(run_count=rows[0][0], cancel_requested=rows[0][1])
        return head, run_groups.fold(row[2:] for row in rows)

    def create(self, **fields: Any) -> Sweep:
        return self.insert(Sweep(**fields))

    def by_idempotency_key(self, key: str, *, tenant_id: uuid.UUID) -> Sweep | None:
        stmt = select(Sweep).where(Sweep.tenant_id == tenant_id, Sweep.idempotency_key == key)
        return self.session.scalars(stmt).first()

    def list(self, *, tenant_id: uuid.UUID, cursor: str | None, limit: int) -> Page[Sweep]:
        stmt = self.select().where(Sweep.tenant_id == tenant_id)
        return self.page(stmt, cursor=cursor, limit=limit)

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

    def outline(
        self, sweep_id: uuid.UUID
    ) -> Sequence[Row[uuid.UUID, int | None, RunStatus, uuid.UUID | None, int]]:
        """The sweep's runs in point order, then replication, as the columns a summary
        reads (id, point_index, status, source_run_id, seed): not Run
        objects, whose loading was most of a running sweep's summary rebuild."""
        stmt = (
            select(Run.id, Run.point_index, Run.status, Run.source_run_id, Run.seed)
            .where(Run.sweep_id == sweep_id)
            .order_by(Run.point_index, Run.replication)
        )
        return self.session.execute(stmt).all()

    def figures(
        self, run_ids: Iterable[uuid.UUID]
    ) -> dict[uuid.UUID, tuple[dict[str, Any], dict[str, Any]]]:
        """Each result's flows and diagnosis, by the run that owns the result: the two
        documents a comparison reads, without the links, PVCs and the rest."""
        ids = sorted(set(run_ids))
        found: dict[uuid.UUID, tuple[dict[str, Any], dict[str, Any]]] = {}
        for i in range(0, len(ids), _CHUNK):
            stmt = select(RunResult.run_id, RunResult.flows, RunResult.diagnosis).where(
                RunResult.run_id.in_(ids[i : i + _CHUNK])
            )
            found.update((r.run_id, (r.flows, r.diagnosis)) for r in self.session.execute(stmt))
        return found

    def results(self, run_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, RunResult]:
        ids = sorted(set(run_ids))
        found: dict[uuid.UUID, RunResult] = {}
        for i in range(0, len(ids), _CHUNK):
            stmt = select(RunResult).where(RunResult.run_id.in_(ids[i : i + _CHUNK]))
            found.update((r.run_id, r) for r in self.session.scalars(stmt))
        return found

    def progress(self, sweep_id: uuid.UUID) -> Progress:
        """The counts of the sweep's runs (``run_groups.progress`` for one sweep)."""
        dialect = self.session.get_bind().dialect.name
        stmt = _PROGRESSES.get(dialect)
        if stmt is None:
            stmt = _PROGRESSES[dialect] = _progress_statement(self.session)
        rows = self.session.connection().execute(stmt, {"sweep_id": sweep_id})
        return run_groups.fold(rows)

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
        return run_groups.cancel(self.session, Run.sweep_id == sweep_id, what="sweep")
