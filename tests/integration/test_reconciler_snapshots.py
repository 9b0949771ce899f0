"""A run the reconciler fails keeps no series (issue 31): the snapshots its worker wrote
while it ran are deleted in the transaction that fails it, on Postgres and on the embedded
SQLite default alike, and nothing else of it or of another run goes with them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from servicekit import REDIS_URL
from sqlalchemy import func, select, update

from api.reconciler import reconcile_once
from engine.presets import load_preset
from engine.result import Series
from messaging import make_celery
from settings import Settings
from store.db import make_engine, make_sessionmaker, session_scope
from store.models import Run, RunEvent, RunSeries, RunStatus
from store.new_runs import add_runs, new_run
from store.results import ResultRepository, pack_series
from store.runs import RunRepository
from store.tenants import TenantRepository
from store.types import utcnow

pytestmark = pytest.mark.integration

SNAPSHOT = {
    "flow.backup.cwnd": Series(unit="B", t=[0.0, 0.5, 1.0], v=[1460.0, 2920.0, 5840.0]),
    "link.access1.a>b.queue_packets": Series(unit="pkt", t=[0.0, 1.0], v=[0.0, 3.0]),
}


@pytest.fixture
def settings(migrated: dict[str, Any]) -> Settings:
    """Settings on a migrated database of either kind, with a retry budget of one start: a
    silent run is failed, not taken back. No message is sent (no run is queued)."""
    return Settings(_env_file=None, max_attempts=1, broker_url=REDIS_URL, **migrated)


@pytest.fixture
def sessions(settings: Settings) -> Iterator[Any]:
    engine = make_engine(settings)
    yield make_sessionmaker(engine)
    engine.dispose()


def _running(sessions: Any, tenant: str) -> uuid.UUID:
    """A run taken by a worker, with a snapshot of its series stored."""
    scenario = load_preset("riverbed-t1-8k")
    with session_scope(sessions) as session:
        tenant_id = TenantRepository(session).get_or_create(tenant).id
        run = new_run(tenant_id=tenant_id, scenario=scenario, seed=7)
        add_runs(session, [run])
        run_id = run.id
    with session_scope(sessions) as session:
        runs = RunRepository(session)
        task = f"task-{run_id}"
        assert runs.claim(run_id, task_id=task, worker="w", lease=60, max_attempts=3)
        assert ResultRepository(session).save_partial(
            run_id, task_id=task, series=pack_series(SNAPSHOT)
        )
    return run_id


def _series_rows(sessions: Any, run_id: uuid.UUID) -> int:
    with session_scope(sessions) as session:
        return int(
            session.scalar(
                select(func.count()).select_from(RunSeries).where(RunSeries.run_id == run_id)
            )
        )


def test_a_run_the_reconciler_fails_keeps_no_snapshot(settings: Settings, sessions: Any) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    doomed = _running(sessions, tenant)
    alive = _running(sessions, tenant)
    assert _series_rows(sessions, doomed) == _series_rows(sessions, alive) == len(SNAPSHOT)
    with session_scope(sessions) as session:
        # Its worker went quiet an hour ago; the other's beat just now.
        session.execute(
            update(Run).where(Run.id == doomed).values(heartbeat_at=utcnow() - timedelta(hours=1))
        )
        before = session.get(Run, doomed)
        assert before is not None
        scenario, seed, started = before.scenario, before.seed, before.started_at

    done = reconcile_once(sessions, make_celery(settings), settings)

    assert (done.failed, done.requeued, done.sent) == (1, 0, 0)
    assert _series_rows(sessions, doomed) == 0  # nothing left that nothing shows
    assert _series_rows(sessions, alive) == len(SNAPSHOT)  # the running one's untouched
    with session_scope(sessions) as session:
        run = session.get(Run, doomed)
        assert run is not None and run.status is RunStatus.failed
        assert run.error is not None and run.error["type"] == "RetryBudgetExceeded"
        assert (run.scenario, run.seed, run.started_at) == (scenario, seed, started)
        events = session.scalars(
            select(RunEvent.event).where(RunEvent.run_id == doomed).order_by(RunEvent.id)
        ).all()
        assert list(events) == ["queued", "started", "failed"]
        other = session.get(Run, alive)
        assert other is not None and other.status is RunStatus.running


def test_silent_runs_requeues_are_counted_in_one_statement(
    settings: Settings, sessions: Any
) -> None:
    """Two silent runs, one sent again twice before (two starts allowed: its two requeues
    reach the budget, so it is failed, saying so), the other never (taken back). Their requeues are read in one statement, not one per run: a pass
    over a big sweep's hundred stale runs made a hundred."""
    from sqlalchemy import event

    from store.run_events import EventKind, RunEventRepository

    settings = settings.model_copy(update={"max_attempts": 2})
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    again, fresh = _running(sessions, tenant), _running(sessions, tenant)
    with session_scope(sessions) as session:
        for _ in range(2):
            RunEventRepository(session).add(again, EventKind.requeued)
        session.execute(
            update(Run)
            .where(Run.id.in_([again, fresh]))
            .values(heartbeat_at=utcnow() - timedelta(hours=1))
        )
    with session_scope(sessions) as session:
        counts = RunEventRepository(session).counts([again, fresh], EventKind.requeued)
    assert counts == {again: 2}

    statements: list[str] = []
    engine = sessions.kw["bind"]
    listen = lambda *args: statements.append(str(args[2]))  # noqa: E731 (conn, cursor, sql)
    event.listen(engine, "before_cursor_execute", listen)
    try:
        done = reconcile_once(sessions, make_celery(settings), settings)
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    assert (done.failed, done.requeued) == (1, 1)
    counted = [s for s in statements if "count(" in s.lower() and "run_events" in s]
    assert len(counted) == 1, counted
    with session_scope(sessions) as session:
        failed, taken = session.get(Run, again), session.get(Run, fresh)
        assert failed is not None and failed.status is RunStatus.failed
        assert failed.error is not None and "sent again 2 times" in failed.error["message"]
        assert taken is not None and taken.status is RunStatus.queued
