"""A polled sweep's status by its light read (store.sweeps.STATE_PROBE, issue 31): what a
held document's poll reads instead of its runs' counts. Through each database's ``Db`` (on
PostgreSQL the API process's own connection), at every stage of a sweep's life it gives the
status its counts give, or says it cannot tell once no run is left to go; and a connection
that dies costs one poll its light read, not the next one's."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import Boolean, text, update

from api.db import Db, OwnConnection, open_db
from api.sweeps import state
from engine.presets import load_preset
from settings import Settings
from store.db import make_engine, make_sessionmaker, session_scope
from store.models import DEFAULT_TENANT_ID, Run, RunStatus
from store.new_runs import add_runs, new_run
from store.sweeps import STATE_PROBE, SweepRepository

pytestmark = pytest.mark.integration


@pytest.fixture
def settings(migrated: dict[str, Any]) -> Settings:
    return Settings(_env_file=None, **migrated)


@pytest.fixture
def sessions(settings: Settings) -> Iterator[Any]:
    engine = make_engine(settings)
    yield make_sessionmaker(engine)
    engine.dispose()


def _sweep(sessions: Any, runs: int) -> tuple[uuid.UUID, list[uuid.UUID]]:
    scenario = load_preset("riverbed-t1-8k")
    with session_scope(sessions) as session:
        sweep = SweepRepository(session).create(
            tenant_id=DEFAULT_TENANT_ID,
            name="probe",
            spec={},
            points=[{}],
            seeds=list(range(runs)),
            run_count=runs,
        )
        made = [
            new_run(
                tenant_id=DEFAULT_TENANT_ID,
                scenario=scenario,
                seed=seed,
                sweep_id=sweep.id,
                point_index=0,
                replication=seed,
            )
            for seed in range(runs)
        ]
        add_runs(session, made)
        return sweep.id, [r.id for r in made]


def _set(sessions: Any, run_ids: list[uuid.UUID], status: RunStatus) -> None:
    with session_scope(sessions) as session:
        session.execute(update(Run).where(Run.id.in_(run_ids)).values(status=status))


def _by_counts(sessions: Any, sweep_id: uuid.UUID) -> str:
    with session_scope(sessions) as session:
        head, progress = SweepRepository(session).poll(sweep_id, tenant_id=DEFAULT_TENANT_ID)
        return state.status_of(progress, head.run_count, cancel_requested=head.cancel_requested)


def _probe(db: Db, sweep_id: uuid.UUID, tenant_id: uuid.UUID = DEFAULT_TENANT_ID) -> Any:
    return db.first(STATE_PROBE, {"sweep_id": sweep_id, "tenant_id": tenant_id})


@contextlib.asynccontextmanager
async def _opened(settings: Settings) -> AsyncIterator[Db]:
    """The API process's Db for `settings`, closed (and its engine disposed) after."""
    db, engine = open_db(settings)
    try:
        yield db
    finally:
        await db.close()
        if hasattr(engine, "sync_engine"):
            await engine.dispose()
        else:
            engine.dispose()


def _own_sweep(settings: Settings, sessions: Any) -> uuid.UUID:
    """A 2-run sweep, both queued, for the tests of the own connection (PostgreSQL's
    alone: SQLite reads through the pool)."""
    if settings.is_sqlite:
        pytest.skip("SQLite reads through the pool: there is no connection of its own")
    return _sweep(sessions, 2)[0]


#: The probe of _own_sweep's sweep: 2 runs, not cancelled, runs to go, none started.
OWN_SWEEP = (2, False, True, False)


def test_the_light_read_gives_the_status_the_counts_give(settings: Settings, sessions: Any) -> None:
    sweep_id, runs = _sweep(sessions, 6)

    async def main() -> None:
        async with _opened(settings) as db:
            assert isinstance(db._own, OwnConnection) == (not settings.is_sqlite)
            stages = [
                ([], None, "queued"),  # nothing started
                (runs[:1], RunStatus.cancelled, "running"),  # one done before any ran
                (runs[1:3], RunStatus.running, "running"),
                (runs[1:5], RunStatus.succeeded, "running"),  # one still queued
                (runs[5:], RunStatus.failed, None),  # none to go: the counts decide
            ]
            for changed, status, expected in stages:
                if status is not None:
                    _set(sessions, changed, status)
                row = await _probe(db, sweep_id)
                assert row is not None and row[0] == 6 and row[1] is False
                assert state.status_while_active(row[2], row[3]) == expected
                if expected is not None:
                    assert _by_counts(sessions, sweep_id) == expected
            assert _by_counts(sessions, sweep_id) == "partial"
            # Another tenant's sweep, or none: no row, never another's state.
            assert await _probe(db, sweep_id, uuid.uuid4()) is None
            assert await _probe(db, uuid.uuid4()) is None

    asyncio.run(main())


def test_a_dead_own_connection_costs_one_light_read(settings: Settings, sessions: Any) -> None:
    """The server ends the API's own connection (a restart, an administrator): the next
    light read answers None (the poll reads the usual way) and the one after reconnects."""
    sweep_id = _own_sweep(settings, sessions)

    async def main() -> None:
        async with _opened(settings) as db:
            own = db._own
            assert isinstance(own, OwnConnection)
            own.RETRY_AFTER = 0.0
            assert await _probe(db, sweep_id) == OWN_SWEEP
            pid = own._conn.info.backend_pid  # type: ignore[union-attr]
            url = settings.sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://")
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            assert await _probe(db, sweep_id) is None
            assert await _probe(db, sweep_id) == OWN_SWEEP
            assert own._conn is not None and own._conn.info.backend_pid != pid

    asyncio.run(main())


def test_a_light_read_stopped_midway_leaves_no_broken_connection(
    settings: Settings, sessions: Any
) -> None:
    """A read cancelled while the server works on it (its request's task stopped): psycopg
    cancels the statement on the server and leaves the connection usable, so the next
    light read answers, not a None for the pool to stand in."""
    sweep_id = _own_sweep(settings, sessions)
    slow = text("SELECT pg_sleep(5) IS NULL AS slept").columns(slept=Boolean)

    async def main() -> None:
        async with _opened(settings) as db:
            assert await _probe(db, sweep_id) == OWN_SWEEP
            reading = asyncio.ensure_future(db.first(slow, {}))
            await asyncio.sleep(0.3)
            reading.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reading
            assert await _probe(db, sweep_id) == OWN_SWEEP

    asyncio.run(main())


def test_a_read_that_waits_too_long_closes_nothing_and_a_closed_one_stays_closed(
    settings: Settings, sessions: Any
) -> None:
    """A light read that waits longer than the timeout for the one before it answers None
    (its poll reads through the pool) and leaves the connection the other is using; once
    the process has closed its Db, no read opens the connection again."""
    sweep_id = _own_sweep(settings, sessions)

    async def main() -> None:
        async with _opened(settings) as db:
            own = db._own
            assert isinstance(own, OwnConnection)
            assert await _probe(db, sweep_id) == OWN_SWEEP
            pid = own._conn.info.backend_pid  # type: ignore[union-attr]
            own._timeout = 0.2
            await own._lock.acquire()  # a read under way, slow
            try:
                assert await _probe(db, sweep_id) is None
            finally:
                own._lock.release()
            assert await _probe(db, sweep_id) == OWN_SWEEP
            assert own._conn is not None and own._conn.info.backend_pid == pid
            await db.close()
            assert await _probe(db, sweep_id) is None and own._conn is None

    asyncio.run(main())
